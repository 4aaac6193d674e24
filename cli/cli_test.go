package cli

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/kubesift/kubesift/internal/testutil"
)

// TestMain lets tests run the real CLI in a child process (the test binary re-executed with
// KUBESIFT_TEST_MAIN=1), for behaviour that needs a separate process: file locks and kills.
func TestMain(m *testing.M) {
	if os.Getenv("KUBESIFT_TEST_MAIN") == "1" { // as main.go runs it
		if err := SetDuckDBAllocator(); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
		code := Run(ctx, os.Args[1:], os.Stdout, os.Stderr)
		stop()
		writePeakRSS()
		os.Exit(code)
	}
	code := m.Run()
	if realLab.dir != "" {
		os.RemoveAll(realLab.dir)
	}
	os.Exit(code)
}

const realAuditLog = "../samples/real-lab/audit.log"

type result struct {
	code           int
	stdout, stderr string
}

func runCLI(t *testing.T, args ...string) result {
	t.Helper()
	var out, errb bytes.Buffer
	e := &env{stdout: &out, stderr: &errb, stdin: strings.NewReader(""), getenv: func(string) string { return "" }, isTerminal: func(uintptr) bool { return false }}
	code := e.main(context.Background(), args)
	return result{code, out.String(), errb.String()}
}

func golden(t *testing.T, name, got string) {
	t.Helper()
	testutil.Golden(t, filepath.Join("testdata", name+".golden"), []byte(got))
}

// loadedDB returns a database of the test's own holding samples/real-lab/audit.log: a copy of
// one loaded once per test binary (loading it is the slow part; a copy is as good as a fresh load
// and a test may write to it).
func loadedDB(t *testing.T) string {
	t.Helper()
	realLab.once.Do(func() {
		dir, err := os.MkdirTemp("", "kubesift-cli-test-")
		if err != nil {
			realLab.err = err
			return
		}
		realLab.dir = dir
		realLab.path = filepath.Join(dir, "k.duckdb")
		if r := runCLI(t, "ingest", "--db", realLab.path, realAuditLog); r.code != ExitOK {
			realLab.err = fmt.Errorf("ingest %s: %+v", realAuditLog, r)
		}
	})
	if realLab.err != nil {
		t.Fatal(realLab.err)
	}
	b, err := os.ReadFile(realLab.path)
	if err != nil {
		t.Fatal(err)
	}
	st, err := os.Stat(realLab.path)
	if err != nil {
		t.Fatal(err)
	}
	db := filepath.Join(t.TempDir(), "k.duckdb")
	if err := os.WriteFile(db, b, st.Mode().Perm()); err != nil {
		t.Fatal(err)
	}
	return db
}

// realLab is the database loadedDB copies, removed when the tests end (TestMain).
var realLab struct {
	once      sync.Once
	dir, path string
	err       error
}

func TestQueryGolden(t *testing.T) {
	db := loadedDB(t)
	queries := map[string]string{
		"verbs":  "SELECT verb, count(*) AS events, count(DISTINCT username) AS users FROM audit_events GROUP BY verb ORDER BY events DESC, verb",
		"values": "SELECT audit_id, stage_at, latency_ms, groups, annotations, watch, watch_rv, label_selector FROM audit_events WHERE verb = 'watch' ORDER BY stage_at, audit_id, stage LIMIT 3",
		"bodies": "SELECT name, object_rv, response_object->'$.subsets' AS subsets FROM audit_events WHERE resource = 'endpoints' AND verb = 'update' AND name = 'web' ORDER BY stage_at LIMIT 2",
	}
	for name, q := range queries {
		for _, format := range []string{"table", "json", "csv"} {
			t.Run(name+"."+format, func(t *testing.T) {
				r := runCLI(t, "query", "--db", db, "-o", format, q)
				if r.code != ExitOK {
					t.Fatalf("query: %+v", r)
				}
				golden(t, "query-"+name+"."+format, r.stdout)
			})
		}
	}
}

