package cli

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/csv"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/xuri/excelize/v2"

	"github.com/kubesift/kubesift/internal/testutil"
	"github.com/kubesift/kubesift/tabular"
)

// runOut runs kubesift with --out FILE in a fresh directory and returns the file's path.
func runOut(t *testing.T, name string, args ...string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), name)
	if r := runCLI(t, append(args, "--out", path)...); r.code != ExitOK {
		t.Fatalf("kubesift %v: %+v", args, r)
	}
	return path
}

// TestAnalyzeFormatsGolden: every report format of analyze on the real recording. The text
// formats are compared whole; XLSX as a dump of every cell with its type and number format.
func TestAnalyzeFormatsGolden(t *testing.T) {
	db := loadedDB(t)
	for _, format := range []string{"table", "wide", "json", "ndjson", "csv", "markdown"} {
		t.Run(format, func(t *testing.T) {
			r := runCLI(t, "analyze", "--db", db, "-o", format)
			if r.code != ExitOK {
				t.Fatalf("%+v", r)
			}
			golden(t, "analyze-real-lab."+format, r.stdout)
			if format != "csv" {
				return
			}
			// stdout has no byte-order mark (cut, awk and pandas see "rule"); a file gets one for
			// Excel, and the same bytes after it.
			if !strings.HasPrefix(r.stdout, "rule,") {
				t.Errorf("-o csv to stdout starts %.10q", r.stdout)
			}
			b, err := os.ReadFile(runOut(t, "findings.csv", "analyze", "--db", db, "-o", "csv"))
			if err != nil || string(b) != tabular.UTF8BOM+r.stdout {
				t.Errorf("--out findings.csv differs from stdout after the BOM (%v)", err)
			}
		})
	}
	t.Run("xlsx", func(t *testing.T) {
		path := runOut(t, "findings.xlsx", "analyze", "--db", db, "-o", "xlsx")
		f, err := excelize.OpenFile(path)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		golden(t, "analyze-real-lab.xlsx.txt", dumpXLSX(t, f))
		if got := strings.Join(f.GetSheetList(), ","); got != "Summary,election-lock-churn" {
			t.Errorf("sheets %s", got)
		}
		// The summary: a row per finding (2 on this recording), a blank row, the report's context.
		rows, _ := f.GetRows("Summary")
		if rows[0][0] != "finding" || rows[1][2] != "election-lock-churn" || len(rows[3]) != 0 || rows[4][0] != "report" {
			t.Errorf("summary rows %q", rows[:5])
		}
		assertDateCell(t, f, "Summary", "H2")
		assertDateCell(t, f, "Summary", "I2")
		if typ, _ := f.GetCellType("Summary", "J2"); typ != excelize.CellTypeNumber && typ != excelize.CellTypeUnset {
			t.Errorf("count cell type %v, want a number", typ)
		}
		panes, _ := f.GetPanes("Summary")
		if !panes.Freeze || panes.YSplit != 1 {
			t.Errorf("summary header not frozen: %+v", panes)
		}
		// The rule sheet: one row per evidence item of the rule's findings.
		var want int
		for _, line := range strings.Split(strings.TrimSpace(runCLI(t, "analyze", "--db", db, "-o", "ndjson").stdout), "\n") {
			if strings.Contains(line, `"rule":"election-lock-churn"`) {
				want += strings.Count(line, `"audit_id":`)
			}
		}
		ev, _ := f.GetRows("election-lock-churn")
		if len(ev)-1 != want || want == 0 {
			t.Errorf("election-lock-churn sheet has %d evidence rows, want %d", len(ev)-1, want)
		}
	})
	t.Run("parquet", func(t *testing.T) {
		path := runOut(t, "findings.parquet", "analyze", "--db", db, "-o", "parquet")
		types, csvText := readParquet(t, path)
		if want := "VARCHAR VARCHAR VARCHAR VARCHAR VARCHAR VARCHAR TIMESTAMPTZ TIMESTAMPTZ BIGINT VARCHAR JSON"; types != want {
			t.Errorf("parquet column types %q, want %q", types, want)
		}
		if want := runCLI(t, "analyze", "--db", db, "-o", "csv").stdout; csvText != want {
			t.Errorf("parquet read back differs from -o csv:\n%s\nwant\n%s", csvText, want)
		}
	})
}

