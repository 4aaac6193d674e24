package cli

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
)

// TestHostileDirectoryIsPartial: a directory holding a FIFO and a dangling symlink beside a
// good audit log loads the log, skips the FIFO (without hanging on it) and exits partial,
// naming the entry it could not read.
func TestHostileDirectoryIsPartial(t *testing.T) {
	dir := t.TempDir()
	data, err := os.ReadFile("../ingest/testdata/audit-v1.good.log")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "audit.log"), data, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mkfifo(filepath.Join(dir, "pipe"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("gone", filepath.Join(dir, "dangling")); err != nil {
		t.Fatal(err)
	}
	db := filepath.Join(t.TempDir(), "k.duckdb")
	r := runCLI(t, "ingest", "--db", db, dir)
	if r.code != ExitPartial || !strings.Contains(r.stderr, filepath.Join(dir, "dangling")) {
		t.Fatalf("exit %d, stderr %q; want %d naming the dangling symlink", r.code, r.stderr, ExitPartial)
	}
	if !strings.Contains(r.stderr, "pipe: skipped: not a regular file") || !strings.Contains(r.stderr, "audit.log: audit, 6 rows loaded") {
		t.Errorf("stderr %q does not show the log loaded and the FIFO skipped", r.stderr)
	}
}

// TestMarkdownReportEscapesEvidence: HTML in the evidence (here every event's user agent) is
// written into the Markdown report as text, in the tables and around them, and does not break
// the evidence table's rows.
func TestMarkdownReportEscapesEvidence(t *testing.T) {
	data, err := os.ReadFile("../samples/election-lock-churn/audit.log")
	if err != nil {
		t.Fatal(err)
	}
	const payload = `<img src=x onerror=alert(1)></script><script>alert(2)</script>|&`
	agent := regexp.MustCompile(`"userAgent":"(?:[^"\\]|\\.)*"`)
	hostile := agent.ReplaceAll(data, []byte(`"userAgent":"\u003cimg src=x onerror=alert(1)\u003e\u003c/script\u003e<script>alert(2)</script>|&"`))
	dir := t.TempDir()
	log := filepath.Join(dir, "audit.log")
	if err := os.WriteFile(log, hostile, 0o644); err != nil {
		t.Fatal(err)
	}
	db := filepath.Join(dir, "k.duckdb")
	if r := runCLI(t, "ingest", "--db", db, log); r.code != ExitOK {
		t.Fatalf("ingest: exit %d, %s", r.code, r.stderr)
	}
	r := runCLI(t, "analyze", "--db", db, "-o", "markdown")
	if r.code != ExitOK && r.code != ExitFindings {
		t.Fatalf("analyze: exit %d, %s", r.code, r.stderr)
	}
	escaped := `&lt;img src=x onerror=alert(1)&gt;&lt;/script&gt;&lt;script&gt;alert(2)&lt;/script&gt;\|&amp;`
	if strings.Contains(r.stdout, "<img") || strings.Contains(r.stdout, "<script") || strings.Contains(r.stdout, "</script") {
		t.Errorf("the report holds the user agent's HTML:\n%s", r.stdout)
	}
	if !strings.Contains(r.stdout, escaped) {
		t.Errorf("the report does not hold the user agent %q escaped as %q", payload, escaped)
	}
	cells := func(row string) int { return strings.Count(strings.ReplaceAll(row, `\|`, ""), "|") }
	lines := strings.Split(r.stdout, "\n")
	width, rows := 0, 0
	for i, line := range lines {
		switch {
		case i+1 < len(lines) && (strings.HasPrefix(lines[i+1], "| ---") || strings.HasPrefix(lines[i+1], "|---")):
			width = cells(line)
		case strings.Contains(line, "onerror"):
			rows++
			if !strings.HasPrefix(line, "| ") || cells(line) != width {
				t.Errorf("a row with the user agent has %d cells, its header %d: %s", cells(line), width, line)
			}
		}
	}
	if rows == 0 {
		t.Error("no evidence row shows the user agent")
	}
}
