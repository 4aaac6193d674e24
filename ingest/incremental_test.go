package ingest

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kubesift/kubesift/internal/auditgen"
)

// TestIncrementalGrowRotateTruncate follows an audit log the way a CronJob sees it: it grows
// (with a half-written last line), is rotated away while a new one starts, is compressed, and
// is truncated. Every event must be loaded exactly once: no duplicates, no gaps, no errors.
func TestIncrementalGrowRotateTruncate(t *testing.T) {
	var data bytes.Buffer
	if _, err := auditgen.Generate(&data, auditgen.Options{Seed: 3, MaxEvents: 3000, LargeBodyFraction: -1}); err != nil {
		t.Fatal(err)
	}
	lines := bytes.SplitAfter(data.Bytes(), []byte("\n"))
	lines = lines[:len(lines)-1]
	part := func(from, to int) []byte { return bytes.Join(lines[from:to], nil) }
	dir := t.TempDir()
	live := filepath.Join(dir, "audit.log")
	appendTo := func(b []byte) {
		f, err := os.OpenFile(live, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
		if err != nil {
			t.Fatal(err)
		}
		f.Write(b)
		f.Close()
	}
	db := openTestDB(t)
	check := func(step string, wantRows int64) {
		t.Helper()
		if n := queryInt(t, db, "SELECT count(*) FROM audit_events"); n != wantRows {
			t.Fatalf("%s: %d rows, want %d", step, n, wantRows)
		}
		if n := queryInt(t, db, "SELECT count(*) - count(DISTINCT (audit_id, stage)) FROM audit_events"); n != 0 {
			t.Fatalf("%s: %d duplicate rows", step, n)
		}
		if n := queryInt(t, db, "SELECT count(*) FROM ingest_errors"); n != 0 {
			t.Fatalf("%s: %d ingest errors", step, n)
		}
	}

	appendTo(part(0, 1000))
	ingestFiles(t, db, Options{}, dir)
	check("first run", 1000)

	half := len(lines[1500]) / 2
	appendTo(append(part(1000, 1500), lines[1500][:half]...))
	res := ingestFiles(t, db, Options{}, dir)
	check("grown, last line half written", 1500)
	if res[0].Rows != 500 || !strings.Contains(res[0].Note, "line 1501 has no end yet") {
		t.Fatalf("grown file: %+v", res[0])
	}

	appendTo(append(lines[1500][half:], part(1501, 2000)...))
	rotated := filepath.Join(dir, "audit-2026-11-21T05-40-00.000.log")
	if err := os.Rename(live, rotated); err != nil {
		t.Fatal(err)
	}
	appendTo(part(2000, 2500))
	ingestFiles(t, db, Options{}, dir)
	check("rotated, new file started", 2500)
	if got := queryInts(t, db, "SELECT min(source_line) FROM audit_events WHERE source_file = $1", rotated); len(got) != 1 || got[0] != 1501 {
		t.Errorf("the rotated file was read from line %v, want 1501 (where the last load stopped)", got)
	}

	raw := readFile(t, rotated)
	writeGzip(t, rotated+".gz", raw)
	os.Remove(rotated)
	res = ingestFiles(t, db, Options{}, dir)
	check("rotated file compressed", 2500)
	for _, r := range res {
		if r.Rows != 0 {
			t.Errorf("nothing new, yet %s loaded %d rows", r.Path, r.Rows)
		}
	}

	if err := os.WriteFile(live, part(2500, 3000), 0o644); err != nil { // truncated and rewritten
		t.Fatal(err)
	}
	ingestFiles(t, db, Options{}, dir)
	check("truncated and rewritten", 3000)
}

// TestSharedFirstLineIsNotTheSameFile: logs that share their first line (a blank line, a rotated
// copy's header) or even their first events are not taken for one another: each is continued
// only from a load whose bytes it holds up to where that load stopped, and otherwise read from
// the start, so that every event of every file is loaded (dedupe drops what two files share).
func TestSharedFirstLineIsNotTheSameFile(t *testing.T) {
	gen := func(seed int64, n int64) [][]byte {
		var data bytes.Buffer
		if _, err := auditgen.Generate(&data, auditgen.Options{Seed: seed, MaxEvents: n, LargeBodyFraction: -1}); err != nil {
			t.Fatal(err)
		}
		lines := bytes.SplitAfter(data.Bytes(), []byte("\n"))
		return lines[:len(lines)-1]
	}
	one, other, third := gen(5, 500), gen(6, 500), gen(7, 200)
	join := func(parts ...[][]byte) []byte {
		out := []byte("\n") // every file starts with a blank line
		for _, p := range parts {
			out = append(out, bytes.Join(p, nil)...)
		}
		return out
	}
	dir := t.TempDir()
	write := func(name string, data []byte) string {
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, data, 0o644); err != nil {
			t.Fatal(err)
		}
		return path
	}
	db := openTestDB(t)
	events := func() int64 { return queryInt(t, db, "SELECT count(DISTINCT (audit_id, stage)) FROM audit_events") }

	ingestFiles(t, db, Options{}, write("a.log", join(one[:250])))
	res := ingestFiles(t, db, Options{}, write("b.log", join(other)))
	if res[0].Rows != 500 || events() != 750 {
		t.Fatalf("another log behind the same blank first line: %+v, %d events in all; want its 500 rows", res[0], events())
	}
	if !strings.Contains(res[0].Note, "read from the start") {
		t.Errorf("note %q does not say the file was read from the start", res[0].Note)
	}
	// The same first 200 events (more than the 64 KiB head), then other ones: a copy that went
	// another way after them is read from the start, plain or compressed.
	forked := join(one[:200], other[:100])
	res = ingestFiles(t, db, Options{}, write("c.log", forked))
	if res[0].Rows != 0 || res[0].Duplicates != 300 || events() != 750 {
		t.Errorf("forked copy: %+v, %d events; want all 300 read, all already loaded", res[0], events())
	}
	writeGzip(t, filepath.Join(dir, "d.log.gz"), join(one[:200], third))
	res = ingestFiles(t, db, Options{}, filepath.Join(dir, "d.log.gz"))
	if res[0].Rows != 200 || res[0].Duplicates != 200 || events() != 950 {
		t.Errorf("forked compressed copy: %+v, %d events; want 200 new events", res[0], events())
	}
	// The file a load read, grown: continued where that load stopped.
	res = ingestFiles(t, db, Options{}, write("a.log", join(one)))
	if res[0].Rows != 250 || res[0].Duplicates != 0 || res[0].Lines != 250 {
		t.Errorf("grown file: %+v, want its 250 new lines read and nothing else", res[0])
	}
}