// readParquet reads a Parquet file with DuckDB's read_parquet and returns its column types and
// its rows as kubesift CSV.
func readParquet(t *testing.T, path string) (types, csvText string) {
	t.Helper()
	return queryDuckDB(t, "SELECT * FROM read_parquet("+tabular.Quote(path)+")")
}

// queryDuckDB runs query in a fresh in-memory DuckDB and returns its column types and its rows
// as kubesift CSV, JSON columns as the text they hold (the driver would decode them into Go maps
// and encode them again with their keys sorted).
func queryDuckDB(t *testing.T, query string) (types, csvText string) {
	t.Helper()
	db, err := sql.Open("duckdb", "")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	rows, err := db.QueryContext(context.Background(), "SELECT * FROM ("+query+") LIMIT 0")
	if err != nil {
		t.Fatal(err)
	}
	cts, err := rows.ColumnTypes()
	rows.Close()
	if err != nil {
		t.Fatal(err)
	}
	var names, typeNames []string
	for _, ct := range cts {
		typeNames = append(typeNames, ct.DatabaseTypeName())
		name := `"` + strings.ReplaceAll(ct.Name(), `"`, `""`) + `"`
		if ct.DatabaseTypeName() == "JSON" {
			name = "CAST(" + name + " AS VARCHAR) AS " + name
		}
		names = append(names, name)
	}
	rows, err = db.QueryContext(context.Background(), "SELECT "+strings.Join(names, ", ")+" FROM ("+query+")")
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	rs, err := readRows(rows)
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	if err := tabular.CSV(&b, rs.table("parquet")); err != nil {
		t.Fatal(err)
	}
	return strings.Join(typeNames, " "), b.String()
}

func assertDateCell(t *testing.T, f *excelize.File, sheet, cell string) {
	t.Helper()
	raw, _ := f.GetCellValue(sheet, cell, excelize.Options{RawCellValue: true})
	if _, err := strconv.ParseFloat(raw, 64); err != nil {
		t.Errorf("%s!%s holds %q, want a date serial number", sheet, cell, raw)
	}
	id, _ := f.GetCellStyle(sheet, cell)
	st, err := f.GetStyle(id)
	if err != nil || st.CustomNumFmt == nil || *st.CustomNumFmt != tabular.DateFormat {
		t.Errorf("%s!%s has no date format (style %d: %+v)", sheet, cell, id, st)
	}
}

var excelEpoch = time.Date(1899, 12, 30, 0, 0, 0, 0, time.UTC)

// dumpXLSX lists every sheet and non-empty cell: address, type (n number, d date, b bool,
// s text) and value, raw for numbers and formatted for dates.
func dumpXLSX(t *testing.T, f *excelize.File) string {
	t.Helper()
	var b strings.Builder
	for _, sheet := range f.GetSheetList() {
		rows, err := f.GetRows(sheet, excelize.Options{RawCellValue: true})
		if err != nil {
			t.Fatal(err)
		}
		fmt.Fprintf(&b, "== %s (%d rows)\n", sheet, len(rows))
		for r, row := range rows {
			for c, v := range row {
				if v == "" {
					continue
				}
				cell, _ := excelize.CoordinatesToCellName(c+1, r+1)
				typ, _ := f.GetCellType(sheet, cell)
				kind := "s"
				switch typ {
				case excelize.CellTypeBool:
					kind = "b"
				case excelize.CellTypeNumber, excelize.CellTypeUnset:
					kind = "n"
					if id, _ := f.GetCellStyle(sheet, cell); id != 0 {
						if st, _ := f.GetStyle(id); st != nil && st.CustomNumFmt != nil {
							kind = "d"
							serial, _ := strconv.ParseFloat(v, 64)
							v = excelEpoch.Add(time.Duration(serial * 24 * float64(time.Hour))).Round(time.Millisecond).Format("2006-01-02T15:04:05.000")
						}
					}
				}
				if len(v) > 100 {
					v = v[:100] + "…"
				}
				fmt.Fprintf(&b, "%s %s %s\n", cell, kind, v)
			}
		}
	}
	return b.String()
}

const typedQuery = `SELECT verb, count(*) AS events, round(avg(latency_ms), 3) AS avg_ms, min(stage_at) AS first,
	bool_or(code >= 400) AS errors, NULL AS nothing FROM audit_events GROUP BY verb ORDER BY events DESC, verb`

