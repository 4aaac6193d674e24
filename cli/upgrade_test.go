package cli

import (
	"context"
	"database/sql"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kubesift/kubesift/ingest"
	"github.com/kubesift/kubesift/store"
)

// TestAnalyzeUpgradesAnOlderDatabase: analyze opens the database read-only; one an older
// kubesift wrote, without a column the rules read, is upgraded first and the user is told, and
// every rule runs.
func TestAnalyzeUpgradesAnOlderDatabase(t *testing.T) {
	path := loadedDB(t)
	alterDB(t, path, "ALTER TABLE audit_events DROP COLUMN apiserver")
	r := runCLI(t, "analyze", "--db", path, "-o", "json")
	if r.code != ExitOK {
		t.Fatalf("analyze of an older database: %+v", r)
	}
	if want := path + ": upgraded from an older kubesift's (added audit_events.apiserver)"; !strings.Contains(r.stderr, want) {
		t.Errorf("stderr %q, want it to say %q", r.stderr, want)
	}
}

// TestQueryFillsTheRowsOfAStoppedIngest: loads whose derived rows an ingest never wrote (it was
// killed after committing them, before it derived them) get them on the next open, and the user
// is told so, not that an older kubesift wrote the database.
func TestQueryFillsTheRowsOfAStoppedIngest(t *testing.T) {
	path := loadedDB(t)
	alterDB(t, path, "DELETE FROM audit_services")
	r := runCLI(t, "query", "--db", path, "-o", "csv", "SELECT count(*) > 0 AS filled FROM audit_services")
	if r.code != ExitOK || r.stdout != "filled\ntrue\n" {
		t.Fatalf("query: %+v", r)
	}
	want := path + ": filled audit_services for the loads without their rows (an ingest stopped before it derived them, or an older kubesift's)"
	if !strings.Contains(r.stderr, want) || strings.Contains(r.stderr, "upgraded") {
		t.Errorf("stderr %q, want it to say %q and nothing of an upgrade", r.stderr, want)
	}
}

// TestAnalyzeOfADatabaseBeforeResponseRV: a database of the kubesift before audit_events had
// response_rv (and two bookkeeping columns where it has load_problem) is upgraded on analyze, its
// writes' response versions filled from their bodies, and watch-rewind, which reads them, finds
// what it finds in a database loaded now.
func TestAnalyzeOfADatabaseBeforeResponseRV(t *testing.T) {
	path := filepath.Join(t.TempDir(), "k.duckdb")
	if r := runCLI(t, "ingest", "--db", path, "../samples/watch-rewind/audit.log"); r.code != ExitOK {
		t.Fatalf("ingest: %+v", r)
	}
	now := runCLI(t, "analyze", "--db", path, "--rule", "watch-rewind", "-o", "json")
	if now.code != ExitOK || !strings.Contains(now.stdout, `"rule": "watch-rewind"`) {
		t.Fatalf("analyze of a database loaded now, without a watch-rewind finding: %+v", now)
	}
	alterDB(t, path, "ALTER TABLE audit_events DROP COLUMN response_rv", "ALTER TABLE audit_events DROP COLUMN load_problem",
		"ALTER TABLE audit_events ADD COLUMN load_reject VARCHAR", "ALTER TABLE audit_events ADD COLUMN load_warning VARCHAR")
	older := runCLI(t, "analyze", "--db", path, "--rule", "watch-rewind", "-o", "json")
	if want := path + ": upgraded from an older kubesift's (added audit_events.response_rv, audit_events.load_problem; dropped audit_events.load_reject, audit_events.load_warning)"; !strings.Contains(older.stderr, want) {
		t.Errorf("stderr %q, want it to say %q", older.stderr, want)
	}
	if older.code != now.code || older.stdout != now.stdout {
		t.Errorf("analyze of the upgraded database (exit %d):\n%s\nwant, as loaded now (exit %d):\n%s", older.code, older.stdout, now.code, now.stdout)
	}
}

// TestAnalyzeOfADatabaseThatStoredLatency: a database whose audit_events stored latency_ms and
// watch_rv and lacked has_body and body_fields (kubesift before has_body) is rewritten on its first
// open, which says so before and after, and analyzes as one loaded now: the same findings, and
// latency_ms, watch_rv, has_body and body_fields the same per row.
func TestAnalyzeOfADatabaseThatStoredLatency(t *testing.T) {
	path := filepath.Join(t.TempDir(), "k.duckdb")
	if r := runCLI(t, "ingest", "--db", path, "../samples/watch-rewind/audit.log", "../samples/election-lock-churn/audit.log"); r.code != ExitOK {
		t.Fatalf("ingest: %+v", r)
	}
	now := runCLI(t, "analyze", "--db", path, "-o", "json")
	latency := runCLI(t, "query", "--db", path, "-o", "csv", "SELECT audit_id, stage, latency_ms, watch_rv, has_body, body_fields FROM audit_events ORDER BY ALL")
	if now.code != ExitOK || !strings.Contains(now.stdout, `"rule": "election-lock-churn"`) || latency.code != ExitOK || strings.Count(latency.stdout, "\n") < 100 {
		t.Fatalf("analyze and query of a database loaded now: %+v %+v", now, latency)
	}
	alterDB(t, path, // what an older kubesift's table held: latency_ms and watch_rv stored, no has_body or body_fields
		"CREATE TABLE older AS SELECT * EXCLUDE (has_body, body_fields) FROM audit_events",
		"DROP TABLE audit_events", "ALTER TABLE older RENAME TO audit_events")
	older := runCLI(t, "analyze", "--db", path, "-o", "json")
	for _, want := range []string{path + ": rewriting audit_events for this kubesift, once",
		path + ": upgraded from an older kubesift's (added audit_events.has_body, audit_events.body_fields, audit_events.latency_ms (computed), audit_events.watch_rv (computed))"} {
		if !strings.Contains(older.stderr, want) {
			t.Errorf("stderr %q, want it to say %q", older.stderr, want)
		}
	}
	if older.code != now.code || older.stdout != now.stdout {
		t.Errorf("analyze of the upgraded database (exit %d):\n%s\nwant, as loaded now (exit %d):\n%s", older.code, older.stdout, now.code, now.stdout)
	}
	if again := runCLI(t, "query", "--db", path, "-o", "csv", "SELECT audit_id, stage, latency_ms, watch_rv, has_body, body_fields FROM audit_events ORDER BY ALL"); again.stdout != latency.stdout {
		t.Errorf("latency_ms, watch_rv, has_body and body_fields after the upgrade differ from a database loaded now")
	}
}

