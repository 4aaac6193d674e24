package ingest

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestLatencyIsDateDiff: latency_ms, computed with epoch arithmetic, is what ICU's
// date_diff('microsecond', …) / 1000.0 gives, for ordinary times and offsets, negative
// latencies, times around the epoch, infinities and times so far apart that the difference
// overflows 64 bits (where date_diff's value is kept).
func TestLatencyIsDateDiff(t *testing.T) {
	pairs := [][2]string{
		{"2026-11-21T05:31:08.312540Z", "2026-11-21T05:31:08.412541Z"},
		{"2026-11-21T05:31:08.312540Z", "2026-11-21T05:31:07Z"},
		{"2026-03-29T00:59:59.999999Z", "2026-03-29T03:00:00+02:00"},
		{"1969-12-31T23:59:59.999999Z", "1970-01-01T00:00:00.000001Z"},
		{"0001-01-01T00:00:00Z", "9999-12-31T23:59:59.999999Z"},
		{"infinity", "2026-01-01T00:00:00Z"},
		{"290000-01-01T00:00:00Z", "-290000-01-01T00:00:00Z"},
		{"2026-11-21T05:31:08Z", "not a time"},
	}
	var lines []string
	for i, p := range pairs {
		lines = append(lines, fmt.Sprintf(`{"kind":"Event","apiVersion":"audit.k8s.io/v1","level":"Metadata","auditID":"lat-%d","stage":"ResponseComplete","requestURI":"/api/v1/pods","verb":"list","user":{"username":"u","groups":[]},"sourceIPs":[],"annotations":{},"requestReceivedTimestamp":%q,"stageTimestamp":%q}`, i, p[0], p[1]))
	}
	path := filepath.Join(t.TempDir(), "audit.log")
	if err := os.WriteFile(path, []byte(strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	db := openTestDB(t)
	ingestFiles(t, db, Options{}, path)
	if n := queryInt(t, db, "SELECT count(*) FROM audit_events"); n != int64(len(pairs)) {
		t.Fatalf("%d events loaded, want %d", n, len(pairs))
	}
	got := queryStrings(t, db, `SELECT audit_id || ' ' || coalesce(latency_ms::VARCHAR, 'NULL') || ' ' || coalesce((date_diff('microsecond',
		try_cast(json_extract_string(e, '$.requestReceivedTimestamp') AS TIMESTAMPTZ), try_cast(json_extract_string(e, '$.stageTimestamp') AS TIMESTAMPTZ)) / 1000.0)::VARCHAR, 'NULL')
		FROM audit_events, (SELECT ?::JSON[] AS events) l, unnest(l.events) AS u(e) WHERE json_extract_string(e, '$.auditID') = audit_id ORDER BY source_line`, "["+strings.Join(lines, ",")+"]")
	for _, row := range got {
		f := strings.Fields(row)
		if len(f) != 3 || f[1] != f[2] {
			t.Errorf("%s: latency_ms %s, date_diff gives %s", f[0], f[1], f[2])
		}
	}
	if len(got) != len(pairs) {
		t.Errorf("%d rows compared, want %d", len(got), len(pairs))
	}
}
