package rules

import (
	"strings"
	"testing"
)

// TestStages: a stage names a stage_ table and a query stages/NAME.sql beside the rule, which
// may use the rule's params, the window and the lookback but not the piece; only a rule that
// runs in pieces stages its input, and a param used only by a stage counts as used.
func TestStages(t *testing.T) {
	dir := t.TempDir()
	good := strings.ReplaceAll(string(mustRead(t, "testdata/minimal.good.yaml")), "minimal", "mine")
	write := func(name, text string) { t.Helper(); writeFile(t, dir, name, text) }
	pieces := "pieces: {table: stage_mine, rows: 1000}\n"
	stages := "stages:\n  - {table: stage_mine, query: mine-writes}\n"
	query := "SELECT * FROM stage_mine WHERE $piece < $pieces AND $until IS NULL"
	write("mine.yaml", good+pieces+stages)
	write("mine.sql", query)
	if _, err := LoadDir(dir); err == nil || !strings.Contains(err.Error(), "rule mine: stages[0]: no query stages/mine-writes.sql") {
		t.Errorf("missing stage query: %v", err)
	}
	write("stages/mine-writes.sql", "SELECT * FROM audit_events WHERE stage_at >= $since AND $piece = 0")
	if _, err := LoadDir(dir); err == nil || !strings.Contains(err.Error(), "stages/mine-writes.sql of rule mine: $piece is not a stage parameter") {
		t.Errorf("a stage using the piece: %v", err)
	}
	// $window_minutes and $since are used by the stage only
	write("stages/mine-writes.sql", "SELECT * FROM audit_events WHERE stage_at >= $since AND $window_minutes > 0")
	rs, err := LoadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	if got := rs[0].StageTables(); len(got) != 1 || got[0] != "stage_mine" || !strings.Contains(rs[0].Stages[0].SQL, "$window_minutes") {
		t.Errorf("stages %+v", rs[0].Stages)
	}
	write("stages/mine-writes.sql", "SELECT * FROM audit_events")
	if _, err := LoadDir(dir); err == nil || !strings.Contains(err.Error(), "declared param \"window_minutes\" is not used") {
		t.Errorf("a param used nowhere: %v", err)
	}
	write("mine.yaml", good+pieces+"stages:\n  - {table: writes, query: Mine}\n  - {table: stage_mine, query: mine-writes}\n  - {table: stage_mine, query: mine-writes}\n"+
		"  - {table: stage_findings, query: mine-writes}\n")
	_, err = LoadDir(dir)
	for _, want := range []string{
		`mine.yaml:15:5: stages[0]: table "writes": want stage_ followed by`,
		`stages[0]: query "Mine": want the name of a file stages/NAME.sql`,
		`mine.yaml:17:5: stages[2]: table "stage_mine" staged twice`,
		`mine.yaml:18:5: stages[3]: table "stage_findings" holds the rule's rows while they are read`,
	} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("bad stages: %v, want %q", err, want)
		}
	}
	write("mine.yaml", good+stages)
	if _, err := LoadDir(dir); err == nil || !strings.Contains(err.Error(), "only a rule that runs in pieces stages its input") {
		t.Errorf("stages without pieces: %v", err)
	}
	write("mine.yaml", good+"pieces: {table: stage_other, rows: 1000}\n"+stages)
	if _, err := LoadDir(dir); err == nil || !strings.Contains(err.Error(), `pieces: table "stage_other" is not one of the rule's inputs`) {
		t.Errorf("pieces of a table neither input nor stage: %v", err)
	}
}

