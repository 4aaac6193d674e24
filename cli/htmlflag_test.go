package cli

import (
	"archive/zip"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestHTMLBesideAnotherReport: --html writes the HTML report beside -o's, and the xlsx Summary
// sheet and the markdown report link to it (relative to the --out file); without --html they
// mention none. --html-charts cuts the findings with charts.
func TestHTMLBesideAnotherReport(t *testing.T) {
	db := loadedDB(t)
	dir := t.TempDir()
	os.Mkdir(filepath.Join(dir, "out"), 0o755)
	os.Mkdir(filepath.Join(dir, "rep"), 0o755)
	html := filepath.Join(dir, "rep", "report.html")
	xlsx := filepath.Join(dir, "out", "r.xlsx")
	if r := runCLI(t, "analyze", "--db", db, "-o", "xlsx", "--out", xlsx, "--html", html); r.code != ExitOK {
		t.Fatalf("-o xlsx --html: %+v", r)
	}
	if b, err := os.ReadFile(html); err != nil || !strings.Contains(string(b), "<html") {
		t.Errorf("--html file: %v, %.60q", err, b)
	}
	if summary := xlsxSheet(t, xlsx, "xl/worksheets/sheet1.xml"); !strings.Contains(summary, "<f>HYPERLINK(&#34;../rep/report.html&#34;") {
		t.Errorf("the Summary sheet does not link ../rep/report.html: %.300s", summary)
	}

	md := filepath.Join(dir, "report.md")
	if r := runCLI(t, "analyze", "--db", db, "-o", "markdown", "--out", md, "--html", filepath.Join(dir, "with space.html")); r.code != ExitOK {
		t.Fatalf("-o markdown --html: %+v", r)
	}
	if b, _ := os.ReadFile(md); !strings.Contains(string(b), "- HTML report of the same run, with charts: [with space.html](with%20space.html)\n") {
		t.Errorf("the markdown report does not link the HTML report:\n%.600s", b)
	}
	if r := runCLI(t, "analyze", "--db", db, "-o", "markdown"); r.code != ExitOK || strings.Contains(r.stdout, "HTML report") {
		t.Errorf("without --html: exit %d, %.600s", r.code, r.stdout)
	}

	// --html-charts: the first N findings of each rule have charts, the page says so and lists the others.
	cut := filepath.Join(dir, "cut.html")
	if r := runCLI(t, "analyze", "--db", db, "--rule", "election-lock-churn", "-o", "html", "--out", cut, "--html-charts", "1"); r.code != ExitOK {
		t.Fatalf("-o html --html-charts 1: %+v", r)
	}
	if b, _ := os.ReadFile(cut); strings.Count(string(b), "the first 1 of 2 <code>election-lock-churn</code> findings") != 2 ||
		strings.Count(string(b), `<section class="finding"`) != 1 || !strings.Contains(string(b), `<tr id="finding-2">`) {
		t.Errorf("-o html --html-charts 1 with two findings: not one section, one listed and the cut stated:\n%s", b)
	}
	if r := runCLI(t, "analyze", "--db", db, "-o", "html", "--html-charts", "-1"); r.code != ExitUsage || !strings.Contains(r.stderr, "--html-charts wants a number of findings per rule, 0 or more, got -1") {
		t.Errorf("--html-charts -1: %+v", r)
	}

	if r := runCLI(t, "analyze", "--db", db, "-o", "html", "--html", filepath.Join(dir, "x.html")); r.code != ExitUsage {
		t.Errorf("-o html --html: %+v", r)
	}
	if r := runCLI(t, "analyze", "--db", db, "-o", "csv", "--html", html); r.code != ExitError || !strings.Contains(r.stderr, html+" already exists") {
		t.Errorf("existing --html without --force: %+v", r)
	}
}

// xlsxSheet returns the XML of one part of the workbook at path.
func xlsxSheet(t *testing.T, path, part string) string {
	t.Helper()
	zr, err := zip.OpenReader(path)
	if err != nil {
		t.Fatal(err)
	}
	defer zr.Close()
	f, err := zr.Open(part)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	b, err := io.ReadAll(f)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
