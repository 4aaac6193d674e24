package store

import (
	"context"
	"database/sql"
	"slices"
	"strings"
	"testing"
)

// observationsTable stands in for a kind's evidence table in the tests of this package, which
// cannot import the kinds (they import store).
var observationsTable = Table{
	Name:       "observations",
	Evidence:   "test",
	TimeColumn: "seen_at",
	DedupeKey:  []string{"id"},
	Columns: []Column{
		{Name: "id", Type: "VARCHAR", Doc: "what was observed"},
		{Name: "seen_at", Type: "TIMESTAMPTZ", Doc: "when"},
		{Name: "zone", Type: "BIGINT", Doc: "a column a later version added"},
		{Name: "load_id", Type: "BIGINT", Doc: "the load"},
	},
}

var testSchema = NewSchema(observationsTable)

// TestNewSchema: the evidence tables come first, grouped by evidence and in the order given
// within a group, a table given twice is kept once, kubesift's own tables follow, and two
// different tables of one name panic.
func TestNewSchema(t *testing.T) {
	other := Table{Name: "other", Evidence: "another"}
	later := Table{Name: "later", Evidence: "test"}
	given := []Table{observationsTable, other, later, observationsTable}
	var names []string
	for _, tb := range NewSchema(given...) {
		names = append(names, tb.Name)
	}
	if want := []string{"other", "observations", "later", "ingest_errors", "ingest_files", "runs"}; !slices.Equal(names, want) {
		t.Errorf("tables %v, want %v", names, want)
	}
	if given[0].Name != "observations" {
		t.Errorf("NewSchema reordered its argument: %v", given)
	}
	if tb, ok := testSchema.Lookup("ingest_files"); !ok || tb.TimeColumn != "finished_at" {
		t.Errorf("Lookup(ingest_files) = %+v, %v", tb, ok)
	}
	if _, ok := testSchema.Lookup("audit_events"); ok {
		t.Error("Lookup found a table the schema was not given")
	}
	clash := observationsTable
	clash.Columns = clash.Columns[:2]
	defer func() {
		if r := recover(); r == nil || !strings.Contains(r.(string), "two different tables are named observations") {
			t.Errorf("two tables of one name: recovered %v", r)
		}
	}()
	NewSchema(observationsTable, clash)
}

// TestLoadChunksCoverEveryNewerLoadOnce: the loads DeriveNewerLoads derives are split into
// statements of about deriveChunkRows rows each (by ingest_files.rows), which together keep every
// load after the newest derived one exactly once, and the rows without a load id when none was.
func TestLoadChunksCoverEveryNewerLoadOnce(t *testing.T) {
	ctx := context.Background()
	db, err := Open(ctx, InMemory, testSchema, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	// loads 1-8 of 0.4 chunks each, and an input that was not loaded (no load id)
	if _, err := db.ExecContext(ctx, `INSERT INTO ingest_files (load_id, kind, source_file, "rows")
		SELECT i, 'audit', 'f' || i, $1 * 2 // 5 FROM range(1, 9) r(i) UNION ALL SELECT NULL, 'audit', 'skipped', NULL`, deriveChunkRows); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		newest sql.NullInt64
		want   string // the loads of each filter, and whether it keeps rows without a load id
	}{
		{sql.NullInt64{}, "[null] [1 2 3] [4 5 6] [7 8 9 10]"},
		{sql.NullInt64{Int64: 2, Valid: true}, "[3 4 5] [6 7 8] [9 10]"},
		{sql.NullInt64{Int64: 8, Valid: true}, "[9 10]"},
	} {
		chunks, err := db.loadChunks(ctx, c.newest)
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, ch := range chunks {
			var kept string
			// loads 9 and 10 have no ingest_files row yet (an ingest stopped after them): the last filter keeps them
			err := db.QueryRowContext(ctx, `SELECT '[' || coalesce(string_agg(coalesce(CAST(load_id AS VARCHAR), 'null'), ' ' ORDER BY load_id NULLS FIRST), '') || ']'
				FROM (SELECT unnest([NULL, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10]) AS load_id)`+ch.where, ch.args...).Scan(&kept)
			if err != nil {
				t.Fatal(err)
			}
			got = append(got, kept)
		}
		if s := strings.Join(got, " "); s != c.want {
			t.Errorf("after load %v: chunks %s, want %s", c.newest, s, c.want)
		}
	}
}
