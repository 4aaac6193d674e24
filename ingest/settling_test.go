package ingest

import (
	"testing"
	"time"
)

// TestSettling: Settling is called for each file that loads rows, of every kind of evidence,
// with the bytes read (each file whole) before its load commits, and what it returns after the
// commit (the three small files share one); a file already loaded (nothing to commit) is not
// settled.
func TestSettling(t *testing.T) {
	paths := []string{
		"../samples/flapping/audit.log",
		"../samples/flapping/snapshots/endpoints-2026-11-21T05:59:13Z.json",
		"conntrack/testdata/real/acct_timestamp/conntrack_L.txt",
	}
	db := openTestDB(t)
	var settled, done int
	committed := func(path string) int64 {
		return queryInt(t, db, "SELECT count(*) FROM ingest_files WHERE source_file = '"+path+"'")
	}
	opt := Options{Node: "worker-7", At: time.Date(2026, 11, 21, 4, 0, 0, 0, time.UTC), Settling: func(readBytes int64) func() {
		settled++
		path := paths[(settled-1)%len(paths)]
		if readBytes != int64(len(readFile(t, path))) {
			t.Errorf("%s settled after %d bytes read, want its %d bytes", path, readBytes, len(readFile(t, path)))
		}
		before := committed(path)
		return func() {
			done++
			if after := committed(path); before != 0 || after != 1 {
				t.Errorf("%s: %d loads of it committed when settled, %d when done; want its commit between them", path, before, after)
			}
		}
	}}
	for _, r := range ingestFiles(t, db, opt, paths...) {
		if r.Rows == 0 {
			t.Errorf("%s loaded no rows", r.Path)
		}
	}
	if settled != len(paths) || done != len(paths) {
		t.Errorf("%d files loaded: settled %d times, done %d times; want each %d", len(paths), settled, done, len(paths))
	}
	ingestFiles(t, db, opt, paths...)
	if settled != len(paths) || done != len(paths) {
		t.Errorf("after loading the files again (each already loaded): settled %d times, done %d times; want %d", settled, done, len(paths))
	}
}

// TestIngestReleasesCache: the blocks DuckDB had cached of the database are evicted
// (store.ReleaseCache) once releaseCacheBytes of input are loaded, and at the end of the ingest,
// so that a long ingest does not keep the files it wrote cached up to the memory limit.
func TestIngestReleasesCache(t *testing.T) {
	paths := []string{"../samples/flapping/audit.log", "../samples/healthy/audit.log"}
	for _, every := range []int64{1, 1 << 40} {
		db := openTestDB(t)
		for _, stmt := range []string{
			"CREATE TABLE blocks AS SELECT range AS i, md5(CAST(range AS VARCHAR)) AS s FROM range(3000000)",
			"CHECKPOINT",
			"SELECT count(DISTINCT s) FROM blocks",
		} {
			if _, err := db.Exec(stmt); err != nil {
				t.Fatal(err)
			}
		}
		cached := func() int64 {
			return queryInt(t, db, "SELECT coalesce(sum(memory_usage_bytes), 0) FROM duckdb_memory() WHERE tag = 'BASE_TABLE'")
		}
		before := cached()
		if before < 48<<20 {
			t.Fatalf("%d bytes of blocks cached before the load; want 48 MiB or more", before)
		}
		defer func(was, group int64) { releaseCacheBytes, groupBytes = was, group }(releaseCacheBytes, groupBytes)
		releaseCacheBytes = every
		groupBytes = 0   // each file in its own transaction: the cache is released between transactions
		var second int64 // cached when the second file's rows are in
		loads := 0
		opt := Options{Settling: func(int64) func() {
			if loads++; loads == 2 {
				second = cached()
			}
			return nil
		}}
		ingestFiles(t, db, opt, paths...)
		if every == 1 && second > 32e6 {
			t.Errorf("releasing every byte: %d bytes of blocks cached while the second file loaded (%d before); want at most 32MB", second, before)
		}
		if every > 1 && second < before {
			t.Errorf("releasing every TiB: %d bytes of blocks cached while the second file loaded (%d before); want them kept until the end", second, before)
		}
		if after := cached(); after > 32e6 {
			t.Errorf("releasing every %d bytes: %d bytes of blocks cached after the ingest (%d before); want at most 32MB", every, after, before)
		}
	}
}
