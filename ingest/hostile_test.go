package ingest

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/ulikunitz/xz"

	"github.com/kubesift/kubesift/internal/load"
	"github.com/kubesift/kubesift/internal/source"
)

// TestWalkSkipsFIFOsAndFollowsSymlinkedDirectories: a FIFO inside a walked directory is
// skipped and named, not opened (which would wait forever for a writer); a symlinked
// subdirectory is walked, a symlink loop is walked once, and a dangling symlink is named as
// unreadable while the rest loads.
func TestWalkSkipsFIFOsAndFollowsSymlinkedDirectories(t *testing.T) {
	dir := t.TempDir()
	copyFile(t, "testdata/audit-v1.good.log", filepath.Join(dir, "a", "audit.log"))
	copyFile(t, "testdata/audit-v1beta1.good.log", filepath.Join(dir, "elsewhere", "old.log"))
	if err := syscall.Mkfifo(filepath.Join(dir, "a", "pipe"), 0o644); err != nil {
		t.Fatal(err)
	}
	for link, target := range map[string]string{
		"a/linked":    "../elsewhere", // a symlinked directory, also reached directly
		"a/loop":      "..",           // a loop back to the top
		"a/dangling":  "missing",
		"elsewhere/b": "../a",
	} {
		if err := os.Symlink(target, filepath.Join(dir, link)); err != nil {
			t.Fatal(err)
		}
	}
	inputs, err := ExpandPaths([]string{filepath.Join(dir, "a")})
	if err != nil {
		t.Fatal(err)
	}
	db := openTestDB(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	res, err := New(db, Options{}).Ingest(ctx, inputs)
	if err == nil || !strings.Contains(err.Error(), filepath.Join(dir, "a", "dangling")) || strings.Count(err.Error(), "\n") != 0 {
		t.Errorf("error %v, want only the dangling symlink named", err)
	}
	var loaded, skipped []string
	for _, r := range res {
		rel, _ := filepath.Rel(dir, r.Path)
		switch {
		case r.Skipped == skippedNotRegular:
			skipped = append(skipped, rel)
		case r.Skipped == "" && r.Rows > 0:
			loaded = append(loaded, rel)
		}
	}
	if strings.Join(loaded, " ") != "a/audit.log a/linked/old.log" || strings.Join(skipped, " ") != "a/pipe" {
		t.Errorf("loaded %v, skipped %v; want a/audit.log and a/linked/old.log loaded once each, a/pipe skipped", loaded, skipped)
	}
	if n := queryInt(t, db, "SELECT count(DISTINCT source_file) FROM audit_events"); n != 2 {
		t.Errorf("%d files in audit_events, want 2", n)
	}
}

// TestUnreadableDirectoryIsNamedAndTheRestLoads: one directory that cannot be read does not
// stop the others from loading; the error names it.
func TestUnreadableDirectoryIsNamedAndTheRestLoads(t *testing.T) {
	if os.Geteuid() == 0 {
		t.Skip("root reads a directory whatever its mode")
	}
	dir := t.TempDir()
	copyFile(t, "testdata/audit-v1.good.log", filepath.Join(dir, "ok", "audit.log"))
	locked := filepath.Join(dir, "locked")
	copyFile(t, "testdata/audit-v1beta1.good.log", filepath.Join(locked, "audit.log"))
	if err := os.Chmod(locked, 0); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.Chmod(locked, 0o755) })
	inputs, err := ExpandPaths([]string{dir})
	if err != nil {
		t.Fatal(err)
	}
	db := openTestDB(t)
	res, err := New(db, Options{}).Ingest(context.Background(), inputs)
	if err == nil || !strings.Contains(err.Error(), locked) || !strings.Contains(err.Error(), "permission denied") {
		t.Errorf("error %v, want %s named as unreadable", err, locked)
	}
	if len(res) != 2 || res[0].Err == nil || res[1].Rows == 0 {
		t.Errorf("results %+v, want locked/ failed and ok/audit.log loaded", res)
	}
}

// TestFIFOOnTheCommandLineIsAStream: a FIFO named on the command line is read like stdin.
func TestFIFOOnTheCommandLineIsAStream(t *testing.T) {
	fifo := filepath.Join(t.TempDir(), "audit.pipe")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	data := readFile(t, "testdata/audit-v1.good.log")
	go func() {
		w, err := os.OpenFile(fifo, os.O_WRONLY, 0)
		if err != nil {
			return // the reader's failure reports it
		}
		w.Write(data)
		w.Close()
	}()
	db := openTestDB(t)
	res := ingestFiles(t, db, Options{}, fifo)
	if len(res) != 1 || res[0].Rows != 6 || res[0].Rejected != 0 {
		t.Fatalf("results %+v, want 6 rows", res)
	}
	if n := queryInt(t, db, "SELECT count(*) FROM ingest_files WHERE size_bytes IS NULL OR size_bytes < 0"); n != 1 {
		t.Errorf("%d loads of unknown size, want the FIFO's", n)
	}
}