// TestQueryFormats: query's formats beyond table/json/csv (see TestQueryGolden).
func TestQueryFormats(t *testing.T) {
	db := loadedDB(t)
	for _, format := range []string{"ndjson", "markdown"} {
		r := runCLI(t, "query", "--db", db, "-o", format, typedQuery)
		if r.code != ExitOK {
			t.Fatalf("%s: %+v", format, r)
		}
		golden(t, "query-typed."+format, r.stdout)
	}
	jsonOut := runCLI(t, "query", "--db", db, "-o", "json", typedQuery).stdout
	csvOut := runCLI(t, "query", "--db", db, "-o", "csv", typedQuery).stdout

	t.Run("xlsx", func(t *testing.T) {
		f, err := excelize.OpenFile(runOut(t, "q.xlsx", "query", "--db", db, "-o", "xlsx", typedQuery))
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		golden(t, "query-typed.xlsx.txt", dumpXLSX(t, f))
		if got := f.GetSheetList(); len(got) != 1 || got[0] != "query" {
			t.Errorf("sheets %v", got)
		}
		assertDateCell(t, f, "query", "D2")
		for cell, want := range map[string]excelize.CellType{"A2": excelize.CellTypeInlineString, "E2": excelize.CellTypeBool} {
			if got, _ := f.GetCellType("query", cell); got != want {
				t.Errorf("%s type %v, want %v", cell, got, want)
			}
		}
		rows, _ := f.GetRows("query")
		if want := strings.Count(csvOut, "\n"); len(rows) != want {
			t.Errorf("%d rows, want %d", len(rows), want)
		}
	})
	t.Run("parquet", func(t *testing.T) {
		types, got := readParquet(t, runOut(t, "q.parquet", "query", "--db", db, "-o", "parquet", typedQuery))
		if !strings.HasPrefix(types, "VARCHAR BIGINT DOUBLE TIMESTAMPTZ BOOLEAN") {
			t.Errorf("parquet types %q", types)
		}
		if got != csvOut {
			t.Errorf("parquet read back:\n%s\nwant (-o csv)\n%s", got, csvOut)
		}
		if !strings.Contains(jsonOut, `"errors": true`) {
			t.Errorf("json: %s", jsonOut)
		}
		// JSON stays JSON, and a body reads back as the database holds its text (-o csv writes what
		// the driver decoded, keys sorted)
		bodies := "SELECT audit_id, response_object FROM audit_events WHERE response_object IS NOT NULL ORDER BY audit_id, stage LIMIT 3"
		types, got = readParquet(t, runOut(t, "b.parquet", "query", "--db", db, "-o", "parquet", bodies))
		asText := strings.Replace(bodies, "response_object FROM", "CAST(response_object AS VARCHAR) AS response_object FROM", 1)
		if want := runCLI(t, "query", "--db", db, "-o", "csv", asText).stdout; types != "VARCHAR JSON" || got != want {
			t.Errorf("bodies as parquet: %s\n%s\nwant (-o csv)\n%s", types, got, want)
		}
	})
	t.Run("sandbox", func(t *testing.T) { // -o parquet does not open the sandbox
		secret := filepath.Join(t.TempDir(), "s.csv")
		os.WriteFile(secret, []byte("a\n1\n"), 0o644)
		r := runCLI(t, "query", "--db", db, "-o", "parquet", "--out", filepath.Join(t.TempDir(), "x.parquet"), "SELECT * FROM read_csv('"+secret+"')")
		if r.code != ExitError {
			t.Errorf("reading a file with -o parquet: %+v", r)
		}
	})
}