// TestQueryIsSandboxed: user SQL cannot write the database, its WAL or temp directory, read or
// write other files, attach databases or change settings; nothing changes on disk.
func TestQueryIsSandboxed(t *testing.T) {
	db := loadedDB(t)
	dir := filepath.Dir(db)
	secret := filepath.Join(dir, "secret.csv")
	os.WriteFile(secret, []byte("a,b\n1,2\n"), 0o644)
	before := dirState(t, dir)
	for _, q := range []string{
		"COPY (SELECT 'owned' x) TO '" + db + "' (FORMAT csv, USE_TMP_FILE false)",
		"COPY (SELECT 'owned' x) TO '" + db + ".wal' (FORMAT csv)",
		"EXPORT DATABASE '" + db + ".tmp/export'",
		"ATTACH '" + db + ".tmp/new.duckdb' AS other",
		"SELECT content FROM read_text('" + db + "')",
		"SELECT * FROM read_csv('" + secret + "')",
		"COPY audit_events TO '" + filepath.Join(dir, "out.csv") + "'",
		"DELETE FROM audit_events; DROP TABLE ingest_errors; SELECT 1",
		"SELECT 1; SELECT 2",
		"SET enable_external_access = true",
		"INSTALL httpfs",
	} {
		r := runCLI(t, "query", "--db", db, q)
		if r.code != ExitError || !strings.Contains(r.stderr, "query failed") {
			t.Errorf("%s: exit %d, want %d (refused); stdout %q stderr %q", q, r.code, ExitError, r.stdout, r.stderr)
		}
	}
	if after := dirState(t, dir); !slices.Equal(before, after) {
		t.Errorf("query changed the database's directory:\nbefore %q\nafter  %q", before, after)
	}
	if r := runCLI(t, "query", "--db", db, "-o", "csv", "SELECT count(*) AS n FROM audit_events"); r.stdout != "n\n1204\n" {
		t.Errorf("after the refused statements: %+v", r)
	}
}

// TestRulesCannotWrite: a user rule that deletes, drops or copies fails, under analyze and
// run --db alike, and leaves the tables whole.
func TestRulesCannotWrite(t *testing.T) {
	db := loadedDB(t)
	for name, sql := range map[string]string{
		"delete": "DELETE FROM audit_events; DROP TABLE ingest_errors; SELECT * FROM ingest_files WHERE $since IS NULL AND $until IS NULL",
		"copy":   "COPY (SELECT 'owned' x WHERE $since IS NULL AND $until IS NULL) TO '" + db + "' (FORMAT csv, USE_TMP_FILE false)",
	} {
		rules := t.TempDir()
		os.WriteFile(filepath.Join(rules, "evil.yaml"), []byte("id: evil\ntitle: evil\nseverity: info\ndescription: d\nremediation: r\n"+
			"references: [https://example.com/]\ninputs: [audit_events]\nsummary: s\n"), 0o644)
		os.WriteFile(filepath.Join(rules, "evil.sql"), []byte(sql), 0o644)
		for _, args := range [][]string{
			{"analyze", "--db", db, "--rules", rules, "--rule", "evil"},
			{"run", "--db", db, "--rules", rules, "--rule", "evil", "--summary", "none", "--until", "0s", realAuditLog}, // a window: nothing new is loaded
		} {
			r := runCLI(t, args...)
			if r.code == ExitOK || !strings.Contains(r.stderr, "evil") || !strings.Contains(r.stderr, "only a single SELECT") {
				t.Errorf("%s: %v: exit %d, stderr %q", name, args[0], r.code, r.stderr)
			}
		}
		r := runCLI(t, "query", "--db", db, "-o", "csv", "SELECT (SELECT count(*) FROM audit_events) AS events, (SELECT count(*) FROM ingest_errors) AS errors")
		if r.stdout != "events,errors\n1204,0\n" {
			t.Errorf("%s: after the rule: %+v", name, r)
		}
	}
}