// TestInvalidUTF8IsReplaced: invalid UTF-8 inside one line is replaced by U+FFFD (the event is
// kept, and the file's note says so) instead of failing the whole file; so in a pretty-printed
// EventList, which is decoded rather than cut into lines.
func TestInvalidUTF8IsReplaced(t *testing.T) {
	pretty := filepath.Join(t.TempDir(), "eventlist-pretty.json")
	data := readFile(t, "testdata/eventlist-pretty.good.json")
	if err := os.WriteFile(pretty, bytes.Replace(data, []byte(`"userAgent": "`), []byte("\"userAgent\": \"\xff"), 1), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		path     string
		repaired int
	}{{"testdata/invalid-utf8.bad.log", 2}, {pretty, 1}} {
		db := openTestDB(t)
		res := ingestFiles(t, db, Options{}, tc.path)
		want := queryInt(t, db, "SELECT count(*) FROM audit_events")
		if res[0].Rows != want || want == 0 || res[0].Rejected != 0 || res[0].Lines == 0 {
			t.Errorf("%s: %+v, want every event loaded", tc.path, res[0])
		}
		if n := queryInt(t, db, "SELECT count(*) FROM audit_events WHERE contains(user_agent, '\uFFFD')"); n != int64(tc.repaired) {
			t.Errorf("%s: %d user agents with U+FFFD, want %d", tc.path, n, tc.repaired)
		}
		if note := fmt.Sprintf("%s had invalid UTF-8", load.Plural(tc.repaired, "event")); !strings.Contains(res[0].Note, note) {
			t.Errorf("%s: note %q, want %q", tc.path, res[0].Note, note)
		}
	}
	db := openTestDB(t)
	ingestFiles(t, db, Options{}, "testdata/invalid-utf8.bad.log")
	if got := queryStrings(t, db, "SELECT user_agent FROM audit_events WHERE source_line = 3"); len(got) != 1 || !strings.HasPrefix(got[0], "\uFFFDbad kube-apiserver") {
		t.Errorf("line 3's user agent %q, want the invalid bytes replaced and the rest kept", got)
	}
}

// TestLowercaseRFC3339: RFC 3339 allows a lowercase t and z; such timestamps are parsed the
// same as their uppercase form.
func TestLowercaseRFC3339(t *testing.T) {
	upper, lower := openTestDB(t), openTestDB(t)
	ingestFiles(t, upper, Options{}, "testdata/audit-v1.good.log")
	ingestFiles(t, lower, Options{}, "testdata/lowercase-rfc3339.good.log")
	q := "SELECT audit_id || ' ' || received_at || ' ' || stage_at || ' ' || latency_ms FROM audit_events ORDER BY source_line"
	want, got := queryStrings(t, upper, q), queryStrings(t, lower, q)
	if len(want) != 6 || !slices.Equal(got, want) {
		t.Errorf("lowercase timestamps give %q, want %q", got, want)
	}
}

// TestDedupeOfAnEventWithoutStageTime: an event loaded again with a stage time that does not
// parse is still a duplicate of the one loaded before, and the other way round: an event loaded
// without a stage time is found when it comes again with one.
func TestDedupeOfAnEventWithoutStageTime(t *testing.T) {
	for _, order := range [][2]string{
		{"testdata/audit-v1.good.log", "testdata/undated-duplicate.bad.log"},
		{"testdata/undated-duplicate.bad.log", "testdata/audit-v1.good.log"},
	} {
		db := openTestDB(t)
		first := ingestFiles(t, db, Options{}, order[0])
		res := ingestFiles(t, db, Options{}, order[1])
		if first[0].Rows == 0 || res[0].Duplicates != 1 || res[0].Rows != res[0].Lines-1 {
			t.Errorf("%s after %s: %+v, want the one event of both skipped as a duplicate", order[1], order[0], res[0])
		}
		if n := queryInt(t, db, "SELECT count(*) FROM (SELECT audit_id, stage FROM audit_events GROUP BY ALL HAVING count(*) > 1)"); n != 0 {
			t.Errorf("%s after %s: %d (audit_id, stage) stored twice", order[1], order[0], n)
		}
	}
}

