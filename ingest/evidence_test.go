package ingest

import (
	"bytes"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"
)

func copyFile(t *testing.T, from, to string) {
	t.Helper()
	os.MkdirAll(filepath.Dir(to), 0o755)
	if err := os.WriteFile(to, readFile(t, from), 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestConntrackBundle: a capture bundle gives every row its node and capture time, the same
// capture in several formats adds its entries once, and loading it again adds nothing.
func TestConntrackBundle(t *testing.T) {
	real := "conntrack/testdata/real/acct_timestamp/"
	bundle := filepath.Join(t.TempDir(), "node-a", "2026-11-21T04:28:20Z")
	for _, f := range []string{"conntrack_L.txt", "conntrack_L_xml.xml", "proc_net_nf_conntrack.txt", "conntrack_S.txt", "proc_net_stat_nf_conntrack.txt"} {
		copyFile(t, real+f, filepath.Join(bundle, f))
	}
	want := int64(bytes.Count(readFile(t, real+"conntrack_L.txt"), []byte(" src=")) / 2)

	db := openTestDB(t)
	ingestFiles(t, db, Options{}, filepath.Dir(bundle))
	if n := queryInt(t, db, "SELECT count(*) FROM conntrack_entries"); n != want {
		t.Errorf("%d entries from three formats of one capture, want %d (each once)", n, want)
	}
	if n := queryInt(t, db, "SELECT count(*) FROM conntrack_entries WHERE node = 'node-a' AND captured_at = '2026-11-21T04:28:20Z'"); n != want {
		t.Errorf("%d entries carry the bundle's node and time, want %d", n, want)
	}
	if n := queryInt(t, db, "SELECT count(*) FROM conntrack_stats WHERE node = 'node-a'"); n == 0 || n != queryInt(t, db, "SELECT count(DISTINCT cpu) FROM conntrack_stats") {
		t.Errorf("%d stats rows: conntrack -S and /proc/net/stat of one capture must give one row per CPU", n)
	}
	ingestFiles(t, db, Options{}, filepath.Dir(bundle))
	if n := queryInt(t, db, "SELECT count(*) FROM conntrack_entries"); n != want {
		t.Errorf("after loading the bundle again: %d entries, want %d", n, want)
	}
}

// TestConntrackLooseFileNeedsNodeAndTime: a loose file takes --node/--at; without them it
// falls back to the file's time and says so.
func TestConntrackLooseFileNeedsNodeAndTime(t *testing.T) {
	path := "conntrack/testdata/real/acct_timestamp/conntrack_L.txt"
	db := openTestDB(t)
	at := time.Date(2026, 11, 21, 4, 0, 0, 0, time.UTC)
	res := ingestFiles(t, db, Options{Node: "worker-7", At: at}, path)
	if res[0].Note != "" {
		t.Errorf("note %q with --node and --at", res[0].Note)
	}
	if n := queryInt(t, db, "SELECT count(*) FROM conntrack_entries WHERE node = 'worker-7' AND captured_at = '2026-11-21T04:00:00Z'"); n != res[0].Rows || n == 0 {
		t.Errorf("%d rows with --node/--at of %d", n, res[0].Rows)
	}
	db2 := openTestDB(t)
	res = ingestFiles(t, db2, Options{}, path)
	if res[0].Note == "" || queryInt(t, db2, "SELECT count(*) FROM conntrack_entries WHERE node = 'unknown'") != res[0].Rows {
		t.Errorf("without --node/--at: note %q", res[0].Note)
	}
}

// TestEndpointsFromSnapshotsAndAudit: the flapping recording's addresses are visible from its
// snapshots and from its audit log, and loading it twice adds nothing.
func TestEndpointsFromSnapshotsAndAudit(t *testing.T) {
	dir := "../samples/flapping"
	db := openTestDB(t)
	ingestFiles(t, db, Options{}, dir)
	for _, source := range []string{"snapshot", "audit"} {
		ready := queryInt(t, db, "SELECT count(*) FROM endpoint_addresses WHERE source = $1 AND namespace = 'shop' AND service = 'cart' AND ip = '192.0.2.31' AND ready", source)
		notReady := queryInt(t, db, "SELECT count(*) FROM endpoint_addresses WHERE source = $1 AND namespace = 'shop' AND service = 'cart' AND ip = '192.0.2.31' AND NOT ready", source)
		if ready == 0 || notReady == 0 {
			t.Errorf("%s: 192.0.2.31 of shop/cart seen ready %d and not ready %d times; want both", source, ready, notReady)
		}
	}
	if n := queryInt(t, db, "SELECT count(*) FROM services WHERE namespace = 'shop' AND name = 'cart'"); n == 0 {
		t.Error("no services rows for shop/cart")
	}
	before := queryInt(t, db, "SELECT count(*) FROM endpoint_addresses")
	ingestFiles(t, db, Options{}, dir)
	if after := queryInt(t, db, "SELECT count(*) FROM endpoint_addresses"); after != before {
		t.Errorf("loading the same recording again: %d rows, was %d", after, before)
	}
}

func TestNoAuditEndpoints(t *testing.T) {
	path := "../samples/flapping/audit.log"
	db := openTestDB(t)
	ingestFiles(t, db, Options{NoAuditEndpoints: true}, path)
	if n := queryInt(t, db, "SELECT count(*) FROM endpoint_addresses"); n != 0 {
		t.Errorf("%d endpoint rows derived with NoAuditEndpoints", n)
	}
	if n := queryInt(t, db, "SELECT count(*) FROM audit_events"); n != 1430 {
		t.Errorf("%d audit events, want 1430", n)
	}
}

// TestClusterPerDir: with ClusterPerDir the first directory under the argument names the cluster
// of every table's rows (audit events, the endpoint states derived from them, snapshots,
// conntrack); a file directly in the argument gets Cluster. The same capture in two clusters is
// two captures, and the same audit log in two clusters is two logs: neither a file's resume nor
// deduplication ever merges clusters.
func TestClusterPerDir(t *testing.T) {
	root := t.TempDir()
	copyFile(t, "../samples/flapping/audit.log", filepath.Join(root, "x", "audit.log"))
	copyFile(t, "../samples/flapping/audit.log", filepath.Join(root, "w", "audit.log"))
	copyFile(t, "../samples/flapping/snapshots/endpoints-2026-11-21T05:59:13Z.json", filepath.Join(root, "x", "snapshots", "endpoints-2026-11-21T05:59:13Z.json"))
	capture := "conntrack/testdata/real/acct_timestamp/conntrack_L.txt"
	for _, cluster := range []string{"y", "z"} {
		copyFile(t, capture, filepath.Join(root, cluster, "node-a", "2026-11-21T04:28:20Z", "conntrack_L.txt"))
	}
	copyFile(t, "testdata/audit-v1.good.log", filepath.Join(root, "loose.log"))

	db := openTestDB(t)
	ingestFiles(t, db, Options{ClusterPerDir: true, Cluster: "given"}, root)
	for _, c := range []struct {
		query string
		want  int64
	}{
		{"SELECT count(*) FROM audit_events WHERE cluster <> 'x' AND source_file LIKE '%/x/%'", 0},
		{"SELECT count(*) FROM endpoint_addresses WHERE cluster NOT IN ('x', 'w')", 0},
		{"SELECT count(DISTINCT source) FROM endpoint_addresses WHERE cluster = 'x'", 2},
		{"SELECT count(*) FROM audit_events WHERE source_file LIKE '%loose.log' AND cluster <> 'given'", 0},
		{"SELECT count(DISTINCT cluster) FROM conntrack_entries", 2},
		{"SELECT count(*) FILTER (WHERE cluster = 'y') - count(*) FILTER (WHERE cluster = 'z') FROM conntrack_entries", 0},
		{"SELECT count(*) FILTER (WHERE cluster = 'x') - count(*) FILTER (WHERE cluster = 'w') FROM audit_events", 0},
		{"SELECT count(*) FILTER (WHERE cluster = 'x') - count(*) FILTER (WHERE cluster = 'w') FROM endpoint_addresses WHERE source = 'audit'", 0},
	} {
		if n := queryInt(t, db, c.query); n != c.want {
			t.Errorf("%s: %d, want %d", c.query, n, c.want)
		}
	}
	if queryInt(t, db, "SELECT count(*) FROM audit_events WHERE source_file LIKE '%loose.log'") == 0 || queryInt(t, db, "SELECT count(*) FROM conntrack_entries WHERE cluster = 'y'") == 0 {
		t.Error("the loose audit log or the conntrack capture loaded nothing")
	}
}

// TestEndpointStatesOnlyOfKeptEvents: the endpoint states of an event that does not become an
// audit_events row go with it, whether it repeats an event of the same load or DuckDB rejects it
// (an Endpoints write without "kind", which the deriver takes): what is left is what the
// recording gives loaded once, less the rejected write's states.
func TestEndpointStatesOnlyOfKeptEvents(t *testing.T) {
	src := readFile(t, "../samples/flapping/audit.log")
	lines := bytes.SplitAfter(src, []byte("\n"))
	lines = lines[:len(lines)-1]
	const write = 804 // an update of shop/cart's Endpoints, with its body
	if !bytes.Contains(lines[write-1], []byte(`"resource":"endpoints"`)) || !bytes.Contains(lines[write-1], []byte(`"verb":"update"`)) {
		t.Fatalf("line %d is not an update of Endpoints", write)
	}
	dir := t.TempDir()
	twice := filepath.Join(dir, "twice.log")
	writeFileT(t, twice, append(slices.Clone(src), src...))
	kindless := filepath.Join(dir, "kindless.log")
	writeFileT(t, kindless, slices.Concat(bytes.Join(lines[:write-1], nil),
		bytes.Replace(lines[write-1], []byte(`"kind":"Event",`), nil, 1), bytes.Join(lines[write:], nil)))

	once := openTestDB(t)
	ingestFiles(t, once, Options{}, "../samples/flapping/audit.log")
	want := queryInt(t, once, "SELECT count(*) FROM endpoint_addresses WHERE source = 'audit'")
	atWrite := queryInt(t, once, "SELECT count(*) FROM endpoint_addresses WHERE source = 'audit' AND source_line = $1", write)
	if want == 0 || atWrite == 0 {
		t.Fatalf("the recording gave %d endpoint rows, %d of them from line %d", want, atWrite, write)
	}
	orphans := "SELECT count(*) FROM endpoint_addresses d WHERE source = 'audit' AND NOT EXISTS (SELECT 1 FROM audit_events a WHERE a.load_id = d.load_id AND a.source_line = d.source_line)"

	db := openTestDB(t)
	res := ingestFiles(t, db, Options{}, twice)
	if res[0].Duplicates != int64(len(lines)) {
		t.Fatalf("the recording twice in one file: %+v, want %d duplicates", res[0], len(lines))
	}
	if n := queryInt(t, db, "SELECT count(*) FROM endpoint_addresses WHERE source = 'audit'"); n != want {
		t.Errorf("the recording twice in one file: %d endpoint rows, want %d as from one copy", n, want)
	}
	if n := queryInt(t, db, orphans); n != 0 {
		t.Errorf("the recording twice in one file: %d endpoint rows of events not kept", n)
	}

	db = openTestDB(t)
	res = ingestFiles(t, db, Options{}, kindless)
	if res[0].Rejected != 1 {
		t.Fatalf("an event without kind: %+v, want it rejected", res[0])
	}
	if n := queryInt(t, db, "SELECT count(*) FROM endpoint_addresses WHERE source = 'audit'"); n != want-atWrite {
		t.Errorf("an event without kind: %d endpoint rows, want %d (none from line %d)", n, want-atWrite, write)
	}
	if n := queryInt(t, db, orphans); n != 0 {
		t.Errorf("an event without kind: %d endpoint rows of events not kept", n)
	}
}
