package ingest

import (
	"os"
	"path/filepath"
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

// TestLoneSurrogatesAsGoReadsThem: an escaped lone UTF-16 surrogate, which DuckDB's JSON parser
// rejects and Go's encoding/json reads as U+FFFD, is read as Go reads it: the event is kept.
func TestLoneSurrogatesAsGoReadsThem(t *testing.T) {
	db := openTestDB(t)
	res := ingestFiles(t, db, Options{}, "testdata/lone-surrogate.good.log")
	if res[0].Rows != 2 || res[0].Rejected != 0 {
		t.Fatalf("%+v, want 2 rows and nothing rejected", res[0])
	}
	got := queryStrings(t, db, `SELECT left(user_agent, 2) || ' ' || left(request_uri, 2) FROM audit_events ORDER BY source_line`)
	if len(got) != 2 || !strings.HasPrefix(got[0], "\uFFFDk ") || !strings.HasSuffix(got[1], " \uFFFD/") {
		t.Errorf("loaded %q, want U+FFFD for the lone surrogate of line 1's user agent and line 2's request URI", got)
	}
}

// TestTruncatedEventListLine: a webhook batch line cut short (a crash mid-write) is rejected
// with its line and reason, and the batches around it are loaded.
func TestTruncatedEventListLine(t *testing.T) {
	lines := strings.Split(strings.TrimSpace(string(readFile(t, "testdata/audit-v1.good.log"))), "\n")
	list := func(events ...string) string {
		return `{"kind":"EventList","apiVersion":"audit.k8s.io/v1","metadata":{},"items":[` + strings.Join(events, ",") + "]}"
	}
	cut := list(lines[2], lines[3])
	path := filepath.Join(t.TempDir(), "webhook.ndjson")
	data := list(lines[0], lines[1]) + "\n" + cut[:len(cut)/2] + "\n" + list(lines[4], lines[5]) + "\n"
	if err := os.WriteFile(path, []byte(data), 0o644); err != nil {
		t.Fatal(err)
	}
	db := openTestDB(t)
	res := ingestFiles(t, db, Options{}, path)
	if res[0].Rows != 4 || res[0].Rejected != 1 {
		t.Fatalf("%+v, want 4 rows and the cut line rejected", res[0])
	}
	reasons := queryStrings(t, db, `SELECT line || ': ' || reason FROM ingest_errors`)
	if len(reasons) != 1 || !strings.HasPrefix(reasons[0], "2: unexpected end of JSON") {
		t.Errorf("rejected %q, want line 2 as truncated JSON", reasons)
	}
}
