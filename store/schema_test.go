package store

import (
	"regexp"
	"slices"
	"testing"
)

var aliasedColumn = regexp.MustCompile(`%\[1\]s\.(\w+)`)

// TestTableMetadata checks that every evidence table says when its rows were observed and how a
// row is told from a duplicate, with columns the table has.
func TestTableMetadata(t *testing.T) {
	for _, tb := range Tables {
		cols := tb.ColumnNames()
		if tb.TimeColumn != "" && !slices.Contains(cols, tb.TimeColumn) {
			t.Errorf("%s: time column %s is not a column", tb.Name, tb.TimeColumn)
		}
		if tb.Evidence == "" {
			continue
		}
		if tb.TimeColumn == "" || len(tb.DedupeKey) == 0 {
			t.Errorf("%s holds %s evidence but has no time column or no dedupe key", tb.Name, tb.Evidence)
		}
		for _, k := range tb.DedupeKey {
			name := k
			if m := aliasedColumn.FindStringSubmatch(k); m != nil {
				name = m[1]
			}
			if !slices.Contains(cols, name) {
				t.Errorf("%s: dedupe key item %q names no column", tb.Name, k)
			}
		}
	}
	if got := TimeColumn("conntrack_events"); got != "captured_at" {
		t.Errorf("TimeColumn(conntrack_events) = %q", got)
	}
	if got := TimeColumn("ingest_errors"); got != "" {
		t.Errorf("TimeColumn(ingest_errors) = %q", got)
	}
}
