package analyze

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/kubesift/kubesift/ingest"
	"github.com/kubesift/kubesift/internal/testdb"
	"github.com/kubesift/kubesift/internal/testutil"
	"github.com/kubesift/kubesift/rules"
	"github.com/kubesift/kubesift/store"
)

// TestMain runs from the repository root, so that evidence names files as users see them
// (samples/flapping/audit.log).
func TestMain(m *testing.M) {
	if err := os.Chdir(".."); err != nil {
		panic(err)
	}
	os.Exit(m.Run())
}

func builtin(t *testing.T) []rules.Rule {
	t.Helper()
	rs, err := rules.Builtin()
	if err != nil {
		t.Fatal(err)
	}
	return rs
}

// scenarioDB returns a database of the test's own with dir (a recording in samples/, or all of
// them) loaded, taken from the test database cache that htmlreport's tests share (internal/testdb).
func scenarioDB(t *testing.T, dir string, opt ingest.Options) *store.DB {
	t.Helper()
	return testdb.Ingest(t, opt, dir)
}

// loadDB loads dir with opt into an in-memory database: for the copies of recordings a test
// changes, which a cache would not see again.
func loadDB(t *testing.T, dir string, opt ingest.Options) *store.DB {
	t.Helper()
	db := testdb.Empty(t)
	inputs, err := ingest.ExpandPaths([]string{dir})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ingest.New(db, opt).Ingest(context.Background(), inputs); err != nil {
		t.Fatalf("loading %s: %v", dir, err)
	}
	return db
}

// firesOnDerivedRecording are the rules that fire on a copy of a recording changed by a test
// instead of on a scenario as recorded: probable-election-lock needs an audit log at Metadata
// level (TestMetadataCopyIsBlindAndTheLockFallbackFires).
var firesOnDerivedRecording = map[string]bool{"probable-election-lock": true}

// TestScenarioGoldens runs every rule on every recorded scenario and compares the findings
// with samples/<scenario>/findings.golden (UPDATE_GOLDENS=1 rewrites them). It also checks that every rule
// fires on some scenario and that nothing fires on samples/healthy.
func TestScenarioGoldens(t *testing.T) {
	rs := builtin(t)
	fired := map[string]bool{}
	for _, sc := range testutil.Scenarios(t, "samples") {
		t.Run(sc, func(t *testing.T) {
			rep, err := Run(context.Background(), scenarioDB(t, filepath.Join("samples", sc), ingest.Options{}), rs, Options{})
			if err != nil {
				t.Fatal(err)
			}
			for _, f := range rep.findings {
				fired[f.Rule] = true
			}
			if sc == "healthy" && len(rep.findings) > 0 {
				t.Errorf("healthy: %d findings, first %s on %s/%s: %s", len(rep.findings), rep.findings[0].Rule, rep.findings[0].Namespace, rep.findings[0].Name, rep.findings[0].Summary)
			}
			var got bytes.Buffer
			if err := WriteContext(context.Background(), &got, rep, "json"); err != nil {
				t.Fatal(err)
			}
			testutil.Golden(t, filepath.Join("samples", sc, "findings.golden"), got.Bytes())
		})
	}
	for _, r := range rs {
		if !fired[r.ID] && !firesOnDerivedRecording[r.ID] {
			t.Errorf("rule %s fires on no scenario in samples/", r.ID)
		}
	}
}

