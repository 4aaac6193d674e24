package ingest

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/kubesift/kubesift/ingest/audit"
	"github.com/kubesift/kubesift/ingest/conntrack"
	"github.com/kubesift/kubesift/internal/load"
	"github.com/kubesift/kubesift/store"
)

// groupEvents is an audit log of n Metadata events from id; with dated false they carry neither
// stageTimestamp nor the legacy timestamp (audit_events.stage_at NULL).
func groupEvents(id, n int, dated bool) []byte {
	var b strings.Builder
	for i := id; i < id+n; i++ {
		times := ""
		if dated {
			times = fmt.Sprintf(`,"requestReceivedTimestamp":"2026-11-21T05:%02d:00Z","stageTimestamp":"2026-11-21T05:%02d:01Z"`, i%60, i%60)
		}
		fmt.Fprintf(&b, `{"kind":"Event","apiVersion":"audit.k8s.io/v1","level":"Metadata","auditID":"g-%d","stage":"ResponseComplete","requestURI":"/api/v1/namespaces/lab/pods","verb":"list","user":{"username":"u"},"objectRef":{"resource":"pods","namespace":"lab","apiVersion":"v1"},"responseStatus":{"metadata":{},"code":200}%s}`+"\n", i, times)
	}
	return []byte(b.String())
}

// TestSmallFilesShareATransaction: consecutive small files load in one transaction, each still a
// load of its own (its id, its ingest_files row, its duplicates counted against the files before
// it, those without a time too), and a load interrupted in the second file leaves none of the
// group; the next ingest loads them all.
func TestSmallFilesShareATransaction(t *testing.T) {
	dir := t.TempDir()
	paths := []string{filepath.Join(dir, "a.log"), filepath.Join(dir, "b.log"), filepath.Join(dir, "c.log")}
	writeFileT(t, paths[0], append(groupEvents(0, 50, true), groupEvents(100, 5, false)...))
	// a.log's last 10 events, and its 5 undated ones with their times: each found only among the
	// rows without a time (earlierUndated), which a.log's load added to the transaction
	writeFileT(t, paths[1], append(groupEvents(40, 20, true), groupEvents(100, 5, true)...))
	writeFileT(t, paths[2], groupEvents(60, 10, true))
	if n := groupSize([]Input{{Path: paths[0]}, {Path: paths[1]}, {Path: paths[2]}}); n != 3 {
		t.Fatalf("groupSize of three small files: %d, want 3", n)
	}
	db := openTestDB(t)
	inputs, err := ExpandPaths([]string{dir})
	if err != nil {
		t.Fatal(err)
	}

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	settled := 0
	interrupt := Options{Settling: func(int64) func() {
		if settled++; settled == 2 {
			cancel()
		}
		return nil
	}}
	if _, err := New(db, interrupt).Ingest(ctx, inputs); err == nil {
		t.Fatal("an ingest interrupted in its second file: no error")
	}
	if n := queryInt(t, db, "SELECT (SELECT count(*) FROM audit_events) + (SELECT count(*) FROM ingest_files)"); n != 0 {
		t.Errorf("after a load interrupted in the group's second file: %d rows of audit_events and ingest_files, want none", n)
	}

	results := ingestFiles(t, db, Options{}, dir)
	if len(results) != 3 {
		t.Fatalf("%d results, want 3: %+v", len(results), results)
	}
	ids := map[int64]bool{}
	for i, want := range []struct{ rows, dups int64 }{{55, 0}, {10, 15}, {10, 0}} {
		r := results[i]
		if r.Path != paths[i] || r.Err != nil || r.Skipped != "" || r.Rows != want.rows || r.Duplicates != want.dups {
			t.Errorf("result %d: %+v, want %s with %d rows and %d duplicates", i, r, paths[i], want.rows, want.dups)
		}
		ids[r.LoadID] = true
	}
	if len(ids) != 3 {
		t.Errorf("load ids %v, want one per file", ids)
	}
	if n := queryInt(t, db, "SELECT count(*) FROM audit_events"); n != 75 {
		t.Errorf("%d events, want 75", n)
	}
	if n := queryInt(t, db, "SELECT count(DISTINCT load_id) FROM ingest_files WHERE load_id IN (SELECT load_id FROM audit_events)"); n != 3 {
		t.Errorf("%d loads with events and an ingest_files row, want 3", n)
	}
}

