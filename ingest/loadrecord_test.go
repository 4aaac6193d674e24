package ingest

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
)

// TestIngestFilesRowOfEachLoad checks every column a load writes to ingest_files, alone and in a
// run of files recorded with one statement: an audit log read to its end (its device and inode,
// where it stopped), a gzipped one with a damaged member (a rejected line, and the 4 KiB before
// where it stopped hashed, as for every compressed file), an endpoints snapshot (no offset to
// resume from, a note), all under one cluster; and a file alone with no cluster.
func TestIngestFilesRowOfEachLoad(t *testing.T) {
	dir := t.TempDir()
	plain := filepath.Join(dir, "a", "audit.log")
	if err := os.MkdirAll(filepath.Dir(plain), 0o755); err != nil {
		t.Fatal(err)
	}
	events := groupEvents(0, 20, true)
	writeFileT(t, plain, events)
	damaged := filepath.Join(dir, "a", "b.log.gz")
	writeFileT(t, damaged, readFile(t, "testdata/corrupt-middle-member.bad.log.gz"))
	snapshot := filepath.Join(dir, "a", "c.json")
	writeFileT(t, snapshot, readFile(t, "k8sobj/testdata/list.good.json"))
	alone := filepath.Join(dir, "d.log")
	writeFileT(t, alone, groupEvents(100, 3, true))

	db := openTestDB(t)
	res := ingestFiles(t, db, Options{Cluster: "c1"}, filepath.Join(dir, "a"))
	if len(res) != 3 || res[0].Together != 2 || res[2].Together != 1 {
		t.Fatalf("results %+v, want the audit logs of a/ loaded in one run, then the snapshot", res)
	}
	ingestFiles(t, db, Options{}, alone)

	got := map[string][]string{}
	for _, row := range queryStrings(t, db, `SELECT concat_ws('|', source_file, kind, coalesce(cluster, 'NULL'),
		size_bytes, read_bytes, start_offset, coalesce(end_offset::VARCHAR, 'NULL'), coalesce(end_line::VARCHAR, 'NULL'),
		lines, "rows", rejected, duplicates, coalesce(note, 'NULL'), coalesce(device::VARCHAR, 'NULL'),
		coalesce(inode::VARCHAR, 'NULL'), head_bytes, head_hash IS NOT NULL, tail_hash IS NOT NULL,
		identity IS NOT NULL, finished_at >= started_at)
		FROM ingest_files ORDER BY load_id`) {
		cols := strings.Split(row, "|")
		got[cols[0]] = cols
	}
	stat := func(path string) (size, dev, ino string) {
		fi, err := os.Stat(path)
		if err != nil {
			t.Fatal(err)
		}
		st := fi.Sys().(*syscall.Stat_t)
		return strconv.FormatInt(fi.Size(), 10), strconv.FormatUint(uint64(st.Dev), 10), strconv.FormatUint(st.Ino, 10)
	}
	check := func(path string, want map[int]string) {
		t.Helper()
		row, ok := got[path]
		if !ok {
			t.Errorf("no ingest_files row for %s in %q", path, got)
			return
		}
		for col, w := range want {
			if row[col] != w {
				t.Errorf("%s: column %d is %q, want %q (row %q)", path, col, row[col], w, row)
			}
		}
	}
	// columns: 0 source_file, 1 kind, 2 cluster, 3 size_bytes, 4 read_bytes, 5 start_offset, 6 end_offset,
	// 7 end_line, 8 lines, 9 rows, 10 rejected, 11 duplicates, 12 note, 13 device, 14 inode, 15 head_bytes,
	// 16 head_hash, 17 tail_hash, 18 identity, 19 finished after started
	size, dev, ino := stat(plain)
	n := strconv.Itoa(len(events))
	check(plain, map[int]string{1: "audit", 2: "c1", 3: size, 4: n, 5: "0", 6: n, 7: "20", 8: "20", 9: "20",
		10: "0", 11: "0", 12: "NULL", 13: dev, 14: ino, 15: n, 16: "true", 17: "true", 18: "true", 19: "true"})
	size, dev, ino = stat(damaged)
	check(damaged, map[int]string{1: "audit", 2: "c1", 3: size, 9: "4", 10: "1", 12: "NULL", 13: dev, 14: ino, 16: "true", 17: "true", 19: "true"})
	size, dev, ino = stat(snapshot)
	check(snapshot, map[int]string{1: "endpoints", 2: "c1", 3: size, 6: "NULL", 7: "NULL", 13: dev, 14: ino, 17: "false", 19: "true"})
	if row := got[snapshot]; row != nil && !strings.HasPrefix(row[12], "no capture time in the path") {
		t.Errorf("%s: note %q, want the capture time's", snapshot, row[12])
	}
	size, dev, ino = stat(alone)
	check(alone, map[int]string{1: "audit", 2: "NULL", 3: size, 6: size, 7: "3", 9: "3", 12: "NULL", 13: dev, 14: ino, 19: "true"})
}
