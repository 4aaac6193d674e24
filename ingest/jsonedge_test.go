package ingest

import (
	"strings"
	"testing"
)

// TestJSONAsGoReadsIt: audit lines are read as Go's encoding/json (which wrote them) reads them,
// not as DuckDB's laxer reader would: of duplicate names the last wins, and trailing commas, NaN
// and Infinity make the line invalid JSON, rejected with its line.
func TestJSONAsGoReadsIt(t *testing.T) {
	db := openTestDB(t)
	res := ingestFiles(t, db, Options{}, "testdata/json-edge-cases.bad.log")
	if res[0].Rows != 2 || res[0].Rejected != 4 {
		t.Fatalf("%+v, want 2 rows and 4 rejected lines", res[0])
	}
	if got := queryStrings(t, db, `SELECT verb || ' ' || name FROM audit_events WHERE audit_id = 'edge-1'`); len(got) != 1 || got[0] != "delete b" {
		t.Errorf("event with duplicate names loaded as %q, want the last of each: delete b", got)
	}
	reasons := queryStrings(t, db, `SELECT line || ': ' || reason FROM ingest_errors ORDER BY line`)
	for i, line := range []string{"2: ", "3: ", "4: ", "5: "} {
		if i >= len(reasons) || !strings.HasPrefix(reasons[i], line+"invalid JSON at byte") {
			t.Errorf("rejected lines %q, want lines 2 to 5 as invalid JSON", reasons)
			break
		}
	}
}