// TestGroupWithAFailingFileLoadsFileByFile: when one file of a group fails to load, the group's
// other files are still loaded, each in its own transaction, and the failure is that file's.
func TestGroupWithAFailingFileLoadsFileByFile(t *testing.T) {
	dir := t.TempDir()
	good1, bad, good2 := filepath.Join(dir, "1.txt"), filepath.Join(dir, "2.txt"), filepath.Join(dir, "3.txt")
	dump := readFile(t, "conntrack/testdata/real/acct_timestamp/conntrack_L.txt")
	writeFileT(t, good1, dump)
	writeFileT(t, bad, []byte("not a conntrack dump\n"))
	writeFileT(t, good2, dump)
	db := openTestDB(t)
	inputs, err := ExpandPaths([]string{good1, bad, good2})
	if err != nil {
		t.Fatal(err)
	}
	if n := groupSize(inputs); n != 3 {
		t.Fatalf("groupSize: %d, want 3", n)
	}
	results, err := New(db, Options{Kind: Kind(conntrack.Loader{}.Kind()), Node: "worker-7"}).Ingest(context.Background(), inputs)
	if err == nil || !strings.Contains(err.Error(), "not a conntrack format") {
		t.Errorf("error %v, want the bad file's", err)
	}
	if len(results) != 3 || results[0].Rows == 0 || results[1].Err == nil || results[2].Rows != 0 || results[2].Duplicates != results[0].Rows {
		t.Errorf("results %+v: want the first file loaded, the second failed, the third all duplicates of the first", results)
	}
	entries := queryInt(t, db, "SELECT count(*) FROM conntrack_entries")
	if entries == 0 || entries != results[0].Rows {
		t.Errorf("%d conntrack entries, want the first file's %d", entries, results[0].Rows)
	}
	if n := queryInt(t, db, "SELECT count(*) FROM ingest_files WHERE skipped IS NOT NULL AND source_file = ?", bad); n != 1 {
		t.Errorf("%d ingest_files rows saying why %s was not loaded, want 1", n, bad)
	}
}

// TestGroupSize: a group takes the small regular files at the start, up to groupBytes together
// and groupFiles of them, and nothing that is not one.
func TestGroupSize(t *testing.T) {
	dir := t.TempDir()
	small := func(name string, size int) string {
		path := filepath.Join(dir, name)
		writeFileT(t, path, make([]byte, size))
		return path
	}
	a, b, c := small("a", 1000), small("b", 1000), small("c", 1000)
	large := small("large", groupFileBytes+1)
	defer func(was int64) { groupBytes = was }(groupBytes)
	groupBytes = 2500
	for _, tc := range []struct {
		inputs []Input
		want   int
	}{
		{[]Input{{Path: a}, {Path: b}, {Path: c}}, 2}, // the third would pass groupBytes
		{[]Input{{Path: a}, {Path: large}, {Path: b}}, 1},
		{[]Input{{Path: large}, {Path: a}}, 1},
		{[]Input{{Path: a}, {Path: "-"}}, 1},
		{[]Input{{Path: a}, {Path: b, Skip: skippedNotRegular}}, 1},
		{[]Input{{Path: a}, {Path: filepath.Join(dir, "missing")}}, 1},
		{[]Input{{Path: a}}, 1},
	} {
		if n := groupSize(tc.inputs); n != tc.want {
			t.Errorf("groupSize(%v) = %d, want %d", tc.inputs, n, tc.want)
		}
	}
	many := make([]Input, groupFiles+1)
	for i := range many {
		many[i] = Input{Path: a}
	}
	groupBytes = int64(len(many)) * 1000
	if n := groupSize(many); n != groupFiles {
		t.Errorf("groupSize of %d small files: %d, want %d", len(many), n, groupFiles)
	}
}

// countingRuns is the audit loader with the sizes of the runs it loaded counted, and its
// failures.
type countingRuns struct {
	audit.Loader
	runs   *[]int
	failed *int
}

func (c countingRuns) LoadRun(ctx context.Context, files []*load.File) error {
	err := c.Loader.LoadRun(ctx, files)
	if err != nil {
		*c.failed++
	}
	*c.runs = append(*c.runs, len(files))
	return err
}

