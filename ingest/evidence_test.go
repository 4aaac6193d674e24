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
	// conntrack -S and /proc/net/stat print different counters (only /proc has entries): two
	// observations, each with a row per CPU
	stats := queryInt(t, db, "SELECT count(*) FROM conntrack_stats WHERE node = 'node-a'")
	if cpus := queryInt(t, db, "SELECT count(DISTINCT cpu) FROM conntrack_stats"); cpus == 0 || stats != 2*cpus ||
		queryInt(t, db, "SELECT count(DISTINCT format) FROM conntrack_stats") != 2 {
		t.Errorf("%d stats rows of %d CPUs: conntrack -S and /proc/net/stat of one capture must give a row per CPU each", stats, cpus)
	}
	ingestFiles(t, db, Options{}, filepath.Dir(bundle))
	if n := queryInt(t, db, "SELECT count(*) FROM conntrack_entries"); n != want {
		t.Errorf("after loading the bundle again: %d entries, want %d", n, want)
	}
	if n := queryInt(t, db, "SELECT count(*) FROM conntrack_stats"); n != stats {
		t.Errorf("after loading the bundle again: %d stats rows, want %d", n, stats)
	}
}

// TestConntrackStatsThatDifferAreKept: two conntrack -S files of one capture time whose counters
// differ (an earlier one with no drops, a later one with cpu=0 drop=30) are two observations: the
// rows that differ are kept, whichever name sorts first, in a bundle or as loose files given the
// same --at, so that the 30 drops are not lost. A row that repeats another's counters is one
// observation (cpu=1 has the same counters in both files): whichever file comes second leaves it
// out. The same counters seen again, the same files loaded again or copies of them under other
// names, add nothing.
func TestConntrackStatsThatDifferAreKept(t *testing.T) {
	real := "conntrack/testdata/real/tablefull/"
	const at = "2026-11-21T04:25:10Z"
	for _, c := range []struct {
		name          string
		before, after string // file names
		opt           Options
		bundle        bool
	}{
		{"bundle, the later file sorting last", "stats-1.txt", "stats-2.txt", Options{}, true},
		{"bundle, the later file sorting first", "stats-2.txt", "stats-1.txt", Options{}, true},
		{"loose files with --node and --at", "stats-1.txt", "stats-2.txt", Options{Node: "n1", At: time.Date(2026, 11, 21, 4, 25, 10, 0, time.UTC)}, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			root := t.TempDir()
			dir := root
			if c.bundle {
				dir = filepath.Join(root, "n1", at)
			}
			copyFile(t, real+"conntrack_S_before.txt", filepath.Join(dir, c.before))
			copyFile(t, real+"conntrack_S_after.txt", filepath.Join(dir, c.after))
			db := openTestDB(t)
			res := ingestFiles(t, db, c.opt, root)
			if len(res) != 2 || res[0].Rows != 2 || res[0].Duplicates != 0 || res[1].Rows != 1 || res[1].Duplicates != 1 {
				for _, r := range res {
					t.Errorf("%s: %d rows loaded, %d duplicates skipped", r.Path, r.Rows, r.Duplicates)
				}
				t.Errorf("want 2 rows of the first file, 1 of the second (and its cpu=1 a duplicate)")
			}
			q := "SELECT count(*) FROM conntrack_stats WHERE node = 'n1' AND captured_at = '" + at + "'"
			if n := queryInt(t, db, q); n != 3 {
				t.Errorf("%d rows of the capture, want 3 (cpu=0 of each file, cpu=1 once)", n)
			}
			if n := queryInt(t, db, q+" AND cpu = 0 AND \"drop\" = 30 AND source_file LIKE '%/"+c.after+"'"); n != 1 {
				t.Errorf("%d rows of %s with cpu=0 drop=30, want 1", n, c.after)
			}
			if n := queryInt(t, db, q+" AND cpu = 0 AND \"drop\" = 0 AND source_file LIKE '%/"+c.before+"'"); n != 1 {
				t.Errorf("%d rows of %s with cpu=0 drop=0, want 1", n, c.before)
			}
			// the capture's drops: per CPU the largest counter, summed
			if n := queryInt(t, db, "SELECT sum(d) FROM (SELECT max(\"drop\") AS d FROM conntrack_stats GROUP BY cpu)"); n != 30 {
				t.Errorf("the capture's drops are %d, want 30", n)
			}

			for _, r := range ingestFiles(t, db, c.opt, root) {
				if r.Skipped != "already loaded" {
					t.Errorf("loaded again: %s: skipped %q, %d rows; want it skipped as already loaded", r.Path, r.Skipped, r.Rows)
				}
			}
			copies := filepath.Join(dir, "copies")
			copyFile(t, real+"conntrack_S_before.txt", filepath.Join(copies, "a.txt"))
			copyFile(t, real+"conntrack_S_after.txt", filepath.Join(copies, "b.txt"))
			opt := c.opt
			if c.bundle {
				opt = Options{Node: "n1", At: time.Date(2026, 11, 21, 4, 25, 10, 0, time.UTC)}
			}
			for _, r := range ingestFiles(t, db, opt, copies) {
				if r.Rows != 0 || r.Duplicates != 2 {
					t.Errorf("a copy: %s: %d rows loaded, %d duplicates skipped; want 0 and 2", r.Path, r.Rows, r.Duplicates)
				}
			}
			if n := queryInt(t, db, "SELECT count(*) FROM conntrack_stats"); n != 3 {
				t.Errorf("%d rows after loading copies of the files, want 3", n)
			}
		})
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