// dirState lists the files under dir with a hash of their contents.
func dirState(t *testing.T, dir string) []string {
	t.Helper()
	var out []string
	err := filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(p)
		out = append(out, fmt.Sprintf("%s %x", p, sha256.Sum256(b)))
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func TestExitCodesAndUsage(t *testing.T) {
	tests := []struct {
		args []string
		code int
		msg  string
	}{
		{nil, ExitUsage, ""},
		{[]string{"frobnicate"}, ExitUsage, `unknown command "frobnicate"`},
		{[]string{"ingest"}, ExitUsage, "no PATH given"},
		{[]string{"ingest", "--kind", "pcap", "x"}, ExitUsage, `unknown kind "pcap"`},
		{[]string{"ingest", "--no-such-flag", "x"}, ExitUsage, "unknown flag: --no-such-flag"},
		{[]string{"query", "-o", "yaml", "SELECT 1"}, ExitUsage, `unknown output format "yaml"`},
		{[]string{"ingest", "--db", filepath.Join(t.TempDir(), "x.duckdb"), "/does/not/exist.log"}, ExitPartial, "reading /does/not/exist.log: stat /does/not/exist.log: no such file"},
		{[]string{"ingest", "--db", filepath.Join(t.TempDir(), "x.duckdb"), "/does/not/*.log"}, ExitPartial, "/does/not/*.log: no file matches"},
		{[]string{"query", "--db", "/does/not/exist.duckdb", "SELECT 1"}, ExitError, "/does/not/exist.duckdb"},
		{[]string{"schema", "no_such_table"}, ExitUsage, `unknown table "no_such_table"`},
		{[]string{"run", "--summary", "yaml", "x"}, ExitUsage, `unknown --summary "yaml"`},
		{[]string{"run", "--db", "x.duckdb", "--retain", "a week", "x"}, ExitUsage, "--retain wants a period like 7d"},
		{[]string{"ingest", "--at", "yesterday", "x"}, ExitUsage, "--at wants an RFC3339 time"},
		{[]string{"ingest", "--memory-limit", "lots", "x"}, ExitUsage, `--memory-limit: memory limit "lots"`},
		{[]string{"query", "--memory-limit", "0MB", "SELECT 1"}, ExitUsage, "want more than 0 bytes"},
		{[]string{"query", "--huge-pages=maybe", "SELECT 1"}, ExitUsage, `invalid argument "maybe" for "--huge-pages" flag`},
		{[]string{"analyze", "--db", "/does/not/exist.duckdb", "--since", "2026-11-21T06:00:00Z", "--until", "2026-11-21T05:00:00Z"},
			ExitUsage, "--until (2026-11-21T05:00:00Z) is not after --since (2026-11-21T06:00:00Z)"},
		{[]string{"run", "--since", "2026-11-21t06:00:00z", "--until", "2026-11-21T06:00:00Z", "x"}, ExitUsage, "is not after --since"},
		{[]string{"export", "--db", "/does/not/exist.duckdb", "--dataset", "d", "--since", "1h", "--until", "2h"}, ExitUsage, "is not after --since"},
		{[]string{"export", "--db", "/does/not/exist.duckdb", "-o", "csv", "--out", "d", "--since", "1h", "--until", "2h"}, ExitUsage, "is not after --since"},
		{[]string{"timeline", "--db", "/does/not/exist.duckdb", "--since", "1h", "--until", "2h", "endpoints/a/b"}, ExitUsage, "is not after --since"},
		{[]string{"ingest", "-h"}, ExitOK, ""},
		{[]string{"query", "-h"}, ExitOK, ""},
		{[]string{"run", "-h"}, ExitOK, ""},
	}
	for _, tt := range tests {
		r := runCLI(t, tt.args...)
		if r.code != tt.code || !strings.Contains(r.stderr, tt.msg) {
			t.Errorf("kubesift %v: exit %d, stderr %q; want exit %d and %q", tt.args, r.code, r.stderr, tt.code, tt.msg)
		}
	}
	if r := runCLI(t, "ingest", "-h"); !strings.Contains(r.stdout, "--max-line-bytes") || !strings.Contains(r.stdout, "--quiet") ||
		strings.Count(r.stdout, "Usage:") != 1 {
		t.Errorf("ingest -h does not document its flags once: %q", r.stdout)
	}
}

// TestHugePagesFlag: --huge-pages=false reaches the database the verbs open, and a dataset
// (store.Options.SmallPages; store's TestSandboxPoolIsAdvisedHugePages checks what it does there).
func TestHugePagesFlag(t *testing.T) {
	path := loadedDB(t)
	dataset := filepath.Join(t.TempDir(), "dataset")
	if r := runCLI(t, "export", "--quiet", "--db", path, "--dataset", dataset); r.code != ExitOK {
		t.Fatalf("export --dataset: %+v", r)
	}
	for _, tt := range []struct {
		args       []string
		smallPages bool
	}{{nil, false}, {[]string{"--huge-pages=false"}, true}, {[]string{"--huge-pages"}, false}} {
		fs, c := newFlags(&env{stdout: io.Discard, stderr: io.Discard}, "query", "", "")
		if err := parse(fs, tt.args); err != nil {
			t.Fatal(err)
		}
		db, err := c.openDB(context.Background(), path, true)
		if err != nil {
			t.Fatal(err)
		}
		if db.SmallPages() != tt.smallPages {
			t.Errorf("%v: SmallPages %v, want %v", tt.args, db.SmallPages(), tt.smallPages)
		}
		db.Close()
		ds, err := c.openDataset(context.Background(), dataset, "", nil, nil)
		if err != nil {
			t.Fatal(err)
		}
		if ds.SmallPages() != tt.smallPages {
			t.Errorf("%v: the dataset's SmallPages %v, want %v", tt.args, ds.SmallPages(), tt.smallPages)
		}
		ds.Close()
	}
}

func TestRunLoadsAndAnalyzes(t *testing.T) {
	r := runCLI(t, "run", "-o", "csv", realAuditLog)
	if r.code != ExitOK {
		t.Fatalf("run: %+v", r)
	}
	if !strings.HasPrefix(r.stdout, "rule,severity,cluster,namespace,name,subject,first_seen,last_seen,count,summary,evidence\n") ||
		!strings.Contains(r.stdout, "election-lock-churn,warning,,lab,legacy-operator-lock,") {
		t.Errorf("run output %q", r.stdout)
	}
	if !strings.Contains(r.stderr, "1204 rows loaded") || !strings.Contains(r.stderr, "loaded: 1204 audit_events") {
		t.Errorf("run summary %q", r.stderr)
	}
	if q := runCLI(t, "run", "--quiet", realAuditLog); q.stderr != "" {
		t.Errorf("--quiet still wrote %q", q.stderr)
	}
}

func TestAnalyzeExitCodesAndFlags(t *testing.T) {
	db := loadedDB(t)
	tests := []struct {
		args []string
		code int
		out  string // in stdout or stderr
	}{
		{[]string{"analyze", "--db", db}, ExitOK, "election-lock-churn"},
		{[]string{"analyze", "--db", db, "--fail-on", "warning"}, ExitFindings, "at or above warning"},
		{[]string{"analyze", "--db", db, "--fail-on", "critical"}, ExitOK, "legacy-operator-lock"},
		{[]string{"analyze", "--db", db, "--fail-on", "severe"}, ExitUsage, `unknown severity "severe"`},
		{[]string{"analyze", "--db", db, "--rule", "probe-conntrack-exhaustion"}, ExitOK, "not evaluated: probe-conntrack-exhaustion (no conntrack data)"},
		{[]string{"analyze", "--db", db, "--rule", "no-such-rule"}, ExitUsage, `unknown rule "no-such-rule"`},
		{[]string{"analyze", "--db", db, "--set", "election-lock-churn"}, ExitUsage, "--set wants ID.PARAM=VALUE"},
		{[]string{"analyze", "--db", db, "--set", "election-lock-churn.nope_count=1"}, ExitUsage, `has no param "nope_count"`},
		{[]string{"analyze", "--db", db, "--set", "watch-rewind.min_rewinds_count=-5"}, ExitUsage, "min_rewinds_count is a quantity: -5 is negative"},
		{[]string{"analyze", "--db", db, "--set", "endpoint-flapping.critical_share_percent=NaN"}, ExitUsage, "not a finite number"},
		{[]string{"analyze", "--db", db, "--since", "yesterday"}, ExitUsage, "--since wants an RFC3339 time"},
		{[]string{"analyze", "--db", db, "--since", "2030-01-01T00:00:00Z"}, ExitOK, "No findings."},
		{[]string{"analyze", "--db", db, "--until", "1m"}, ExitOK, "legacy-operator-lock"},
		{[]string{"analyze", "--db", db, "-o", "yaml"}, ExitUsage, `unknown output format "yaml"`},
		{[]string{"analyze", "--db", db, "--html-charts", "3"}, ExitUsage, "--html-charts applies to the HTML report"},
		{[]string{"run", "--html-charts", "3", "x"}, ExitUsage, "--html-charts applies to the HTML report"},
		{[]string{"analyze", "--db", db, "--namespace", "kube-system"}, ExitOK, "No findings."},
		{[]string{"analyze", "--db", db, "--namespace", "lab", "--fail-on", "warning"}, ExitFindings, "2 findings at or above warning"},
		{[]string{"rules", "list"}, ExitOK, "endpoint-flapping"},
		{[]string{"rules", "show", "watch-rewind"}, ExitOK, "References:"},
		{[]string{"rules", "show", "nope"}, ExitUsage, `unknown rule "nope"`},
	}
	for _, tt := range tests {
		r := runCLI(t, tt.args...)
		if r.code != tt.code || !strings.Contains(r.stdout+r.stderr, tt.out) {
			t.Errorf("kubesift %v: exit %d, want %d and %q in\n%s%s", tt.args, r.code, tt.code, tt.out, r.stdout, r.stderr)
		}
	}
	r := runCLI(t, "analyze", "--db", db, "-o", "json")
	var doc struct {
		Findings []map[string]any `json:"findings"`
		Rules    []map[string]any `json:"rules"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &doc); err != nil || len(doc.Findings) == 0 || len(doc.Rules) != 6 {
		t.Fatalf("-o json: %v %s", err, r.stdout)
	}
	for _, k := range []string{"rule", "severity", "namespace", "name", "subject", "first_seen", "last_seen", "count", "summary", "evidence"} {
		if _, ok := doc.Findings[0][k]; !ok {
			t.Errorf("-o json finding has no %q", k)
		}
	}
	for _, line := range strings.Split(runCLI(t, "analyze", "--db", db).stdout, "\n") {
		if utf8.RuneCountInString(line) > 120 {
			t.Errorf("table line longer than 120 columns: %q", line)
		}
	}
}

func TestSchemaDocIsCurrent(t *testing.T) {
	r := runCLI(t, "schema")
	if r.code != ExitOK {
		t.Fatal(r)
	}
	testutil.Golden(t, "../docs/schema.md", []byte(r.stdout))
}

func TestProgressBarOnlyOnTerminal(t *testing.T) {
	for _, tt := range []struct {
		terminal, quiet, bar bool
	}{{true, false, true}, {false, false, false}, {true, true, false}} {
		e := &env{stderr: io.Discard, isTerminal: func(uintptr) bool { return tt.terminal }}
		f := ingestFlags{kind: "auto", maxLineBytes: 1 << 20}
		opt, err := f.options(e, tt.quiet)
		if err != nil {
			t.Fatal(err)
		}
		if (opt.Progress != nil) != tt.bar {
			t.Errorf("terminal %v, quiet %v: progress bar %v, want %v", tt.terminal, tt.quiet, opt.Progress != nil, tt.bar)
		}
	}
	var buf bytes.Buffer
	p := newProgressBar(&buf)
	p.Begin("audit.log", 200<<20)
	for range 2 {
		time.Sleep(150 * time.Millisecond) // past the bar's redraw throttle
		p.Update(50<<20, 30000)
	}
	if s := buf.String(); !strings.Contains(s, "audit.log 30000 lines (") || !strings.Contains(s, "25%") || !strings.Contains(s, "52/210 MB") {
		t.Errorf("progress bar shows %q; want the file, lines/s, 25%% and bytes", s)
	}
	p.End()
}

// TestUserRulesAndParams: --rules adds a rule from a directory, and --set changes a parameter
// that the query receives as a named parameter.
func TestUserRulesAndParams(t *testing.T) {
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "busy-user.yaml"), []byte(`id: busy-user
title: A user sends many requests
severity: info
description: Counts requests per user.
remediation: Look at the user.
references: [https://kubernetes.io/docs/tasks/debug/debug-cluster/audit/]
inputs: [audit_events]
params:
  - name: min_requests_count
    default: 200
    description: requests from one user that make a finding
summary: '{{.Name}} sent {{.Facts.requests}} requests'
`), 0o644)
	os.WriteFile(filepath.Join(dir, "busy-user.sql"), []byte(`SELECT 'busy-user' AS rule, 'info' AS severity, cluster, '' AS namespace, username AS name,
  username AS subject, min(stage_at) AS first_seen, max(stage_at) AS last_seen, count(*) AS count,
  struct_pack(requests := count(*)) AS facts, to_json(list(audit_id ORDER BY audit_id)[1:3]) AS evidence
FROM audit_events
WHERE stage_at BETWEEN coalesce($since, '-infinity'::TIMESTAMPTZ) AND coalesce($until, 'infinity'::TIMESTAMPTZ)
GROUP BY cluster, username HAVING count(*) >= $min_requests_count ORDER BY first_seen, name`), 0o644)
	db := loadedDB(t)
	r := runCLI(t, "analyze", "--db", db, "--rules", dir, "--rule", "busy-user", "-o", "csv")
	if r.code != ExitOK || !strings.Contains(r.stdout, "busy-user,info,,,system:apiserver,") || !strings.Contains(r.stdout, ",system:apiserver sent ") || strings.Contains(r.stdout, ",admin,") {
		t.Errorf("user rule: %+v", r)
	}
	r = runCLI(t, "analyze", "--db", db, "--rules", dir, "--rule", "busy-user", "--set", "busy-user.min_requests_count=150", "-o", "csv")
	if !strings.Contains(r.stdout, ",admin,") {
		t.Errorf("--set min_requests_count=150 did not reach the query (admin sent 170 requests): %s", r.stdout)
	}
	if r := runCLI(t, "analyze", "--db", db, "--rules", dir, "--set", "busy-user.min_requests_count=many"); r.code != ExitUsage {
		t.Errorf("a non-number for an integer param: exit %d", r.code)
	}
	os.WriteFile(filepath.Join(dir, "broken.yaml"), []byte("id: broken\nsevrity: info\n"), 0o644)
	if r := runCLI(t, "rules", "list", "--rules", dir); r.code != ExitError || !strings.Contains(r.stderr, `broken.yaml:2:1: unknown field "sevrity"`) {
		t.Errorf("a broken user rule: %+v", r)
	}
}

// TestRulesTestAndCheck: rules test runs test files against user rules (exit 1 naming the failed
// case), and rules check finds a query that does not run, before any data is loaded.
func TestRulesTestAndCheck(t *testing.T) {
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "err-lines.yaml"), []byte(`id: err-lines
title: Rejected lines
severity: warning
description: Counts rejected lines per file.
remediation: Look at the file.
references: [https://kubernetes.io/docs/tasks/debug/debug-cluster/audit/]
inputs: [ingest_errors]
summary: '{{.Name}}: {{.Count}} rejected {{plural .Count "line" "lines"}}'
params:
  - name: min_lines_count
    default: 2
    description: rejected lines of one file that make a finding
`), 0o644)
	os.WriteFile(filepath.Join(dir, "err-lines.sql"), []byte(`SELECT 'err-lines' AS rule, 'warning' AS severity, '' AS cluster, '' AS namespace, source_file AS name,
  '' AS subject, now() AS first_seen, now() AS last_seen, count(*) AS count, NULL AS facts, to_json(list(line ORDER BY line)) AS evidence
FROM ingest_errors WHERE $since IS NULL OR $until IS NULL GROUP BY source_file HAVING count(*) >= $min_lines_count`), 0o644)
	tests := filepath.Join(dir, "err-lines.test.yaml")
	os.WriteFile(tests, []byte(`rule: err-lines
tests:
  - name: two bad lines
    tables:
      ingest_errors: [{source_file: a.log, line: 3}, {source_file: a.log, line: 9}, {source_file: b.log, line: 1}]
    expect:
      - {object: a.log, count: 2, summary: "a.log: 2 rejected lines"}
  - name: one bad line is fine
    tables:
      ingest_errors: [{source_file: a.log, line: 3}]
    expect: []
  - name: a wrong expectation
    params: {min_lines_count: 1}
    tables:
      ingest_errors: [{source_file: a.log, line: 3}]
    expect: []
`), 0o644)
	r := runCLI(t, "rules", "test", "--rules", dir, tests)
	if r.code != ExitError || !strings.Contains(r.stdout, "ok    "+tests+": two bad lines\n") || !strings.Contains(r.stdout, "ok    "+tests+": one bad line is fine\n") ||
		!strings.Contains(r.stdout, "FAIL  "+tests+": a wrong expectation\n      unexpected: err-lines warning a.log count=1") || !strings.Contains(r.stdout, "2 passed, 1 failed") {
		t.Errorf("rules test: %+v", r)
	}
	badPieces := filepath.Join(dir, "pieces.test.yaml")
	os.WriteFile(badPieces, []byte(`rule: err-lines
tests:
  - name: split
    pieces: 2
    tables:
      ingest_errors: [{source_file: a.log, line: 3}]
    expect: []
  - name: fewer than none
    pieces: -1
    tables:
      ingest_errors: [{source_file: a.log, line: 3}]
    expect: []
`), 0o644)
	if r := runCLI(t, "rules", "test", "--rules", dir, badPieces); r.code != ExitError ||
		!strings.Contains(r.stderr, `tests[0] "split": pieces: rule err-lines does not run in pieces`) ||
		!strings.Contains(r.stderr, `tests[1] "fewer than none": pieces -1: want a positive number of pieces`) {
		t.Errorf("rules test with pieces for a rule that does not run in pieces: %+v", r)
	}
	audit, err := filepath.Abs(realAuditLog)
	if err != nil {
		t.Fatal(err)
	}
	withFiles := filepath.Join(dir, "election.test.yaml")
	os.WriteFile(withFiles, []byte(`rule: election-lock-churn
tests:
  - name: the lab's legacy locks, from its audit log
    files: [`+audit+`]
    expect:
      - {object: lab/legacy-operator-lock, summary: "Endpoints lock lab/legacy-operator-lock has no Service of that name *"}
      - {object: lab/legacy-cm-lock}
`), 0o644)
	if r := runCLI(t, "rules", "test", withFiles); r.code != ExitOK || !strings.Contains(r.stdout, "1 passed, 0 failed") {
		t.Errorf("rules test with input files: %+v", r)
	}
	if r := runCLI(t, "rules", "check", dir); r.code != ExitOK {
		t.Errorf("rules check of good rules: %+v", r)
	}
	os.WriteFile(filepath.Join(dir, "err-lines.sql"), []byte("SELECT no_such_column FROM ingest_errors WHERE $since IS NULL OR $until IS NULL OR $min_lines_count > 0"), 0o644)
	if r := runCLI(t, "rules", "check", dir); r.code != ExitError || !strings.Contains(r.stderr, `err-lines.sql: Binder Error: Referenced column "no_such_column" not found`) {
		t.Errorf("rules check of a broken query: %+v", r)
	}
	// A rule that fails leaves the others' findings (partial); when every rule fails, the run failed,
	// and the report does not read as a clean bill.
	broken := t.TempDir()
	os.WriteFile(filepath.Join(broken, "broken.yaml"), []byte("id: broken\ntitle: t\nseverity: warning\ndescription: d\nremediation: r\n"+
		"references: [https://example.com]\ninputs: [audit_events]\nsummary: s\n"), 0o644)
	os.WriteFile(filepath.Join(broken, "broken.sql"), []byte("SELECT no_such_column FROM audit_events WHERE $since IS NULL OR $until IS NULL"), 0o644)
	db := loadedDB(t)
	for _, tt := range []struct {
		only []string
		code int
		says string
	}{
		{[]string{"--rule", "broken"}, ExitError, "No findings: every rule failed (see below)."},
		{[]string{"--rule", "broken", "--rule", "watch-rewind"}, ExitPartial, "No findings from the rules that ran; 1 of 2 rules failed (see below)."},
	} {
		for _, format := range []string{"table", "markdown"} {
			r := runCLI(t, append([]string{"analyze", "--db", db, "--rules", broken, "-o", format}, tt.only...)...)
			if r.code != tt.code || !strings.Contains(r.stdout, tt.says) || !strings.Contains(r.stderr, "no_such_column") {
				t.Errorf("%v -o %s: %+v", tt.only, format, r)
			}
		}
	}
}

// TestExitCodeTable: every documented exit code, and which wins when several apply.
func TestExitCodeTable(t *testing.T) {
	dir := t.TempDir()
	garbage := filepath.Join(dir, "garbage.log")
	os.WriteFile(garbage, []byte("not an event\nnor this\n"), 0o600)
	// its last line has no newline: just written, it is held for the next load, and the one
	// line read is rejected
	garbageGrowing := filepath.Join(dir, "garbage-growing.log")
	os.WriteFile(garbageGrowing, []byte(`{"kind":"Event","apiVersion":"audit.k8s.io/v1","auditID":"x"`+"\n"+`{"kind":"Event"`), 0o600)
	notEvidence := filepath.Join(dir, "notes.txt")
	os.WriteFile(notEvidence, []byte("just some notes\n"), 0o600)
	bad := "../ingest/testdata/mixed.bad.log"
	db := func() string { return filepath.Join(t.TempDir(), "k.duckdb") }
	tests := []struct {
		args []string
		code int
	}{
		{[]string{"ingest", "--db", db(), realAuditLog}, ExitOK},
		{[]string{"ingest", "--db", db(), bad}, ExitOK},
		{[]string{"ingest", "--db", db(), "--strict", bad}, ExitRejects},
		{[]string{"ingest", "--db", db(), "--kind", "audit", garbage}, ExitAllRejected},
		{[]string{"ingest", "--db", db(), garbageGrowing}, ExitAllRejected},
		{[]string{"ingest", "--db", db(), realAuditLog, notEvidence}, ExitPartial},
		{[]string{"ingest", "--db", db(), realAuditLog, filepath.Join(dir, "not-there.log")}, ExitPartial},
		{[]string{"run", "--summary", "none", "--strict", bad}, ExitRejects},
		{[]string{"run", "--summary", "none", "--fail-on", "warning", realAuditLog}, ExitFindings},
		{[]string{"run", "--summary", "none", "--fail-on", "warning", "--strict", realAuditLog, bad}, ExitRejects},
		{[]string{"run", "--summary", "none", "--fail-on", "warning", realAuditLog, notEvidence}, ExitPartial},
		{[]string{"run", "--summary", "none", "--kind", "audit", realAuditLog, garbage}, ExitAllRejected},
		{[]string{"query", "--db", db(), "SELECT * FROM no_such_table"}, ExitError},
		{[]string{"ingest", "--strict=maybe", realAuditLog}, ExitUsage},
	}
	for _, tt := range tests {
		if r := runCLI(t, tt.args...); r.code != tt.code {
			t.Errorf("kubesift %v: exit %d, want %d; stderr %q", tt.args, r.code, tt.code, r.stderr)
		}
	}
	r := runCLI(t, "-h")
	for _, c := range exitCodes {
		if !strings.Contains(r.stdout, fmt.Sprintf("  %d  %s\n", c.code, c.doc)) {
			t.Errorf("-h does not document exit code %d", c.code)
		}
	}
}

// TestOutputFilesAreOwnerOnly: reports and exports hold audit data: mode 0600 whatever the
// umask, also for the files DuckDB writes.
func TestOutputFilesAreOwnerOnly(t *testing.T) {
	db := loadedDB(t)
	dir := t.TempDir()
	for _, args := range [][]string{
		{"query", "--db", db, "-o", "csv", "--out", filepath.Join(dir, "q.csv"), "SELECT 1 AS x"},
		{"query", "--db", db, "-o", "parquet", "--out", filepath.Join(dir, "q.parquet"), "SELECT 1 AS x"},
		{"analyze", "--db", db, "-o", "markdown", "--out", filepath.Join(dir, "report.md")},
		{"export", "--db", db, "-o", "parquet", "--table", "audit_events", "--out", filepath.Join(dir, "export")},
	} {
		if r := runCLI(t, args...); r.code != ExitOK {
			t.Fatalf("%v: %+v", args, r)
		}
	}
	err := filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		st, err := os.Stat(p)
		if err == nil && st.Mode().Perm() != 0o600 {
			t.Errorf("%s: mode %v, want 0600", p, st.Mode().Perm())
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
}

// TestIgnoreSuppressions: --ignore lists matching findings apart (not counted for --fail-on),
// an expired suppression is a warning and silences nothing, a bad file is an error.
func TestIgnoreSuppressions(t *testing.T) {
	db := loadedDB(t)
	ignore := filepath.Join(t.TempDir(), "ignore.yaml")
	os.WriteFile(ignore, []byte(`- rule: election-lock-churn
  object: "lab/legacy-cm-*"
  expires: 2099-01-01
  reason: accepted until the operator moves to Leases (OPS-1)
- rule: election-lock-churn
  object: lab/legacy-operator-lock
  expires: 2020-01-01
  reason: old exception
`), 0o644)
	r := runCLI(t, "analyze", "--db", db, "--ignore", ignore, "--fail-on", "warning")
	if r.code != ExitFindings || !strings.Contains(r.stdout, "lab/legacy-operator-lock") ||
		!strings.Contains(r.stdout, "suppressed: 1 (--ignore)\n    warning election-lock-churn lab/legacy-cm-lock: accepted until the operator moves to Leases (OPS-1) (until 2099-01-01)\n") ||
		!strings.Contains(r.stdout, "warning: suppression of election-lock-churn on lab/legacy-operator-lock expired on 2020-01-01 (old exception)") ||
		!strings.Contains(r.stderr, "1 finding at or above warning") {
		t.Errorf("--ignore: %+v", r)
	}
	r = runCLI(t, "analyze", "--db", db, "--ignore", ignore, "-o", "json")
	if !strings.Contains(r.stdout, `"suppressed": [`) || !strings.Contains(r.stdout, `"reason": "accepted until the operator moves to Leases (OPS-1)"`) {
		t.Errorf("--ignore -o json: %s", r.stdout)
	}
	os.WriteFile(ignore, []byte("- rule: no-such-rule\n  object: x\n"), 0o644)
	if r := runCLI(t, "analyze", "--db", db, "--ignore", ignore); r.code != ExitError ||
		!strings.Contains(r.stderr, `entry 1: unknown rule "no-such-rule"`) || !strings.Contains(r.stderr, "entry 1: missing expires") || !strings.Contains(r.stderr, "entry 1: missing reason") {
		t.Errorf("a bad --ignore file: %+v", r)
	}
}

// TestStaleTempFilesRemoved: the temporary file a killed kubesift left beside an output file
// is removed by the next write of that file, and so is one named after the writer's own pid (a
// container's process, killed and started again with the same pid); one of another running
// process is kept.
func TestStaleTempFilesRemoved(t *testing.T) {
	dir := t.TempDir()
	exited := exec.Command("true")
	if err := exited.Run(); err != nil {
		t.Fatal(err)
	}
	running := exec.Command("sleep", "60")
	if err := running.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { running.Process.Kill(); running.Wait() }()
	stale := filepath.Join(dir, fmt.Sprintf(".q.csv.tmp-%d-123", exited.Process.Pid))
	samePid := filepath.Join(dir, fmt.Sprintf(".q.csv.tmp-%d-789", os.Getpid()))
	live := filepath.Join(dir, fmt.Sprintf(".q.csv.tmp-%d-456", running.Process.Pid))
	for _, f := range []string{stale, samePid, live} {
		os.WriteFile(f, []byte("half"), 0o600)
	}
	if r := runCLI(t, "query", "--db", loadedDB(t), "-o", "csv", "--out", filepath.Join(dir, "q.csv"), "SELECT 1 AS x"); r.code != ExitOK {
		t.Fatal(r)
	}
	for _, f := range []string{stale, samePid} {
		if _, err := os.Stat(f); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("the stale temporary file %s is still there: %v", filepath.Base(f), err)
		}
	}
	if _, err := os.Stat(live); err != nil {
		t.Errorf("the temporary file of a running process was removed: %v", err)
	}
}

// TestMetricsFileFollowsUmask: the metrics file is readable by node_exporter (0644) unless the
// umask says otherwise; it is never widened past the umask.
func TestMetricsFileFollowsUmask(t *testing.T) {
	old := syscall.Umask(0o077)
	defer syscall.Umask(old)
	metrics := filepath.Join(t.TempDir(), "kubesift.prom")
	if r := runCLI(t, "run", "--summary", "none", "--metrics-file", metrics, realAuditLog); r.code != ExitOK {
		t.Fatal(r)
	}
	if st, err := os.Stat(metrics); err != nil || st.Mode().Perm() != 0o600 {
		t.Errorf("metrics file under umask 077: %v, %v", st.Mode().Perm(), err)
	}
}