// TestARunLoadsAsEachFileAlone: audit logs loaded together (a RunLoader's run) make the rows,
// counts, rejected lines, warnings and notes of each file loaded alone: a recording with
// Endpoints bodies in every envelope, over two clusters' directories, each file sharing events
// with the next and with a load before that derived no endpoint states; every log of testdata (duplicates inside a file and of
// the files before, undated events, invalid lines, fields of the wrong type, invalid UTF-8,
// damaged gzip members); snapshots and conntrack captures, twice; and a copy of a log, left for
// after its run so that it is seen as loaded.
func TestARunLoadsAsEachFileAlone(t *testing.T) {
	dir := t.TempDir()
	write := func(path string, data []byte) {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		writeFileT(t, path, data)
	}
	evs := sampleEvents(t, "../samples/flapping/audit.log")
	step := len(evs) / len(packagings)
	for k, p := range packagings {
		part := evs[k*step : min(len(evs), (k+2)*step)] // half of it is the next file's
		path := filepath.Join(dir, []string{"a", "a", "b"}[k%3], fmt.Sprintf("%02d", k), p.file)
		write(path, nil)
		p.write(t, path, part)
	}
	first := filepath.Join(dir, "a", "00", packagings[0].file)
	write(first+".1", readFile(t, first))
	testdata, err := filepath.Glob("testdata/*")
	if err != nil {
		t.Fatal(err)
	}
	for _, path := range testdata {
		write(filepath.Join(dir, "a", "testdata", filepath.Base(path)), readFile(t, path))
	}
	// snapshots and conntrack captures, each set twice: the second copy's rows are duplicates
	for _, copied := range []struct{ from, to string }{
		{"../samples/flapping/snapshots", "a/snapshots"}, {"../samples/flapping/snapshots", "a/snapshots-again"},
		{"../samples/probe-conntrack/lab-node-1", "a/nodes/lab-node-1"}, {"../samples/probe-conntrack/lab-node-1", "a/nodes-again/lab-node-1"},
	} {
		if err := os.CopyFS(filepath.Join(dir, copied.to), os.DirFS(copied.from)); err != nil {
			t.Fatal(err)
		}
	}
	// before the other logs of its events: its fields of the wrong type become warnings
	write(filepath.Join(dir, "a", "0-warnings", "bad-field-types.log"), readFile(t, "testdata/bad-field-types.bad.log"))
	earlier := filepath.Join(t.TempDir(), "earlier.log")
	writeFileT(t, earlier, ndjson(t, evs[9*step:10*step])) // the first half of the webhook's, which has Endpoints writes

	inputs, err := ExpandPaths([]string{dir})
	if err != nil {
		t.Fatal(err)
	}
	if n := groupSize(inputs); n != len(inputs) {
		t.Fatalf("groupSize: %d of %d inputs", n, len(inputs))
	}
	var runs []int
	var failed int
	defer func(was []Loader) { loaders = was }(loaders)
	loaders = append([]Loader{countingRuns{runs: &runs, failed: &failed}}, loaders[1:]...)
	var logs [2]strings.Builder
	load := func(together bool) (*store.DB, []FileResult) {
		if !together {
			defer func(was int64) { groupBytes = was }(groupBytes)
			groupBytes = 0
		}
		db := openTestDB(t)
		ingestFiles(t, db, Options{Cluster: "a", NoAuditEndpoints: true}, earlier) // the run's copies of its events derive rows it lacks
		log := &logs[0]
		if together {
			log = &logs[1]
		}
		results, _ := New(db, Options{ClusterPerDir: true, Log: log}).Ingest(context.Background(), inputs) // the damaged files fail
		return db, results
	}
	alone, aloneResults := load(false)
	if len(runs) != 0 {
		t.Fatalf("runs of %v with groups off", runs)
	}
	together, togetherResults := load(true)
	if slices.Max(runs) < len(packagings)/2 {
		t.Errorf("runs of %v audit logs: want the logs of the envelopes in a few runs", runs)
	}
	for _, kind := range []string{"endpoints", "conntrack"} {
		if n := queryInt(t, together, "SELECT count(DISTINCT load_id) FROM ingest_files WHERE kind = ? AND rows > 0 AND duplicates = 0", kind); n < 10 {
			t.Errorf("%d %s files loaded with rows and no duplicates, want their first copy", n, kind)
		}
		if n := queryInt(t, together, "SELECT count(*) FROM ingest_files WHERE kind = ? AND rows = 0 AND duplicates > 0", kind); n < 10 {
			t.Errorf("%d %s files of duplicates only, want their second copy", n, kind)
		}
	}
	if failed > 0 { // a group whose load fails is loaded again file by file
		t.Errorf("%d runs of audit logs failed", failed)
	}
	if n := queryInt(t, together, "SELECT count(*) FROM ingest_files WHERE finished_at < started_at"); n > 0 {
		t.Errorf("%d loads finished before they started (the transaction's start taken for their end)", n)
	}
	if strings.Contains(logs[0].String(), "(a run of") || !strings.Contains(logs[1].String(), "rows loaded in ") ||
		!regexp.MustCompile(`snapshots/[^ ]+: endpoints, \d+ rows loaded in [\d.]+s \(a run of \d+ files\)\n`).MatchString(logs[1].String()) {
		t.Errorf("log of the files loaded alone:\n%s\nloaded together (each line of a snapshot ending with its run):\n%s", logs[0].String(), logs[1].String())
	}
	for i := range inputs {
		a, b := aloneResults[i], togetherResults[i]
		a.Elapsed, b.Elapsed, b.Together = 0, 0, 0
		if fmt.Sprint(a) != fmt.Sprint(b) {
			t.Errorf("%s:\nalone    %+v\ntogether %+v", inputs[i].Path, a, b)
		}
	}
	for what, has := range map[string]func(r FileResult) bool{
		"duplicates of the load before": func(r FileResult) bool { return strings.HasSuffix(r.Path, packagings[9].file) && r.Duplicates > 0 },
		"duplicates of the file before": func(r FileResult) bool { return strings.HasSuffix(r.Path, packagings[1].file) && r.Duplicates > 0 },
		"rejected lines":                func(r FileResult) bool { return r.Rejected > 0 },
		"warnings":                      func(r FileResult) bool { return r.Warnings > 0 },
		"no new data":                   func(r FileResult) bool { return r.Skipped == "no new data since the last load" },
	} {
		if !slices.ContainsFunc(aloneResults, has) {
			t.Errorf("no file with %s", what)
		}
	}
	if n := queryInt(t, together, `SELECT count(*) FROM endpoint_addresses d WHERE source = 'audit'
		AND NOT EXISTS (SELECT 1 FROM audit_events a WHERE a.load_id = d.load_id AND a.source_line = d.source_line)`); n != 0 {
		t.Errorf("%d endpoint_addresses rows of audit events that were not loaded", n)
	}
	for _, table := range queryStrings(t, alone, "SELECT table_name FROM duckdb_tables() ORDER BY 1") {
		cols := queryStrings(t, alone, `SELECT '"' || column_name || '"' FROM duckdb_columns()
			WHERE table_name = ? AND column_name NOT IN ('started_at', 'finished_at') ORDER BY column_index`, table)
		q := fmt.Sprintf("SELECT row(%s)::VARCHAR AS r FROM %s ORDER BY r", strings.Join(cols, ", "), table)
		want, got := queryStrings(t, alone, q), queryStrings(t, together, q)
		if i := slices.IndexFunc(want, func(r string) bool { return !slices.Contains(got, r) }); i >= 0 || len(want) != len(got) {
			t.Errorf("%s: %d rows loaded together, %d each alone", table, len(got), len(want))
			if i >= 0 {
				t.Errorf("%s: loaded alone but not together: %s", table, want[i])
			}
		}
	}
}