// TestRulesOnEmptyTables: every query runs on empty tables, returns the contract columns and
// no rows; and analyze reports the rules as not evaluated.
func TestRulesOnEmptyTables(t *testing.T) {
	db := testdb.Empty(t)
	conn, err := openSandbox(context.Background(), db)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	rs := builtin(t)
	spill := &evidenceSpill{}
	defer spill.Close()
	for _, r := range rs {
		findings, err := runRule(context.Background(), db.Schema, conn, spill, r, Options{}, new(RuleProfile))
		if err != nil {
			t.Errorf("%s on empty tables: %v", r.ID, err)
		} else if len(findings) != 0 {
			t.Errorf("%s on empty tables: %d findings", r.ID, len(findings))
		}
		args := pieceArgs(r, Args(r, Options{}), 0, 1)
		drop, err := stage(context.Background(), conn, r, args, unsorted)
		if err != nil {
			t.Errorf("%s: %v", r.ID, err)
		}
		rows, err := conn.QueryContext(context.Background(), r.SQL, args...)
		if err != nil {
			drop()
			continue
		}
		types, _ := rows.ColumnTypes()
		var got []string
		for _, ct := range types {
			got = append(got, ct.DatabaseTypeName())
		}
		rows.Close()
		if err := drop(); err != nil {
			t.Errorf("%s: %v", r.ID, err)
		}
		want := []string{"VARCHAR", "VARCHAR", "VARCHAR", "VARCHAR", "VARCHAR", "VARCHAR", "TIMESTAMPTZ", "TIMESTAMPTZ", "BIGINT", "STRUCT", "JSON"}
		if len(got) == len(want) && strings.HasPrefix(got[9], "STRUCT") {
			got[9] = "STRUCT" // its fields are the rule's own
		}
		if !slices.Equal(got, want) {
			t.Errorf("%s column types %v, want %v", r.ID, got, want)
		}
		for _, in := range r.Inputs {
			if _, ok := ingest.Schema().Lookup(in); !ok {
				t.Errorf("%s: input %q is not a table", r.ID, in)
			}
		}
	}
	rep, err := Run(context.Background(), db, rs, Options{})
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range rep.Outcomes {
		if o.Evaluated || o.Reason == "" {
			t.Errorf("%s on an empty database: evaluated %v, reason %q", o.Rule.ID, o.Evaluated, o.Reason)
		}
	}
}

// oneRejectedLine returns an in-memory database whose ingest_errors holds one row (a.log line 3,
// reason bad), the input of the test rules built on it.
func oneRejectedLine(t *testing.T) *store.DB {
	t.Helper()
	db := testdb.Empty(t)
	if _, err := db.ExecContext(context.Background(), "INSERT INTO ingest_errors (source_file, line, reason) VALUES ('a.log', 3, 'bad')"); err != nil {
		t.Fatal(err)
	}
	return db
}

