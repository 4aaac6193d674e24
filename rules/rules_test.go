package rules

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

func TestParseGoodAndBad(t *testing.T) {
	// Parse checks the id against the name it is given: the rule's file is minimal.yaml.
	r, errs := Parse("testdata/minimal.yaml", mustRead(t, "testdata/minimal.good.yaml"))
	if len(errs) != 0 {
		t.Fatalf("minimal rule: %v", errs)
	}
	if r.Params[0].Default != int64(10) {
		t.Errorf("default %v (%T), want int64 10", r.Params[0].Default, r.Params[0].Default)
	}

	_, errs = Parse("testdata/unknown-field.yaml", mustRead(t, "testdata/unknown-field.bad.yaml"))
	if len(errs) != 1 || !strings.Contains(errs[0].Error(), `unknown-field.yaml:8:1: unknown field "sevrity"`) {
		t.Errorf("unknown field: %v", errs)
	}

	_, errs = Parse("testdata/many-problems.yaml", mustRead(t, "testdata/many-problems.bad.yaml"))
	all := joinErrs(errs)
	for _, want := range []string{
		`:1:5: id "Not_The_File_Name": want lowercase`, ":2:8: missing title", `:3:11: severity: unknown severity "urgent"`,
		`:6:14: reference "not a url" is not a URL`, ":7:9: missing inputs", `:9:11: param "threshold": put its unit in its name`,
		`:12:11: param "threshold" declared twice`, `:13:14: param "threshold": default [1 2] ([]interface {}) is not a number, string or boolean`,
		`:15:11: param "since" is reserved`, `:18:10: summary: template: summary:1: function "nosuch" not defined`,
	} {
		if !strings.Contains(all, want) {
			t.Errorf("many-problems.bad.yaml: no error %q in\n%s", want, all)
		}
	}
}

func TestLoadDirReportsEverythingAtOnce(t *testing.T) {
	dir := t.TempDir()
	good := strings.ReplaceAll(string(mustRead(t, "testdata/minimal.good.yaml")), "minimal", "mine")
	os.WriteFile(filepath.Join(dir, "mine.yaml"), []byte(good), 0o644)
	os.WriteFile(filepath.Join(dir, "mine.sql"), []byte("SELECT $window_minutes, $since, $until, $undeclared_count -- $comment_is_fine\n"), 0o644)
	os.WriteFile(filepath.Join(dir, "lonely.yaml"), []byte(strings.ReplaceAll(good, "id: mine", "id: lonely")), 0o644)
	os.WriteFile(filepath.Join(dir, "broken.yaml"), []byte("id: [\n"), 0o644)
	_, err := LoadDir(dir)
	if err == nil {
		t.Fatal("no error")
	}
	for _, want := range []string{"mine.sql: $undeclared_count is not a declared param", "no query lonely.sql", "broken.yaml: yaml:"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("missing %q in\n%v", want, err)
		}
	}
	if strings.Contains(err.Error(), "comment_is_fine") {
		t.Errorf("a $name in a comment counted as a placeholder: %v", err)
	}
	os.WriteFile(filepath.Join(dir, "mine.sql"), []byte("SELECT $window_minutes, $since"), 0o644)
	os.Remove(filepath.Join(dir, "lonely.yaml"))
	os.Remove(filepath.Join(dir, "broken.yaml"))
	if _, err := LoadDir(dir); err == nil || !strings.Contains(err.Error(), "must use $until") {
		t.Errorf("a query without $until: %v", err)
	}
}

// TestBuiltinRulesArePairs: every built-in rule file has its query (queries tests the converse)
// and all of them load.
func TestBuiltinRulesArePairs(t *testing.T) {
	rs, err := Builtin()
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, r := range rs {
		ids = append(ids, r.ID)
	}
	for _, want := range []string{"watch-rewind", "endpoints-phantom-recreate", "election-lock-churn", "probe-conntrack-exhaustion", "endpoint-flapping"} {
		if !slices.Contains(ids, want) {
			t.Errorf("built-in rule %s is missing (rule ids are part of the contract)", want)
		}
	}
}