// TestInvalidLastLineOfAQuietFile: a last line without a newline that does not load is left for
// the next load only while the file may still be growing; once the file has been quiet for
// source.QuietPeriod it is rejected into ingest_errors like any other line.
func TestInvalidLastLineOfAQuietFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "audit.log")
	copyFile(t, "testdata/invalid-last-line.bad.log", path)
	db := openTestDB(t)
	res := ingestFiles(t, db, Options{}, path)
	if res[0].Rows != 6 || res[0].Rejected != 0 || !strings.Contains(res[0].Note, "line 7 has no end yet") {
		t.Fatalf("fresh file: %+v, want 6 rows and line 7 held back", res[0])
	}
	quiet := time.Now().Add(-2 * source.QuietPeriod)
	if err := os.Chtimes(path, quiet, quiet); err != nil {
		t.Fatal(err)
	}
	res = ingestFiles(t, db, Options{}, path)
	if res[0].Rows != 0 || res[0].Rejected != 1 || res[0].Lines != 1 || res[0].FirstError != "line 7: audit event without auditID" {
		t.Errorf("quiet file: %+v, want line 7 rejected", res[0])
	}
	fresh := openTestDB(t)
	res = ingestFiles(t, fresh, Options{}, path)
	if res[0].Rows != 6 || res[0].Rejected != 1 {
		t.Errorf("quiet file in a new database: %+v, want 6 rows and line 7 rejected", res[0])
	}
	if got := queryInts(t, fresh, "SELECT line FROM ingest_errors"); !slices.Equal(got, []int64{7}) {
		t.Errorf("ingest_errors lines %v, want [7]", got)
	}
}

