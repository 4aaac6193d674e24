package cli

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestFullDiskIsReportedOnce: when the database can no longer be written (a full disk; here a
// file size limit stands in for one), the file whose commit failed is named once, the inputs
// after it are not tried but counted in one line, and the files loaded before it are kept.
func TestFullDiskIsReportedOnce(t *testing.T) {
	dir := t.TempDir()
	logs := filepath.Join(dir, "logs")
	os.MkdirAll(logs, 0o755)
	os.WriteFile(filepath.Join(logs, "a.log"), readAll(t, "../ingest/testdata/audit-v1.good.log"), 0o644)
	for _, name := range []string{"b.log", "c.log", "d.log"} {
		os.WriteFile(filepath.Join(logs, name), generated(t, 6000), 0o644) // the same events: only b's commit writes much
	}
	db := filepath.Join(dir, "k.duckdb")

	cmd := kubesift("ingest", "--db", db, logs)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	runWithFileSizeLimit(t, cmd, 2<<20)
	out := stderr.String()
	if code := cmd.ProcessState.ExitCode(); code != ExitPartial {
		t.Fatalf("exit %d, want %d; stderr:\n%s", code, ExitPartial, out)
	}
	b := filepath.Join(logs, "b.log")
	if strings.Count(out, "File too large") != 1 || !strings.Contains(out, "committing "+b+": ") ||
		!strings.Contains(out, "the database takes no more writes: 2 inputs after "+b+" not tried") || strings.Count(out, b) != 2 {
		t.Errorf("stderr does not name b.log's failure once and the 2 inputs not tried:\n%s", out)
	}
	r := runCLI(t, "query", "--db", db, "-o", "csv", "SELECT count(*) AS events, count(DISTINCT source_file) AS files FROM audit_events")
	if r.stdout != "events,files\n6,1\n" {
		t.Errorf("after the failure: %q %q, want a.log's 6 events kept", r.stdout, r.stderr)
	}
}

// TestFullDiskForTheEvidence: when the temporary file that holds the findings' evidence cannot
// be written (a full $TMPDIR; here a file size limit stands in for one), analyze fails naming it
// instead of writing a report without evidence, and leaves no file behind.
func TestFullDiskForTheEvidence(t *testing.T) {
	db := loadedDB(t)
	tmp := t.TempDir()
	cmd := kubesift("analyze", "--db", db, "-o", "json")
	cmd.Env = append(cmd.Env, "TMPDIR="+tmp)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	runWithFileSizeLimit(t, cmd, 1<<10)
	out := stderr.String()
	if code := cmd.ProcessState.ExitCode(); code == 0 || !strings.Contains(out, "file too large") || !strings.Contains(out, "findings' evidence") {
		t.Errorf("exit %d; want a failure naming the evidence file and the error; stderr:\n%s", code, out)
	}
	if left, _ := filepath.Glob(filepath.Join(tmp, "kubesift-evidence-*")); len(left) > 0 {
		t.Errorf("left behind: %v", left)
	}
}

// runWithFileSizeLimit runs cmd with its files limited to limitBytes, a stand-in for a full
// disk. The limit and SIGXFSZ ignored (so that a write past it fails with EFBIG instead of killing
// the process) are set in a shell that then becomes cmd: set in this process, the limit held for
// every test running in parallel while cmd started, and the test binary's own log failed to write.
func runWithFileSizeLimit(t *testing.T, cmd *exec.Cmd, limitBytes uint64) {
	t.Helper()
	sh, err := exec.LookPath("sh")
	if err != nil {
		t.Fatal(err)
	}
	// POSIX ulimit -f counts blocks of 512 bytes
	script := fmt.Sprintf(`trap '' XFSZ && ulimit -f %d && exec "$@"`, (limitBytes+511)/512)
	cmd.Args = append([]string{"sh", "-c", script, "sh", cmd.Path}, cmd.Args[1:]...)
	cmd.Path = sh
	if err := cmd.Run(); err != nil {
		var exit *exec.ExitError
		if !errors.As(err, &exit) {
			t.Fatal(err)
		}
	}
}