// TestOutputFileAndTerminal: --out is not overwritten without --force, is written whole, and
// binary formats refuse a terminal.
func TestOutputFileAndTerminal(t *testing.T) {
	db := loadedDB(t)
	path := filepath.Join(t.TempDir(), "f.csv")
	os.WriteFile(path, []byte("keep"), 0o644)
	r := runCLI(t, "analyze", "--db", db, "-o", "csv", "--out", path)
	if b, _ := os.ReadFile(path); r.code != ExitError || string(b) != "keep" || !strings.Contains(r.stderr, path+" already exists; use --force") {
		t.Errorf("existing --out: %+v, file now %q", r, b)
	}
	if r := runCLI(t, "analyze", "--db", db, "-o", "csv", "--out", path, "--force"); r.code != ExitOK {
		t.Errorf("--force: %+v", r)
	}
	if b, _ := os.ReadFile(path); !bytes.HasPrefix(b, []byte(tabular.UTF8BOM+"rule,")) {
		t.Errorf("--force did not write the report: %.40q", b)
	}
	entries, _ := os.ReadDir(filepath.Dir(path))
	if len(entries) != 1 {
		t.Errorf("temporary files left beside --out: %v", entries)
	}
	for _, args := range [][]string{
		{"analyze", "--db", db, "-o", "xlsx"},
		{"query", "--db", db, "-o", "parquet", "SELECT 1"},
	} {
		var out, errb bytes.Buffer
		e := &env{stdout: terminal{&out}, stderr: &errb, stdin: strings.NewReader(""), getenv: func(string) string { return "" }, isTerminal: func(uintptr) bool { return true }}
		if code := e.main(context.Background(), args); code != ExitUsage || out.Len() > 0 || !strings.Contains(errb.String(), "stdout is a terminal") {
			t.Errorf("%v on a terminal: exit %d, %d bytes out, %q", args, code, out.Len(), errb.String())
		}
	}
	if r := runCLI(t, "analyze", "--db", db, "-o", "xlsx"); r.code != ExitOK || !strings.HasPrefix(r.stdout, "PK") {
		t.Errorf("xlsx to a pipe: exit %d", r.code)
	}
	// Parquet to a pipe: the same file as with --out.
	r = runCLI(t, "query", "--db", db, "-o", "parquet", typedQuery)
	piped := filepath.Join(t.TempDir(), "piped.parquet")
	os.WriteFile(piped, []byte(r.stdout), 0o644)
	if _, got := readParquet(t, piped); r.code != ExitOK || got != runCLI(t, "query", "--db", db, "-o", "csv", typedQuery).stdout {
		t.Errorf("parquet to a pipe: exit %d, read back %q", r.code, got)
	}
}

func TestExport(t *testing.T) {
	db := filepath.Join(t.TempDir(), "k.duckdb")
	if r := runCLI(t, "ingest", "--db", db, realAuditLog, "../samples/probe-conntrack"); r.code != ExitOK {
		t.Fatalf("ingest: %+v", r)
	}
	counts := map[string]int{}
	for _, line := range strings.Split(strings.TrimSpace(runCLI(t, "query", "--db", db, "-o", "csv",
		"SELECT 'audit_events', count(*) FROM audit_events UNION ALL SELECT 'conntrack_entries', count(*) FROM conntrack_entries "+
			"UNION ALL SELECT 'ingest_files', count(*) FROM ingest_files").stdout), "\n")[1:] {
		name, n, _ := strings.Cut(line, ",")
		counts[name], _ = strconv.Atoi(n)
	}

	t.Run("csv", func(t *testing.T) {
		dir := filepath.Join(t.TempDir(), "new", "dir")
		if r := runCLI(t, "export", "--db", db, "-o", "csv", "--out", dir); r.code != ExitOK {
			t.Fatalf("%+v", r)
		}
		for table, n := range counts {
			f, err := os.Open(filepath.Join(dir, table+".csv"))
			if err != nil {
				t.Fatal(err)
			}
			recs, err := csv.NewReader(f).ReadAll()
			f.Close()
			if err != nil || len(recs)-1 != n {
				t.Errorf("%s.csv: %d rows (%v), want %d", table, len(recs)-1, err, n)
			}
		}
		if _, err := os.Stat(filepath.Join(dir, "conntrack_events.csv")); err == nil {
			t.Error("an empty table was exported")
		}
		r := runCLI(t, "export", "--db", db, "-o", "csv", "--out", dir)
		if r.code != ExitError || !strings.Contains(r.stderr, "already exists; use --force") {
			t.Errorf("second export without --force: %+v", r)
		}
	})
	t.Run("since", func(t *testing.T) {
		dir := t.TempDir()
		r := runCLI(t, "export", "--db", db, "-o", "csv", "--out", dir, "--table", "audit_events", "--table", "ingest_errors",
			"--since", "2026-11-21T05:31:20Z", "--until", "2026-11-21T05:31:40Z", "--force")
		if r.code != ExitOK || !strings.Contains(r.stderr, "no time column, exported whole: ingest_errors") {
			t.Fatalf("%+v", r)
		}
		want := runCLI(t, "query", "--db", db, "-o", "csv", "SELECT count(*) FROM audit_events WHERE stage_at BETWEEN '2026-11-21T05:31:20Z' AND '2026-11-21T05:31:40Z'").stdout
		b, _ := os.ReadFile(filepath.Join(dir, "audit_events.csv"))
		if got := strings.Count(string(b), "\n") - 1; fmt.Sprintf("count_star()\n%d\n", got) != want || got == 0 || got >= counts["audit_events"] {
			t.Errorf("--since/--until kept %d audit rows, want %s", got, want)
		}
	})
	t.Run("parquet", func(t *testing.T) {
		dir := t.TempDir()
		if r := runCLI(t, "export", "--db", db, "-o", "parquet", "--out", dir); r.code != ExitOK {
			t.Fatalf("%+v", r)
		}
		for table, n := range counts {
			_, text := readParquet(t, filepath.Join(dir, table+".parquet"))
			if got := len(csvRecords(t, text)) - 1; got != n {
				t.Errorf("%s.parquet: %d rows, want %d", table, got, n)
			}
		}
	})
	t.Run("xlsx", func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "tables.xlsx")
		if r := runCLI(t, "export", "--db", db, "-o", "xlsx", "--out", path, "--table", "audit_events", "--table", "conntrack_entries"); r.code != ExitOK {
			t.Fatalf("%+v", r)
		}
		f, err := excelize.OpenFile(path)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		if got := strings.Join(f.GetSheetList(), ","); got != "audit_events,conntrack_entries" {
			t.Errorf("sheets %s", got)
		}
		for _, table := range []string{"audit_events", "conntrack_entries"} {
			rows, _ := f.GetRows(table)
			if len(rows)-1 != counts[table] {
				t.Errorf("%s sheet: %d rows, want %d", table, len(rows)-1, counts[table])
			}
		}
		assertDateCell(t, f, "conntrack_entries", "B2")
	})
	if r := runCLI(t, "export", "--db", db, "-o", "csv"); r.code != ExitUsage || !strings.Contains(r.stderr, "--out is required") {
		t.Errorf("export without --out: %+v", r)
	}
	if r := runCLI(t, "export", "--db", db, "--table", "nope", "--out", t.TempDir()); r.code != ExitUsage {
		t.Errorf("export of an unknown table: %+v", r)
	}
}