// TestTransientStages: a transient stage is read by a later stage, never by the rule's query
// (comments do not count) nor split into pieces, and is not the last stage.
func TestTransientStages(t *testing.T) {
	dir := t.TempDir()
	good := strings.ReplaceAll(string(mustRead(t, "testdata/minimal.good.yaml")), "minimal", "mine")
	write := func(name, text string) { t.Helper(); writeFile(t, dir, name, text) }
	pieces := "pieces: {table: stage_mine, rows: 1000}\n"
	stages := "stages:\n  - {table: stage_all, query: mine-all, transient: true}\n  - {table: stage_mine, query: mine-writes}\n"
	write("stages/mine-all.sql", "SELECT * FROM audit_events WHERE stage_at >= $since AND $window_minutes > 0")
	write("stages/mine-writes.sql", "SELECT * FROM stage_all -- the writes of stage_all\n")
	write("mine.sql", "-- reads stage_mine, not stage_all\nSELECT * FROM stage_mine WHERE $piece < $pieces AND $until IS NULL")
	write("mine.yaml", good+pieces+stages)
	rs, err := LoadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	if !rs[0].Stages[0].Transient || rs[0].Stages[1].Transient {
		t.Errorf("stages %+v", rs[0].Stages)
	}
	write("mine.sql", "SELECT * FROM stage_mine JOIN stage_all USING (cluster) WHERE $piece < $pieces AND $until IS NULL")
	if _, err := LoadDir(dir); err == nil || !strings.Contains(err.Error(), `rule mine: stages[0]: table "stage_all" is transient (dropped before the query runs), yet mine.sql reads it`) {
		t.Errorf("the query reading a transient stage: %v", err)
	}
	write("mine.sql", "SELECT * FROM stage_mine WHERE $piece < $pieces AND $until IS NULL")
	write("stages/mine-writes.sql", "SELECT * FROM audit_events -- not stage_all\n")
	if _, err := LoadDir(dir); err == nil || !strings.Contains(err.Error(), `rule mine: stages[0]: table "stage_all" is transient, yet no later stage reads it`) {
		t.Errorf("a transient stage no stage reads: %v", err)
	}
	write("stages/mine-writes.sql", "SELECT * FROM stage_all")
	write("mine.yaml", good+"pieces: {table: stage_all, rows: 1000}\n"+stages)
	if _, err := LoadDir(dir); err == nil || !strings.Contains(err.Error(), `pieces: table "stage_all" is a transient stage, dropped before the pieces run`) {
		t.Errorf("pieces of a transient stage: %v", err)
	}
	write("mine.yaml", good+pieces+"stages:\n  - {table: stage_mine, query: mine-writes}\n  - {table: stage_all, query: mine-all, transient: true}\n")
	if _, err := LoadDir(dir); err == nil || !strings.Contains(err.Error(), `mine.yaml:16:5: stages[1]: table "stage_all" is transient, but no stage follows it to read it`) {
		t.Errorf("a transient last stage: %v", err)
	}
}

// TestStagesSortedForPieces: a stage may name plain columns to be sorted by before more than one
// piece runs; a transient stage may not (it is gone by then).
func TestStagesSortedForPieces(t *testing.T) {
	dir := t.TempDir()
	good := strings.ReplaceAll(string(mustRead(t, "testdata/minimal.good.yaml")), "minimal", "mine")
	write := func(name, text string) { t.Helper(); writeFile(t, dir, name, text) }
	pieces := "pieces: {table: stage_mine, rows: 1000}\n"
	write("stages/mine-all.sql", "SELECT * FROM audit_events WHERE stage_at >= $since AND $window_minutes > 0")
	write("stages/mine-writes.sql", "SELECT * FROM stage_all")
	write("mine.sql", "SELECT * FROM stage_mine WHERE $piece < $pieces AND $until IS NULL")
	write("mine.yaml", good+pieces+"stages:\n  - {table: stage_all, query: mine-all, transient: true}\n"+
		"  - {table: stage_mine, query: mine-writes, sort_for_pieces: [cluster, ns_key]}\n")
	rs, err := LoadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	if got := rs[0].Stages[1].SortForPieces; len(got) != 2 || got[0] != "cluster" || got[1] != "ns_key" || rs[0].Stages[0].SortForPieces != nil {
		t.Errorf("stages %+v", rs[0].Stages)
	}
	write("mine.yaml", good+pieces+"stages:\n  - {table: stage_all, query: mine-all, transient: true, sort_for_pieces: [cluster]}\n"+
		"  - {table: stage_mine, query: mine-writes, sort_for_pieces: [cluster, \"ns_key DESC\"]}\n")
	_, err = LoadDir(dir)
	for _, want := range []string{
		`mine.yaml:15:5: stages[0]: table "stage_all" is transient, dropped before the pieces run: it has nothing to sort for them`,
		`mine.yaml:16:5: stages[1]: sort_for_pieces: column "ns_key DESC": want a column name of lowercase letters, digits and underscores`,
	} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("bad sort_for_pieces: %v, want %q", err, want)
		}
	}
}