// TestEvidenceAsTheQueryWroteIt: a rule's evidence reaches the report as the JSON its query
// returned (keys in its order, integers beyond float64's precision exact), from a JSON column, from
// JSON text in a VARCHAR and from a list, and text that is not JSON fails the rule, naming it.
func TestEvidenceAsTheQueryWroteIt(t *testing.T) {
	db := oneRejectedLine(t)
	rule := func(id, evidence string) rules.Rule {
		return rules.Rule{ID: id, Severity: rules.Warning, Inputs: []string{"ingest_errors"}, Source: "test", Summary: "s",
			SQL: "SELECT '" + id + "' AS rule, 'warning' AS severity, '' AS cluster, '' AS namespace, '" + id + "' AS name, '' AS subject, " +
				"now() AS first_seen, now() AS last_seen, 1 AS count, NULL AS facts, " + evidence + " AS evidence " +
				"FROM ingest_errors WHERE $since IS NULL AND $until IS NULL -- a comment ends the query;"}
	}
	rs := []rules.Rule{
		rule("a-json", `to_json([struct_pack(z := 9007199254740993, a := 'x')])`),
		rule("b-text", `'[{"z": 1, "a": [ ]}]'`),
		rule("c-list", `[struct_pack(z := 2, a := NULL)]`),
		rule("d-null", `NULL::JSON`),
		rule("e-not-json", `'[{"z": 1'`),
	}
	rep, err := Run(context.Background(), db, rs, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer rep.Close()
	want := map[string]string{"a-json": `[{"z":9007199254740993,"a":"x"}]`, "b-text": `[{"z": 1, "a": [ ]}]`, "c-list": `[{"z":2,"a":null}]`, "d-null": `[]`}
	for _, f := range rep.findings {
		got, err := f.Evidence()
		if err != nil || string(got) != want[f.Rule] {
			t.Errorf("%s: evidence %s, %v; want %s", f.Rule, got, err, want[f.Rule])
		}
		delete(want, f.Rule)
	}
	if len(want) > 0 {
		t.Errorf("no finding of %v", want)
	}
	failed := rep.Failed()
	if len(failed) != 1 || failed[0].Rule.ID != "e-not-json" || !strings.Contains(failed[0].Err.Error(), `evidence is not JSON`) {
		t.Errorf("failed outcomes %+v", failed)
	}
}

// TestFailingRuleKeepsTheOthers: a rule whose query fails is reported with its error; the rules
// before and after it still run and keep their findings.
func TestFailingRuleKeepsTheOthers(t *testing.T) {
	db := oneRejectedLine(t)
	rule := func(id, sql string) rules.Rule {
		return rules.Rule{ID: id, Severity: rules.Warning, Inputs: []string{"ingest_errors"}, Source: "test", Summary: "{{.Facts.reason}} in {{.Name}}",
			SQL: "SELECT '" + id + "' AS rule, 'warning' AS severity, '' AS cluster, '' AS namespace, source_file AS name, '' AS subject, " +
				"now() AS first_seen, now() AS last_seen, CAST(" + sql + " AS BIGINT) AS count, struct_pack(reason := reason) AS facts, " +
				"to_json([line]) AS evidence FROM ingest_errors WHERE $since IS NULL AND $until IS NULL"}
	}
	rs := []rules.Rule{rule("a-ok", "line"), rule("b-broken", "error('out of memory')"), rule("c-ok", "line")}
	rep, err := Run(context.Background(), db, rs, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.findings) != 2 || rep.findings[0].Summary != "bad in a.log" {
		t.Errorf("findings %+v, want a-ok and c-ok", rep.findings)
	}
	failed := rep.Failed()
	if len(failed) != 1 || failed[0].Rule.ID != "b-broken" || !strings.Contains(failed[0].Err.Error(), "out of memory") || failed[0].Evaluated {
		t.Fatalf("failed outcomes %+v", failed)
	}
	var table, js bytes.Buffer
	WriteContext(context.Background(), &table, rep, "table")
	WriteContext(context.Background(), &js, rep, "json")
	if !strings.Contains(table.String(), "failed: rule b-broken (test): ") || !strings.Contains(js.String(), `"error": "rule b-broken (test): `) {
		t.Errorf("the failure is not shown:\n%s\n%s", table.String(), js.String())
	}
}

// TestEvidenceFileLeavesNothingBehind: the findings' evidence goes to a file in $TMPDIR that is
// unlinked at once (nothing is left there whatever happens to the process), is read back by the
// writers while the report is open, and cannot be read once it is closed.
func TestEvidenceFileLeavesNothingBehind(t *testing.T) {
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp)
	db := testdb.Empty(t)
	if _, err := db.ExecContext(context.Background(), "INSERT INTO ingest_errors (source_file, line, reason) VALUES ('a.log', 3, 'bad'), ('b.log', 7, 'worse')"); err != nil {
		t.Fatal(err)
	}
	r := rules.Rule{ID: "r", Severity: rules.Warning, Inputs: []string{"ingest_errors"}, Source: "test", Summary: "{{.Facts.reason}}",
		SQL: "SELECT 'r' AS rule, 'warning' AS severity, '' AS cluster, '' AS namespace, source_file AS name, '' AS subject, " +
			"TIMESTAMPTZ '2026-11-21 05:00:00+00' AS first_seen, TIMESTAMPTZ '2026-11-21 05:00:00+00' AS last_seen, CAST(line AS BIGINT) AS count, " +
			"struct_pack(reason := reason) AS facts, to_json([{'line': line, 'reason': reason}]) AS evidence FROM ingest_errors " +
			"WHERE $since IS NULL AND $until IS NULL"}
	rep, err := Run(context.Background(), db, []rules.Rule{r}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if left, _ := filepath.Glob(filepath.Join(tmp, "kubesift-evidence-*")); len(left) > 0 {
		t.Errorf("evidence files in $TMPDIR while the report is open: %v", left)
	}
	if len(rep.findings) != 2 {
		t.Fatalf("%d findings, want 2", len(rep.findings))
	}
	for i, want := range []string{`[{"line":3,"reason":"bad"}]`, `[{"line":7,"reason":"worse"}]`} {
		got, err := rep.findings[i].Evidence()
		if err != nil || string(got) != want || rep.findings[i].EvidenceCount() != 1 {
			t.Errorf("finding %d: evidence %s (%d items), %v; want %s", i+1, got, rep.findings[i].EvidenceCount(), err, want)
		}
	}
	var ndjson bytes.Buffer
	if err := WriteContext(context.Background(), &ndjson, rep, "ndjson"); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(ndjson.String(), `"evidence":[{"line":7,"reason":"worse"}]}`) {
		t.Errorf("ndjson lacks the second finding's evidence:\n%s", ndjson.String())
	}
	if err := rep.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := rep.findings[0].Evidence(); err == nil {
		t.Error("evidence read after the report was closed")
	}
	if err := WriteContext(context.Background(), &ndjson, rep, "json"); err == nil {
		t.Error("a closed report was written without its evidence")
	}
}

// TestProfile checks that --profile's numbers are filled in: every evaluated rule's time and, on
// Linux, the peak memory while it ran, and that the printed profile names every rule.
func TestProfile(t *testing.T) {
	db := scenarioDB(t, "samples/flapping", ingest.Options{})
	rep, err := Run(context.Background(), db, builtin(t), Options{Profile: true})
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	if err := rep.WriteProfile(&out); err != nil {
		t.Fatal(err)
	}
	var highest int64
	for _, o := range rep.Outcomes {
		highest = max(highest, o.Profile.PeakRSS)
		if !strings.Contains(out.String(), o.Rule.ID) {
			t.Errorf("profile does not name %s:\n%s", o.Rule.ID, out.String())
		}
		if !o.Evaluated {
			continue
		}
		if o.Profile.Elapsed <= 0 {
			t.Errorf("%s: no time measured", o.Rule.ID)
		}
		if _, err := os.Stat("/proc/self/clear_refs"); err == nil && o.Profile.PeakRSS <= 0 {
			t.Errorf("%s: no peak memory measured on Linux", o.Rule.ID)
		}
		if inPieces := o.Rule.Pieces != nil; inPieces != (o.Profile.Pieces > 0) {
			t.Errorf("%s: runs in pieces: %v; pieces counted: %d", o.Rule.ID, inPieces, o.Profile.Pieces)
		}
	}
	// the last line: the total time and the highest peak of the rules (the analysis's own peak)
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	if last := strings.Fields(lines[len(lines)-1]); highest > 0 && (len(last) != 6 || strings.Join(last[4:], " ") != mebibytes(highest)) {
		t.Errorf("the last line does not give the highest peak, %s:\n%s", mebibytes(highest), out.String())
	}
}

// TestPiecesFollowTheWindow: a rule runs in one piece per pieces.rows rows of the table in its
// window, counted from the start of its lookback, not in the whole table. The window is the last
// ten minutes of samples/' audit events (2026-11-23): a rule whose tables have no rows in the
// window is not evaluated at all.
func TestPiecesFollowTheWindow(t *testing.T) {
	ctx := context.Background()
	db := scenarioDB(t, "samples", ingest.Options{ClusterPerDir: true})
	rs, err := rules.LoadDir("analyze/testdata/piececount")
	if err != nil {
		t.Fatal(err)
	}
	var last time.Time
	if err := db.QueryRowContext(ctx, "SELECT max(stage_at) FROM audit_events").Scan(&last); err != nil {
		t.Fatal(err)
	}
	mid := last.Add(-10 * time.Minute)
	until := mid.Add(15 * time.Minute)
	for _, tc := range []struct {
		name         string
		since, until *time.Time
		from         *time.Time // where the counted rows start: the lookback's start
	}{
		{"no window", nil, nil, nil},
		{"a window", &mid, &until, ptr(mid.Add(-time.Hour))},
	} {
		rows, err := db.Schema.RowCountIn(ctx, db, "audit_events", tc.from, tc.until)
		if err != nil {
			t.Fatal(err)
		}
		want := rs[0].Pieces.Count(rows, 1)
		rep, err := Run(ctx, db, rs, Options{Since: tc.since, Until: tc.until})
		if err != nil || rep.Outcomes[0].Err != nil {
			t.Fatalf("%s: %v %v", tc.name, err, rep.Outcomes[0].Err)
		}
		if int64(len(rep.findings)) != want || !strings.HasSuffix(rep.findings[0].Subject, fmt.Sprintf(" of %d", want)) {
			t.Errorf("%s: %d findings (%s), want %d pieces for %d rows", tc.name, len(rep.findings), rep.findings[0].Subject, want, rows)
		}
	}
	all, _ := db.Schema.RowCount(ctx, db, "audit_events")
	if windowed, _ := db.Schema.RowCountIn(ctx, db, "audit_events", ptr(mid.Add(-time.Hour)), &until); rs[0].Pieces.Count(windowed, 1) >= rs[0].Pieces.Count(all, 1) {
		t.Errorf("the window (%d rows) does not make fewer pieces than the whole table (%d rows)", windowed, all)
	}
	// pieces.also, here a transient stage (counted before the transient stages are dropped), makes
	// more pieces when its rows ask for more, and never fewer
	var creates int64
	if err := db.QueryRowContext(ctx, "SELECT count(*) FROM audit_events WHERE verb = 'create'").Scan(&creates); err != nil || creates == 0 {
		t.Fatalf("%d creates in the samples: %v", creates, err)
	}
	byRows := rs[0].Pieces.Count(all, 1)
	for _, per := range []int64{max(creates/(2*byRows), 1), creates} {
		r := rs[0]
		pieces := *r.Pieces
		pieces.Also = &rules.Pieces{Table: "stage_creates", Rows: per}
		r.Pieces = &pieces
		r.Stages = []rules.Stage{{Table: "stage_creates", Query: "creates", SQL: "SELECT * FROM audit_events WHERE verb = 'create'", Transient: true}}
		want := max(byRows, (creates+per-1)/per)
		rep, err := Run(ctx, db, []rules.Rule{r}, Options{})
		if err != nil || rep.Outcomes[0].Err != nil {
			t.Fatalf("pieces.also of %d rows: %v %v", per, err, rep.Outcomes[0].Err)
		}
		if int64(len(rep.findings)) != want || !strings.HasSuffix(rep.findings[0].Subject, fmt.Sprintf(" of %d", want)) {
			t.Errorf("pieces.also of %d rows of %d: %d findings (%s), want %d pieces (%d by the audit events)",
				per, creates, len(rep.findings), rep.findings[0].Subject, want, byRows)
		}
	}
	if per := max(creates/(2*byRows), 1); (creates+per-1)/per <= byRows {
		t.Errorf("the samples' %d creates in pieces of %d make no more pieces than their %d audit events (%d)", creates, per, all, byRows)
	}
	// under half the default memory limit, pieces of half the rows: twice as many
	half := reopen(t, db, "425MB")
	rep, err := Run(ctx, half, rs, Options{})
	if err != nil || rep.Outcomes[0].Err != nil {
		t.Fatalf("half the memory: %v %v", err, rep.Outcomes[0].Err)
	}
	want := rs[0].Pieces.Count(all, 0.5)
	if want <= rs[0].Pieces.Count(all, 1) || int64(len(rep.findings)) != want ||
		!strings.HasSuffix(rep.findings[0].Subject, fmt.Sprintf(" of %d", want)) {
		t.Errorf("half the memory: %d findings (%s), want %d pieces for %d rows (%d under the default limit)",
			len(rep.findings), rep.findings[0].Subject, want, all, rs[0].Pieces.Count(all, 1))
	}
}

// TestPiecesThatRunOutOfMemorySplit runs the user rule of analyze/testdata/piecesplit, whose
// aggregate cannot spill, in one piece under a memory limit that piece exceeds: the piece runs
// again as smaller ones, the rule does not fail, its findings are those of one piece under the
// default limit, and the profile counts the split.
func TestPiecesThatRunOutOfMemorySplit(t *testing.T) {
	ctx := context.Background()
	db := scenarioDB(t, "samples", ingest.Options{ClusterPerDir: true})
	rs, err := rules.LoadDir("analyze/testdata/piecesplit")
	if err != nil {
		t.Fatal(err)
	}
	roomy, err := Run(ctx, db, rs, Options{Pieces: 1})
	if err != nil || roomy.Outcomes[0].Err != nil {
		t.Fatalf("under the default limit: %v %v", err, roomy.Outcomes[0].Err)
	}
	if p := roomy.Outcomes[0].Profile; p.Pieces != 1 || p.Splits != 0 || len(roomy.findings) == 0 {
		t.Fatalf("under the default limit: %d pieces, %d split, %d findings", p.Pieces, p.Splits, len(roomy.findings))
	}
	rep, err := Run(ctx, reopen(t, db, "100MB"), rs, Options{Pieces: 1})
	if err != nil || rep.Outcomes[0].Err != nil {
		t.Fatalf("under 100MB: %v %v", err, rep.Outcomes[0].Err)
	}
	if p := rep.Outcomes[0].Profile; p.Splits == 0 || p.Pieces < splitFactor {
		t.Errorf("under 100MB: %d pieces, %d split; want the one piece split", p.Pieces, p.Splits)
	}
	want, _ := json.Marshal(roomy.findings)
	got, _ := json.Marshal(rep.findings)
	if !bytes.Equal(got, want) {
		t.Errorf("the split pieces found %d findings, one piece %d; they differ", len(rep.findings), len(roomy.findings))
	}
}

// TestRuleOutOfMemorySaysWhatToDo runs a user rule whose aggregate cannot spill under 100MB: it
// fails, and its error says what the user can change (the memory limit, the window) instead of
// DuckDB's advice on settings the sandbox locks, and is still DuckDB's out-of-memory error.
func TestRuleOutOfMemorySaysWhatToDo(t *testing.T) {
	ctx := context.Background()
	db := scenarioDB(t, "samples", ingest.Options{ClusterPerDir: true})
	rs, err := rules.LoadDir("analyze/testdata/outofmemory")
	if err != nil {
		t.Fatal(err)
	}
	rep, err := Run(ctx, reopen(t, db, "100MB"), rs, Options{})
	if err != nil {
		t.Fatal(err)
	}
	out := rep.Outcomes[0]
	if out.Err == nil {
		t.Fatal("the rule did not run out of memory under 100MB")
	}
	if !store.IsOutOfMemory(out.Err) {
		t.Errorf("not DuckDB's out-of-memory error any more: %v", out.Err)
	}
	for _, msg := range []string{out.Err.Error(), out.Reason} {
		for _, want := range []string{"Out of Memory Error", "--memory-limit 100MB", "raise --memory-limit", "--since/--until"} {
			if !strings.Contains(msg, want) {
				t.Errorf("%q does not say %q", msg, want)
			}
		}
		if strings.Contains(msg, "SET ") || strings.Contains(msg, "\n") {
			t.Errorf("%q keeps DuckDB's advice on settings", msg)
		}
	}
}

// reopen closes db and opens its file again under the memory limit limit, until the test ends.
func reopen(t *testing.T, db *store.DB, limit string) *store.DB {
	t.Helper()
	path := db.Path
	db.Close()
	again, err := store.Open(context.Background(), path, ingest.Schema(), store.Options{MemoryLimit: limit})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { again.Close() })
	return again
}