func TestMergeOverrides(t *testing.T) {
	base := []Rule{{ID: "a", Title: "base a"}, {ID: "b"}}
	got := Merge(base, []Rule{{ID: "a", Title: "user a"}, {ID: "c"}})
	if len(got) != 3 || got[0].Title != "user a" || got[2].ID != "c" {
		t.Errorf("merge: %+v", got)
	}
}

func mustRead(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func joinErrs(errs []error) string {
	var b strings.Builder
	for _, e := range errs {
		b.WriteString(e.Error() + "\n")
	}
	return b.String()
}

// TestLookback: a declared lookback must be a positive duration and its query must use
// $lookback_since; a rule without one must not.
func TestLookback(t *testing.T) {
	dir := t.TempDir()
	good := strings.ReplaceAll(string(mustRead(t, "testdata/minimal.good.yaml")), "minimal", "mine")
	os.WriteFile(filepath.Join(dir, "mine.yaml"), []byte(good+"lookback: 90m\n"), 0o644)
	os.WriteFile(filepath.Join(dir, "mine.sql"), []byte("SELECT $window_minutes, $since, $until"), 0o644)
	if _, err := LoadDir(dir); err == nil || !strings.Contains(err.Error(), "declares lookback 90m but the query does not use $lookback_since") {
		t.Errorf("lookback without $lookback_since: %v", err)
	}
	os.WriteFile(filepath.Join(dir, "mine.sql"), []byte("SELECT $window_minutes, $since, $until, $lookback_since"), 0o644)
	rs, err := LoadDir(dir)
	if err != nil || rs[0].LookbackDuration() != 90*time.Minute {
		t.Errorf("lookback 90m: %v %v", rs, err)
	}
	os.WriteFile(filepath.Join(dir, "mine.yaml"), []byte(good+"lookback: soon\n"), 0o644)
	if _, err := LoadDir(dir); err == nil || !strings.Contains(err.Error(), `mine.yaml:13:11: lookback "soon": want a positive duration`) {
		t.Errorf("bad lookback: %v", err)
	}
	os.WriteFile(filepath.Join(dir, "mine.yaml"), []byte(good), 0o644)
	if _, err := LoadDir(dir); err == nil || !strings.Contains(err.Error(), "$lookback_since is not a declared param") {
		t.Errorf("$lookback_since without lookback: %v", err)
	}
}

// TestPieces: a rule that runs in pieces names one of its inputs and a positive number of rows,
// and its query uses $piece and $pieces; a rule without pieces must not.
func TestPieces(t *testing.T) {
	dir := t.TempDir()
	good := strings.ReplaceAll(string(mustRead(t, "testdata/minimal.good.yaml")), "minimal", "mine")
	write := func(yaml, sql string) {
		os.WriteFile(filepath.Join(dir, "mine.yaml"), []byte(good+yaml), 0o644)
		os.WriteFile(filepath.Join(dir, "mine.sql"), []byte(sql), 0o644)
	}
	write("pieces: {table: audit_events, rows: 1000}\n", "SELECT $window_minutes, $since, $until")
	if _, err := LoadDir(dir); err == nil || !strings.Contains(err.Error(), "runs in pieces but the query does not use $piece") {
		t.Errorf("pieces without $piece: %v", err)
	}
	write("pieces: {table: audit_events, rows: 1000}\n", "SELECT $window_minutes, $since, $until, $piece, $pieces")
	rs, err := LoadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for rows, want := range map[int64]int64{0: 1, 1000: 1, 1001: 2, 10_000_000: 10_000} {
		if got := rs[0].Pieces.Count(rows, 1); got != want {
			t.Errorf("%d rows: %d pieces, want %d", rows, got, want)
		}
	}
	// under a limit of a quarter of the default, pieces of 250 rows; under twice the default, of 2000
	for rows, want := range map[int64]int64{0: 1, 250: 1, 251: 2, 1000: 4, 10_000_000: 40_000} {
		if got := rs[0].Pieces.Count(rows, 0.25); got != want {
			t.Errorf("%d rows, a quarter of the memory: %d pieces, want %d", rows, got, want)
		}
	}
	if got := rs[0].Pieces.Count(10_000_000, 2); got != 5_000 {
		t.Errorf("10M rows, twice the memory: %d pieces, want 5000", got)
	}
	if got := rs[0].Pieces.Count(10, 1e-9); got != 10 {
		t.Errorf("10 rows under a tiny memory limit: %d pieces, want one per row", got)
	}
	write("pieces: {table: conntrack_entries, rows: 0}\n", "SELECT $window_minutes, $since, $until, $piece, $pieces")
	_, err = LoadDir(dir)
	for _, want := range []string{`table "conntrack_entries" is not one of the rule's inputs`, "rows 0: want a positive number"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("bad pieces: %v, want %q", err, want)
		}
	}
	// a second table bounds the count too: the rule runs in the more pieces of the two
	write("pieces: {table: audit_events, rows: 1000, also: {table: audit_events, rows: 10}}\n", "SELECT $window_minutes, $since, $until, $piece, $pieces")
	if rs, err = LoadDir(dir); err != nil {
		t.Fatal(err)
	}
	if b := rs[0].Pieces.Also; b == nil || b.Table != "audit_events" || b.Count(101, 1) != 11 || b.Count(101, 0.5) != 21 || b.Count(10, 1) != 1 {
		t.Errorf("pieces.also: %+v", b)
	}
	write("pieces: {table: audit_events, rows: 1000, also: {table: conntrack_entries, rows: -1}}\n", "SELECT $window_minutes, $since, $until, $piece, $pieces")
	_, err = LoadDir(dir)
	for _, want := range []string{`mine.yaml:13:49: pieces.also: table "conntrack_entries" is not one of the rule's inputs`, "pieces.also: rows -1: want a positive number"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("bad pieces.also: %v, want %q", err, want)
		}
	}
	write("pieces: {table: audit_events, rows: 1000, also: {table: audit_events, rows: 10, also: {table: audit_events, rows: 1}}}\n", "SELECT $window_minutes, $since, $until, $piece, $pieces")
	if _, err := LoadDir(dir); err == nil || !strings.Contains(err.Error(), "mine.yaml:13:49: pieces.also: a second table has no also of its own") {
		t.Errorf("pieces.also with an also: %v", err)
	}
	// the fields of pieces are checked as strictly as the rule's own
	write("pieces: {table: audit_events, rows: 1000, rowz: 5}\n", "SELECT $window_minutes, $since, $until, $piece, $pieces")
	if _, err := LoadDir(dir); err == nil || !strings.Contains(err.Error(), `unknown field "rowz" (known: also, rows, table)`) {
		t.Errorf("pieces with a misspelt field: %v", err)
	}
	write("", "SELECT $window_minutes, $since, $until, $piece, $pieces")
	if _, err := LoadDir(dir); err == nil || !strings.Contains(err.Error(), "$piece is not a declared param") {
		t.Errorf("$piece without pieces: %v", err)
	}
	if (*Pieces)(nil).Count(1<<40, 1) != 1 {
		t.Error("a rule without pieces runs in one")
	}
}

