package analyze

import (
	"bytes"
	"context"
	"testing"

	"github.com/kubesift/kubesift/internal/testdb"
	"github.com/kubesift/kubesift/rules"
)

// TestChartsShareAQueryRun: charts of a finding that name the same query get the rows of one
// run of it (random() would differ between two runs); a chart naming another query runs its own.
func TestChartsShareAQueryRun(t *testing.T) {
	ctx := context.Background()
	db := testdb.Empty(t)
	chart := rules.Chart{Kind: "series", Title: "t", Time: "at", Values: []string{"r"}, Query: "random-rows",
		SQL: "SELECT $first_seen AS at, random() AS r FROM range(5)"}
	other := chart
	other.Query = "other-random-rows"
	rep := &Report{Outcomes: []Outcome{{Rule: rules.Rule{ID: "r", Charts: []rules.Chart{chart, {Kind: "events", Title: "from the evidence", Time: "at", Lane: "x"}, chart, other}}}}}
	charts := NewCharts(ctx, db, rep)
	defer charts.Close()
	rows, err := charts.Rows(Finding{Rule: "r"})
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != 4 || rows[1] != nil || len(rows[0]) == 0 {
		t.Fatalf("rows %q: want four charts' rows, the second (no query) nil", rows)
	}
	if !bytes.Equal(rows[0], rows[2]) {
		t.Errorf("two charts of query %s got different rows, so it ran twice:\n%s\n%s", chart.Query, rows[0], rows[2])
	}
	if bytes.Equal(rows[0], rows[3]) {
		t.Errorf("query %s got the rows of %s", other.Query, chart.Query)
	}
}