// TestIngestConvertsAnOlderStorageFormat: a database in DuckDB's older storage format (every file
// an older kubesift made) is rewritten in the newer one by the next load, which says so, and then
// holds what a database loaded now holds: analyze reports the same findings.
func TestIngestConvertsAnOlderStorageFormat(t *testing.T) {
	dir := t.TempDir()
	now, older := filepath.Join(dir, "now.duckdb"), filepath.Join(dir, "older.duckdb")
	for _, path := range []string{now, older} {
		if r := runCLI(t, "ingest", "--db", path, "../samples/watch-rewind/audit.log"); r.code != ExitOK {
			t.Fatalf("ingest: %+v", r)
		}
	}
	inOlderFormat(t, older)
	var reports []string
	for _, path := range []string{now, older} {
		r := runCLI(t, "ingest", "--db", path, "../samples/flapping/")
		if r.code != ExitOK {
			t.Fatalf("ingest into %s: %+v", path, r)
		}
		if converted := strings.Contains(r.stderr, path+": rewritten in DuckDB "+store.StorageVersion+"'s storage format, once"); converted != (path == older) {
			t.Errorf("ingest into %s: stderr %q", filepath.Base(path), r.stderr)
		}
		a := runCLI(t, "analyze", "--db", path, "-o", "json")
		if a.code != ExitOK && a.code != ExitFindings {
			t.Fatalf("analyze %s: %+v", path, a)
		}
		reports = append(reports, a.stdout)
	}
	if reports[0] != reports[1] {
		t.Errorf("the converted database's findings differ from those of a database loaded now")
	}
}

// TestIngestWarnsWhenItCannotConvert: a database in DuckDB's older storage format that holds a
// table kubesift does not make is not rewritten; the load goes on and stderr says why the file
// stays in that format.
func TestIngestWarnsWhenItCannotConvert(t *testing.T) {
	path := filepath.Join(t.TempDir(), "older.duckdb")
	if r := runCLI(t, "ingest", "--db", path, "../samples/watch-rewind/audit.log"); r.code != ExitOK {
		t.Fatalf("ingest: %+v", r)
	}
	inOlderFormat(t, path, "CREATE TABLE notes (note VARCHAR)")
	r := runCLI(t, "ingest", "--db", path, "../samples/flapping/")
	if want := path + ": kept in DuckDB's older storage format, which is larger and slower to analyse: it holds table notes, which kubesift does not make"; r.code != ExitOK || !strings.Contains(r.stderr, want) {
		t.Errorf("ingest: %+v; want stderr to say %q", r, want)
	}
}

// inOlderFormat makes the kubesift database at path again in DuckDB's v1.0.0 storage format (every
// file an older kubesift made), with the compressions that format has, the same rows and whatever
// extra makes.
func inOlderFormat(t *testing.T, path string, extra ...string) {
	t.Helper()
	plain, err := sql.Open("duckdb", "")
	if err != nil {
		t.Fatal(err)
	}
	stmts := []string{
		fmt.Sprintf("ATTACH '%s' AS loaded (READ_ONLY)", path),
		fmt.Sprintf("ATTACH '%s' AS older (STORAGE_VERSION 'v1.0.0')", path+".v1"),
		"USE older",
	}
	for _, table := range ingest.Schema() {
		ddl := strings.NewReplacer("dict_fsst", "dictionary", " USING COMPRESSION zstd", "").Replace(table.DDL())
		var stored []string
		for _, c := range table.Columns {
			if c.Generated == "" {
				stored = append(stored, `"`+c.Name+`"`)
			}
		}
		stmts = append(stmts, ddl, fmt.Sprintf("INSERT INTO %s BY NAME SELECT %s FROM loaded.main.%s", table.Name, strings.Join(stored, ", "), table.Name))
	}
	stmts = append(append(stmts, "CREATE SEQUENCE "+store.LoadIDSequence+" START WITH 2"), extra...)
	stmts = append(stmts, "USE memory", "DETACH older", "DETACH loaded")
	for _, stmt := range stmts {
		if _, err := plain.Exec(stmt); err != nil {
			plain.Close()
			t.Fatalf("%s: %v", stmt, err)
		}
	}
	plain.Close()
	if err := os.Rename(path+".v1", path); err != nil {
		t.Fatal(err)
	}
}

// alterDB runs statements on the database at path, to make it what an older or stopped kubesift
// left.
func alterDB(t *testing.T, path string, statements ...string) {
	t.Helper()
	db, err := store.Open(context.Background(), path, ingest.Schema(), store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	for _, stmt := range statements {
		if _, err := db.Exec(stmt); err != nil {
			t.Fatalf("%s: %v", stmt, err)
		}
	}
}