func ptr[T any](v T) *T { return &v }

// TestPiecesGiveTheSameFindings runs every rule that runs in pieces (the built-in ones, if any, and
// the user rule of analyze/testdata/pieces) over all the recordings (one cluster each) split into
// several pieces, and checks that the findings are those of one piece.
func TestPiecesGiveTheSameFindings(t *testing.T) {
	ctx := context.Background()
	db := scenarioDB(t, "samples", ingest.Options{ClusterPerDir: true})
	users, err := rules.LoadDir("analyze/testdata/pieces")
	if err != nil {
		t.Fatal(err)
	}
	tested := 0
	for _, r := range append(builtin(t), users...) {
		if r.Pieces == nil {
			continue
		}
		tested++
		var got [2]string
		for i, pieces := range []int64{1, 7} {
			rep, err := Run(ctx, db, []rules.Rule{r}, Options{Pieces: pieces})
			if err != nil || rep.Outcomes[0].Err != nil {
				t.Fatalf("%s: %v %v", r.ID, err, rep.Outcomes[0].Err)
			}
			if len(rep.findings) == 0 {
				t.Fatalf("%s finds nothing in samples/", r.ID)
			}
			b, _ := json.MarshalIndent(rep.findings, "", " ")
			got[i] = string(b)
		}
		if got[0] != got[1] {
			t.Errorf("%s: findings in 7 pieces differ from those in one:\n%s\nwant\n%s", r.ID, got[1], got[0])
		}
	}
	if tested == 0 {
		t.Error("no rule runs in pieces")
	}
}