// TestCoverageQueryParams: a coverage query may use its rule's params and the window, nothing else.
func TestCoverageQueryParams(t *testing.T) {
	dir := t.TempDir()
	good := strings.ReplaceAll(string(mustRead(t, "testdata/minimal.good.yaml")), "minimal", "mine")
	good += "needs:\n  - evidence: my-bodies\n    description: the bodies\n    policy: {level: Request}\n"
	os.WriteFile(filepath.Join(dir, "mine.yaml"), []byte(good), 0o644)
	os.WriteFile(filepath.Join(dir, "mine.sql"), []byte("SELECT $window_minutes, $since, $until"), 0o644)
	os.Mkdir(filepath.Join(dir, "coverage"), 0o755)
	os.WriteFile(filepath.Join(dir, "coverage", "my-bodies.sql"), []byte("SELECT $window_minutes, $since, $until, $other_count"), 0o644)
	if _, err := LoadDir(dir); err == nil || !strings.Contains(err.Error(),
		"coverage/my-bodies.sql of rule mine: $other_count is not a coverage parameter (since, until, window_minutes)") {
		t.Errorf("a coverage query with another rule's param: %v", err)
	}
	os.WriteFile(filepath.Join(dir, "coverage", "my-bodies.sql"), []byte("SELECT $window_minutes, $since, $until"), 0o644)
	if rs, err := LoadDir(dir); err != nil || len(rs[0].Needs) != 1 {
		t.Errorf("a coverage query with its rule's param: %v", err)
	}
}