func csvRecords(t *testing.T, text string) [][]string {
	t.Helper()
	recs, err := csv.NewReader(strings.NewReader(strings.TrimPrefix(text, tabular.UTF8BOM))).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	return recs
}

// TestLibreOffice converts kubesift's CSV and XLSX to CSV with LibreOffice headless and
// compares the cell values with what kubesift wrote. Without LibreOffice it skips, except under
// CI=true.
func TestLibreOffice(t *testing.T) {
	soffice := testutil.NeedProgram(t, "apt-get install libreoffice-calc-nogui", "soffice", "libreoffice")
	db := loadedDB(t)
	convert := func(t *testing.T, path string) [][]string {
		t.Helper()
		out := t.TempDir()
		profile := "file://" + t.TempDir()
		cmd := exec.Command(soffice, "-env:UserInstallation="+profile, "--headless",
			"--infilter=CSV:44,34,76,1", "--convert-to", "csv:Text - txt - csv (StarCalc):44,34,76,1", "--outdir", out, path)
		if b, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("soffice: %v\n%s", err, b)
		}
		b, err := os.ReadFile(filepath.Join(out, strings.TrimSuffix(filepath.Base(path), filepath.Ext(path))+".csv"))
		if err != nil {
			t.Fatal(err)
		}
		return csvRecords(t, string(b))
	}
	t.Run("csv", func(t *testing.T) {
		path := runOut(t, "findings.csv", "analyze", "--db", db, "-o", "csv")
		b, _ := os.ReadFile(path)
		want := csvRecords(t, string(b))
		if got := convert(t, path); fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("LibreOffice reads the CSV as\n%q\nkubesift wrote\n%q", got, want)
		}
	})
	t.Run("xlsx", func(t *testing.T) {
		path := runOut(t, "query.xlsx", "query", "--db", db, "-o", "xlsx", typedQuery)
		got := convert(t, path)
		// What the cells hold, as LibreOffice formats them: dates with the date format, numbers
		// in full, booleans as TRUE/FALSE.
		want := csvRecords(t, runCLI(t, "query", "--db", db, "-o", "csv", typedQuery).stdout)
		for _, rec := range want[1:] {
			ts, err := time.Parse(time.RFC3339Nano, rec[3])
			if err != nil {
				t.Fatal(err)
			}
			rec[3] = ts.Round(time.Millisecond).Format("2006-01-02 15:04:05.000")
			rec[4] = strings.ToUpper(rec[4])
		}
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("LibreOffice reads the XLSX as\n%q\nwant\n%q", got, want)
		}
	})
}