// TestRunsAreBoundedByFiles: a run takes up to runFiles files, compressed or not (a compressed
// one waits parked), and the files after it start the next run; every file is loaded.
func TestRunsAreBoundedByFiles(t *testing.T) {
	defer func(files int) { runFiles = files }(runFiles)
	runFiles = 4
	dir := t.TempDir()
	for i, gz := range []bool{false, true, true, true, false, false, true, false, false} {
		path := filepath.Join(dir, fmt.Sprintf("%02d.log", i))
		if gz {
			writeGzip(t, path+".gz", groupEvents(i*10, 10, true))
		} else {
			writeFileT(t, path, groupEvents(i*10, 10, true))
		}
	}
	db := openTestDB(t)
	res := ingestFiles(t, db, Options{}, dir)
	var together []int
	for _, r := range res {
		together = append(together, r.Together)
		if r.Rows != 10 {
			t.Errorf("%s: %d rows, want 10", r.Path, r.Rows)
		}
	}
	if want := []int{4, 4, 4, 4, 4, 4, 4, 4, 1}; !slices.Equal(together, want) {
		t.Errorf("runs of %v files, want %v (at most 4 files)", together, want)
	}
	if got := queryStrings(t, db, "SELECT count(DISTINCT audit_id) FROM audit_events"); got[0] != "90" {
		t.Errorf("%s events, want 90", got[0])
	}
}