// TestEveryInputNotLoadedIsRecorded: each input that is not loaded, whatever the reason, is a
// row of ingest_files with the reason, and a result: nothing is skipped in silence, even with
// no log at all (--quiet).
func TestEveryInputNotLoadedIsRecorded(t *testing.T) {
	dir := t.TempDir()
	copyFile(t, "testdata/audit-v1.good.log", filepath.Join(dir, "audit.log"))
	writeFileT(t, filepath.Join(dir, "notes.txt"), []byte("just some words\n"))
	writeFileT(t, filepath.Join(dir, "empty.log"), nil)
	if err := syscall.Mkfifo(filepath.Join(dir, "pipe"), 0o644); err != nil {
		t.Fatal(err)
	}
	db := openTestDB(t)
	ingestFiles(t, db, Options{}, dir)
	inputs, err := ExpandPaths([]string{dir, "testdata/gzip-header-garbage.bad.log.gz"})
	if err != nil {
		t.Fatal(err)
	}
	res, err := New(db, Options{}).Ingest(context.Background(), inputs)
	if err == nil {
		t.Fatal("a corrupt file named on the command line is no error")
	}
	got := queryStrings(t, db, `SELECT regexp_replace(source_file, '.*/', '') || ': ' || skipped FROM ingest_files
		WHERE skipped IS NOT NULL ORDER BY finished_at, source_file`)
	want := []string{
		"empty.log: " + skippedEmpty, "notes.txt: " + skippedNotEvidence, "pipe: " + skippedNotRegular,
		"audit.log: no new data since the last load", "empty.log: " + skippedEmpty, "notes.txt: " + skippedNotEvidence, "pipe: " + skippedNotRegular,
		"gzip-header-garbage.bad.log.gz: reading testdata/gzip-header-garbage.bad.log.gz: corrupt gzip at byte 0",
	}
	if len(got) != len(want) || !slices.Equal(got[:len(want)-1], want[:len(want)-1]) || !strings.HasPrefix(got[len(got)-1], want[len(want)-1]) {
		t.Errorf("ingest_files skipped rows:\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	var failed int
	for _, r := range res {
		if r.Err != nil && r.Skipped != "" {
			failed++
		}
	}
	if len(res) != 5 || failed != 1 {
		t.Errorf("results %+v, want 5 with 1 failed", res)
	}
}

// TestNothingButDamageOrBlanks: a compressed file that hands out nothing before its damage (an xz
// file cut short: its decoder keeps what it decoded until its block ends) is an error naming the
// damage, also when --kind says what it is; a file of blank lines is an empty file, as one of no
// bytes is, not a file of unknown kind.
func TestNothingButDamageOrBlanks(t *testing.T) {
	var xzb bytes.Buffer
	xw, err := xz.NewWriter(&xzb)
	if err != nil {
		t.Fatal(err)
	}
	good, err := os.ReadFile("testdata/audit-v1.good.log")
	if err != nil {
		t.Fatal(err)
	}
	xw.Write(good)
	xw.Close()
	dir := t.TempDir()
	cut := filepath.Join(dir, "audit.log.xz")
	writeFileT(t, cut, xzb.Bytes()[:xzb.Len()*9/10])
	blank := filepath.Join(dir, "blank.log")
	writeFileT(t, blank, []byte("  \n\t\r\n\n"))
	for _, kind := range []Kind{KindAuto, "audit"} {
		inputs, err := ExpandPaths([]string{cut, blank})
		if err != nil {
			t.Fatal(err)
		}
		res, err := New(openTestDB(t), Options{Kind: kind}).Ingest(context.Background(), inputs)
		if err == nil || len(res) != 2 || res[0].Err == nil || !strings.Contains(res[0].Err.Error(), "corrupt xz at byte") {
			t.Errorf("--kind %s: the cut xz file: %v, %+v", kind, err, res)
		}
		if len(res) == 2 && (res[1].Skipped != skippedEmpty || res[1].Err != nil) {
			t.Errorf("--kind %s: the blank file: %+v", kind, res[1])
		}
	}
}

// TestMissingPathsAreInputsInError: a path or a glob on the command line that is not there is an
// input in error, named, beside the others, which load.
func TestMissingPathsAreInputsInError(t *testing.T) {
	missing, glob := filepath.Join(t.TempDir(), "not-there.log"), filepath.Join(t.TempDir(), "*.log")
	inputs, err := ExpandPaths([]string{"testdata/audit-v1.good.log", missing, glob})
	if err != nil || len(inputs) != 3 || inputs[0].Err != nil || inputs[1].Err == nil || inputs[2].Err == nil ||
		!strings.Contains(inputs[1].Err.Error(), missing) || !strings.Contains(inputs[2].Err.Error(), glob+": no file matches") {
		t.Fatalf("%+v, %v", inputs, err)
	}
	db := openTestDB(t)
	if _, err := New(db, Options{}).Ingest(context.Background(), inputs); err == nil || !strings.Contains(err.Error(), missing) {
		t.Errorf("ingest: %v", err)
	}
	if n := queryInt(t, db, "SELECT count(*) FROM audit_events"); n != 6 {
		t.Errorf("%d events loaded beside the missing inputs, want 6", n)
	}
}

// TestEventsWithoutTimesOrIDs: an event without its times is kept with a warning that says so (the
// rules cannot place it), unless the pre-1.10 "timestamp" stands for them; an empty auditID or
// stage is rejected as a missing one is.
func TestEventsWithoutTimesOrIDs(t *testing.T) {
	good, err := os.ReadFile("testdata/audit-v1.good.log")
	if err != nil {
		t.Fatal(err)
	}
	first := good[:bytes.IndexByte(good, '\n')]
	var lines []string
	event := func(id string, change func(map[string]any)) {
		var e map[string]any
		if err := json.Unmarshal(first, &e); err != nil {
			t.Fatal(err)
		}
		e["auditID"] = id
		change(e)
		b, _ := json.Marshal(e)
		lines = append(lines, string(b))
	}
	event("no-stage-time", func(e map[string]any) { delete(e, "stageTimestamp") })
	event("no-times", func(e map[string]any) { delete(e, "stageTimestamp"); delete(e, "requestReceivedTimestamp") })
	event("legacy", func(e map[string]any) {
		e["timestamp"] = e["stageTimestamp"]
		delete(e, "stageTimestamp")
		delete(e, "requestReceivedTimestamp")
	})
	event("", func(map[string]any) {})
	event("empty-stage", func(e map[string]any) { e["stage"] = "" })
	path := filepath.Join(t.TempDir(), "audit.log")
	writeFileT(t, path, []byte(strings.Join(lines, "\n")+"\n"))
	db := openTestDB(t)
	res := ingestFiles(t, db, Options{}, path)
	if res[0].Rows != 3 || res[0].Rejected != 2 || res[0].Warnings != 2 {
		t.Errorf("%+v: want 3 rows, 2 rejected, 2 warnings", res[0])
	}
	got := queryStrings(t, db, "SELECT line || ': ' || reason FROM ingest_errors ORDER BY line")
	want := []string{
		"1: unreadable field, loaded as NULL (the event is kept): no stageTimestamp: the rules cannot place the event in time",
		"2: unreadable field, loaded as NULL (the event is kept): no requestReceivedTimestamp; no stageTimestamp: the rules cannot place the event in time",
		"4: audit event without auditID", "5: audit event without stage",
	}
	if !slices.Equal(got, want) {
		t.Errorf("ingest_errors:\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}
