package store

import (
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
