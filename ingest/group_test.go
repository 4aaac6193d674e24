package ingest

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kubesift/kubesift/ingest/conntrack"
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
