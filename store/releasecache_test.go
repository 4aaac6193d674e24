package store

import (
	"context"
	"path/filepath"
	"testing"
)

// TestReleaseCache: the blocks a query read stay in DuckDB's buffer pool until ReleaseCache
// evicts them, and the memory limit is the one the database was opened with afterwards; an
// in-memory database (whose blocks could only be spilled) is left as it is. The scan needs no
// memory of its own, so the table's blocks (about 110 MiB) all stay cached; an aggregate's hash
// table would evict some of them, and a smaller table left the check too close to its bound.
func TestReleaseCache(t *testing.T) {
	ctx := context.Background()
	db, err := Open(ctx, filepath.Join(t.TempDir(), "cache.duckdb"), testSchema, Options{MemoryLimit: "500MB"})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	cached := func() int64 {
		t.Helper()
		var n int64
		if err := db.QueryRowContext(ctx, "SELECT coalesce(sum(memory_usage_bytes), 0) FROM duckdb_memory() WHERE tag = 'BASE_TABLE'").Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	limit := func() string {
		t.Helper()
		var s string
		if err := db.QueryRowContext(ctx, "SELECT current_setting('memory_limit')").Scan(&s); err != nil {
			t.Fatal(err)
		}
		return s
	}
	for _, stmt := range []string{
		"CREATE TABLE blocks AS SELECT range AS i, md5(CAST(range AS VARCHAR)) AS s FROM range(5000000)",
		"CHECKPOINT",
		"SELECT max(s), sum(i) FROM blocks",
	} {
		if _, err := db.ExecContext(ctx, stmt); err != nil {
			t.Fatal(err)
		}
	}
	before, opened := cached(), limit()
	if before < 64<<20 {
		t.Fatalf("the table's blocks take %d bytes of the buffer pool after a scan; want 64 MiB or more, beyond the floor of 32MB", before)
	}
	if err := db.ReleaseCache(ctx); err != nil {
		t.Fatal(err)
	}
	if after := cached(); after > 32e6 {
		t.Errorf("%d bytes of the table's blocks cached after ReleaseCache (%d before); want at most the floor of 32MB", after, before)
	}
	if got := limit(); got != opened {
		t.Errorf("memory_limit %s after ReleaseCache; want %s, as opened", got, opened)
	}

	mem, err := Open(ctx, InMemory, testSchema, Options{MemoryLimit: "64MB"})
	if err != nil {
		t.Fatal(err)
	}
	defer mem.Close()
	if _, err := mem.ExecContext(ctx, "CREATE TABLE blocks AS SELECT range AS i FROM range(100000)"); err != nil {
		t.Fatal(err)
	}
	if err := mem.ReleaseCache(ctx); err != nil {
		t.Fatal(err)
	}
	var rows int64
	if err := mem.QueryRowContext(ctx, "SELECT count(*) FROM blocks").Scan(&rows); err != nil || rows != 100000 {
		t.Errorf("in-memory database after ReleaseCache: %d rows (%v); want 100000", rows, err)
	}
}
