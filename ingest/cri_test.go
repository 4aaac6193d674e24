package ingest

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/kubesift/kubesift/internal/source"
)

// criLog writes audit events as a container runtime logs them: "<time> <stream> <tag> <text>",
// an event longer than 16 KiB cut into 3 partials (P, P, F) whose pieces interleave with
// the other stream's lines, and one more event split into two, and, when unfinished, a last
// partial whose final piece never comes. It returns the file and the events' audit IDs.
func criLog(t *testing.T, path string, unfinished bool) []string {
	t.Helper()
	evs := sampleEvents(t, "testdata/audit-v1.good.log")
	evs[1]["requestObject"] = map[string]any{"kind": "ConfigMap", "data": map[string]any{"blob": strings.Repeat("x", 40<<10)}}
	big, other := string(mustJSON(t, evs[1])), string(mustJSON(t, evs[4]))
	third := len(big) / 3
	lines := []string{
		"stdout F " + string(mustJSON(t, evs[0])),
		"stdout P " + big[:third],
		"stderr F " + string(mustJSON(t, evs[2])),
		"stdout P " + big[third:2*third],
		"stderr P " + other[:100],
		"stdout F " + big[2*third:],
		"stderr F " + other[100:],
		"stdout F " + string(mustJSON(t, evs[3])),
	}
	if unfinished {
		lines = append(lines, "stdout P "+string(mustJSON(t, evs[5]))[:200])
	}
	var b strings.Builder
	for i, l := range lines {
		fmt.Fprintf(&b, "2026-11-21T05:31:%02d.000000001Z %s\n", i, l)
	}
	writeFileT(t, path, []byte(b.String()))
	var ids []string
	for _, ev := range evs[:5] {
		ids = append(ids, ev["auditID"].(string))
	}
	slices.Sort(ids)
	return ids
}

// TestContainerLogPartialsAreRejoined: the pieces of a line a container runtime split (P…F,
// each stream on its own) load as one event, at the line of the first piece; a partial whose
// final piece never comes is rejected with its line, and the events around it are kept. While
// the file may still grow, that partial is left for the next load, which rejoins it.
func TestContainerLogPartialsAreRejoined(t *testing.T) {
	path := filepath.Join(t.TempDir(), "kube-apiserver.log")
	ids := criLog(t, path, true)
	quiet := time.Now().Add(-2 * source.QuietPeriod)
	if err := os.Chtimes(path, quiet, quiet); err != nil {
		t.Fatal(err)
	}
	db := openTestDB(t)
	res := ingestFiles(t, db, Options{}, path)
	if res[0].Rows != 5 || res[0].Rejected != 1 || res[0].Lines != 9 || !strings.HasPrefix(res[0].FirstError, "line 9: container log line split into partials") {
		t.Fatalf("%+v, want 5 events loaded and line 9 rejected", res[0])
	}
	if got := queryStrings(t, db, "SELECT audit_id FROM audit_events ORDER BY audit_id"); !slices.Equal(got, ids) {
		t.Errorf("loaded %v, want %v", got, ids)
	}
	if got := queryInts(t, db, "SELECT source_line FROM audit_events ORDER BY source_line"); !slices.Equal(got, []int64{1, 2, 3, 5, 8}) {
		t.Errorf("source lines %v, want [1 2 3 5 8]: a rejoined event at its first piece", got)
	}
	if n := queryInt(t, db, "SELECT count(*) FROM audit_events WHERE length(request_object->>'$.data.blob') = 40960"); n != 1 {
		t.Errorf("%d events with the 40 KiB body intact, want 1", n)
	}
	if got := queryInts(t, db, "SELECT line FROM ingest_errors"); !slices.Equal(got, []int64{9}) {
		t.Errorf("ingest_errors lines %v, want [9]", got)
	}

	growing := filepath.Join(t.TempDir(), "kube-apiserver.log")
	criLog(t, growing, true)
	db = openTestDB(t)
	res = ingestFiles(t, db, Options{}, growing)
	if res[0].Rows != 5 || res[0].Rejected != 0 || !strings.Contains(res[0].Note, "line 9 is the first piece") {
		t.Fatalf("growing file: %+v, want 5 events and line 9 left for the next load", res[0])
	}
	evs := sampleEvents(t, "testdata/audit-v1.good.log")
	f, err := os.OpenFile(growing, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	fmt.Fprintf(f, "2026-11-21T05:31:09.000000001Z stdout F %s\n", mustJSON(t, evs[5])[200:])
	f.Close()
	res = ingestFiles(t, db, Options{}, growing)
	if res[0].Rows != 1 || res[0].Rejected != 0 || res[0].Duplicates != 0 {
		t.Errorf("growing file, the final piece written: %+v, want the rejoined event loaded", res[0])
	}
	if n := queryInt(t, db, "SELECT count(*) FROM audit_events"); n != 6 {
		t.Errorf("%d events, want 6", n)
	}
}

// TestContainerLogDanglingPartial: a partial whose final piece never comes because the runtime
// restarted (the next line of its stream starts an audit event, P or F) is rejected at its line,
// and the event that follows it loads instead of being joined to it.
func TestContainerLogDanglingPartial(t *testing.T) {
	raw := strings.Split(string(readFile(t, "testdata/audit-v1.good.log")), "\n") // as the apiserver writes events
	evs := sampleEvents(t, "testdata/audit-v1.good.log")
	cut, second, third := raw[0], raw[1], raw[2]
	var b strings.Builder
	for i, l := range []string{"stdout P " + cut[:150], "stdout F " + second, "stdout P " + cut[:120], "stdout P " + third[:90], "stdout F " + third[90:]} {
		fmt.Fprintf(&b, "2026-11-21T05:31:%02d.000000001Z %s\n", i, l)
	}
	path := filepath.Join(t.TempDir(), "kube-apiserver.log")
	writeFileT(t, path, []byte(b.String()))
	quiet := time.Now().Add(-2 * source.QuietPeriod)
	if err := os.Chtimes(path, quiet, quiet); err != nil {
		t.Fatal(err)
	}
	db := openTestDB(t)
	res := ingestFiles(t, db, Options{}, path)
	want := []string{evs[1]["auditID"].(string), evs[2]["auditID"].(string)}
	slices.Sort(want)
	if got := queryStrings(t, db, "SELECT audit_id FROM audit_events ORDER BY audit_id"); res[0].Rows != 2 || !slices.Equal(got, want) {
		t.Errorf("%+v: loaded %v, want %v", res[0], got, want)
	}
	if got := queryInts(t, db, "SELECT line FROM ingest_errors ORDER BY line"); !slices.Equal(got, []int64{1, 3}) {
		t.Errorf("ingest_errors lines %v, want [1 3]: the two partials cut off", got)
	}
}
