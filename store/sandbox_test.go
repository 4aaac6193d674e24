package store

import (
	"bytes"
	"context"
	"crypto/sha256"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// escapes are statements that wrote, read or attached files through the old sandbox (DB is the
// database file's path, DIR its directory), or that change data.
var escapes = []string{
	"COPY (SELECT 'owned' x) TO 'DB' (FORMAT csv, USE_TMP_FILE false)",
	"COPY (SELECT 'owned' x) TO 'DB.wal' (FORMAT csv)",
	"COPY runs TO 'DIR/out.csv'",
	"EXPORT DATABASE 'DB.tmp/export'",
	"ATTACH 'DB.tmp/new.duckdb' AS other",
	"SELECT content FROM read_text('DB')",
	"SELECT content FROM read_blob('DB')",
	"SELECT content FROM read_blob('DB.wal')",
	"SELECT * FROM read_csv('DIR/secret.csv')",
	"SELECT * FROM glob('DIR/*')",
	"DELETE FROM runs; SELECT 1",
	"DELETE FROM runs",
	"DROP TABLE runs",
	"INSERT INTO runs (started_at) VALUES (now())",
	"SELECT 1; DELETE FROM runs",
	"CREATE TABLE x AS SELECT 1",
	"SET enable_external_access = true",
	"SET disabled_filesystems = ''",
	"RESET lock_configuration",
	"INSTALL httpfs",
	"LOAD httpfs",
	"CALL checkpoint()",
	"CHECKPOINT",
	"CHECKPOINT kubesift_stages",
	"CREATE TABLE kubesift_stages.main.x AS SELECT 1",
	"DETACH kubesift_stages",
	"PRAGMA enable_profiling",
	"EXPLAIN ANALYZE COPY runs TO 'DIR/explained.csv'",
	"BEGIN TRANSACTION",
}

func TestSandboxRefusesWritesAndFiles(t *testing.T) {
	ctx := context.Background()
	for _, mode := range []string{"read-only", "read-write", "in-memory", "no-spill"} {
		t.Run(mode, func(t *testing.T) {
			dir := t.TempDir()
			path := filepath.Join(dir, "k.duckdb")
			w, err := Open(ctx, path, testSchema, Options{})
			if err != nil {
				t.Fatal(err)
			}
			if _, err := w.ExecContext(ctx, "INSERT INTO runs (started_at, files) VALUES (now(), 7)"); err != nil {
				t.Fatal(err)
			}
			os.WriteFile(filepath.Join(dir, "secret.csv"), []byte("a\n1\n"), 0o600)
			var db *DB
			switch mode {
			case "read-only":
				w.Close()
				db, err = Open(ctx, path, testSchema, Options{ReadOnly: true})
			case "read-write":
				db = w
			case "no-spill": // no temp directory beside the database: the sandbox has no file access at all
				w.Close()
				os.WriteFile(path+".tmp", nil, 0o600)
				db, err = Open(ctx, path, testSchema, Options{ReadOnly: true})
			case "in-memory":
				w.Close()
				db, err = Open(ctx, InMemory, testSchema, Options{})
				if err == nil {
					_, err = db.ExecContext(ctx, "INSERT INTO runs (started_at, files) VALUES (now(), 7)")
				}
			}
			if err != nil {
				t.Fatal(err)
			}
			defer db.Close()
			sb, err := db.Sandboxed(ctx)
			if err != nil {
				t.Fatal(err)
			}
			// an ASOF join always plans as one, whatever DuckDB estimates (see lockDown)
			var threshold int
			if err := sb.QueryRowContext(ctx, "SELECT CAST(current_setting('asof_loop_join_threshold') AS INTEGER)").Scan(&threshold); err != nil || threshold != 0 {
				t.Errorf("asof_loop_join_threshold = %d (%v), want 0", threshold, err)
			}
			before := snapshotDir(t, dir)
			for _, q := range escapes {
				q = strings.NewReplacer("DB", path, "DIR", dir).Replace(q)
				rows, err := sb.QueryContext(ctx, q)
				if err == nil {
					rows.Close()
					t.Errorf("%s: ran", q)
				} else if !errors.Is(err, ErrNotReadOnly) && !strings.Contains(err.Error(), "Permission Error") {
					t.Errorf("%s: refused for another reason: %v", q, err)
				}
			}
			var files int
			if err := sb.QueryRowContext(ctx, "WITH r AS (SELECT * FROM runs) SELECT files FROM r").Scan(&files); err != nil || files != 7 {
				t.Errorf("a plain SELECT: %d, %v", files, err)
			}
			if err := sb.QueryRowContext(ctx, "DELETE FROM runs").Scan(&files); err == nil || !strings.Contains(err.Error(), ErrNotReadOnly.Error()) {
				t.Errorf("QueryRowContext of a DELETE: %v", err)
			}
			if _, err := sb.QueryContext(ctx, "SELECT 1; SELECT 2"); !errors.Is(err, ErrNotReadOnly) {
				t.Errorf("two statements: %v", err)
			}
			// a stage runs only a single SELECT, into a temporary table of its own name form
			for _, q := range escapes {
				q = strings.NewReplacer("DB", path, "DIR", dir).Replace(q)
				if err := sb.Stage(ctx, "stage_x", q); err == nil {
					t.Errorf("stage of %s: ran", q)
				} else if !errors.Is(err, ErrNotReadOnly) && !strings.Contains(err.Error(), "Permission Error") {
					t.Errorf("stage of %s: refused for another reason: %v", q, err)
				}
			}
			for _, name := range []string{"runs", "main.stage_x", "stage_x; DROP TABLE runs", "Stage_x"} {
				if err := sb.Stage(ctx, name, "SELECT 1"); err == nil || !strings.Contains(err.Error(), "want stage_") {
					t.Errorf("stage named %q: %v", name, err)
				}
			}
			if err := sb.Stage(ctx, "stage_runs", "SELECT files * $factor AS f FROM runs -- a comment ends the query", sql.Named("factor", 6)); err != nil {
				t.Fatal(err)
			}
			if err := sb.QueryRowContext(ctx, "SELECT f FROM stage_runs").Scan(&files); err != nil || files != 42 {
				t.Errorf("the staged table: %d, %v", files, err)
			}
			// CompressStages compresses what is staged (a stage of 100,000 rows of five distinct strings
			// is stored with a dictionary, not as 100,000 strings), and leaves it readable
			if err := sb.Stage(ctx, "stage_big", "SELECT 'node-' || (i % 5) AS node FROM range(100000) r(i)"); err != nil {
				t.Fatal(err)
			}
			compressed := func() (n int) {
				if err := sb.QueryRowContext(ctx, "SELECT count(*) FROM pragma_storage_info('kubesift_stages.main.stage_big') WHERE column_name = 'node' AND segment_type = 'VARCHAR' AND compression <> 'Uncompressed'").Scan(&n); err != nil {
					t.Fatal(err)
				}
				return n
			}
			if n := compressed(); n != 0 {
				t.Errorf("%d compressed segments before CompressStages", n)
			}
			if err := sb.CompressStages(ctx); err != nil {
				t.Fatal(err)
			}
			if n := compressed(); n == 0 {
				t.Error("no compressed segment after CompressStages")
			}
			var nodes int
			if err := sb.QueryRowContext(ctx, "SELECT count(DISTINCT node) FROM stage_big").Scan(&nodes); err != nil || nodes != 5 {
				t.Errorf("the compressed stage: %d nodes, %v", nodes, err)
			}
			for _, name := range []string{"stage_runs", "stage_big"} {
				if err := sb.DropStage(ctx, name); err != nil {
					t.Fatal(err)
				}
				if err := sb.QueryRowContext(ctx, "SELECT count(*) FROM "+name).Scan(&files); err == nil {
					t.Errorf("the staged table %s outlives DropStage", name)
				}
				if err := sb.QueryRowContext(ctx, "SELECT count(*) FROM kubesift_stages.main."+name).Scan(&files); err == nil {
					t.Errorf("the table behind %s outlives DropStage", name)
				}
			}
			// COPY of a single SELECT into the sandbox's own directory, handed on; never anything else
			for _, q := range escapes {
				q = strings.NewReplacer("DB", path, "DIR", dir).Replace(q)
				var out bytes.Buffer
				if _, err := sb.CopyParquet(ctx, q, &out); err == nil && out.Len() > 0 {
					t.Errorf("parquet of %s: ran", q)
				} else if err != nil && !errors.Is(err, ErrNotReadOnly) && !strings.Contains(err.Error(), "Permission Error") {
					t.Errorf("parquet of %s: refused for another reason: %v", q, err)
				}
			}
			var parquet bytes.Buffer
			copied, err := sb.CopyParquet(ctx, "SELECT files FROM runs -- a comment ends the query", &parquet)
			if err != nil {
				t.Fatal(err)
			}
			if wantCopy := mode == "read-only" || mode == "read-write"; copied != wantCopy || copied != bytes.HasPrefix(parquet.Bytes(), []byte("PAR1")) {
				t.Errorf("parquet: copied %v (want %v), %d bytes", copied, wantCopy, parquet.Len())
			}
			if err := sb.Close(); err != nil {
				t.Fatal(err)
			}
			if after := snapshotDir(t, dir); !slices.Equal(before, after) {
				t.Errorf("the sandboxed SQL changed the directory:\nbefore %q\nafter  %q", before, after)
			}
			if mode == "read-write" {
				// the writer still writes once the sandbox is closed
				if _, err := db.ExecContext(ctx, "INSERT INTO runs (started_at) VALUES (now())"); err != nil {
					t.Errorf("writing after the sandbox: %v", err)
				}
			}
		})
	}
}

// snapshotDir lists the files under dir with a hash of their contents, to see that nothing
// was written.
func snapshotDir(t *testing.T, dir string) []string {
	t.Helper()
	var out []string
	filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		out = append(out, fmt.Sprintf("%s %x", p, sha256.Sum256(b)))
		return nil
	})
	return out
}

// emptyDatabaseFile makes a database file with testSchema's tables and no rows, and returns its
// path and size.
func emptyDatabaseFile(t *testing.T) (string, int64) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "k.duckdb")
	db, err := Open(context.Background(), path, testSchema, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	info, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	return path, info.Size()
}

// TestSandboxKeepsItsBlocksInAPool: the sandbox of a database file of a quarter of its memory limit
// or more, opened read-only, takes its buffer blocks from a region of its own as large as the limit
// (blockPool); that of a smaller one, or of one opened for writing (run), from the allocator.
func TestSandboxKeepsItsBlocksInAPool(t *testing.T) {
	ctx := context.Background()
	path, size := emptyDatabaseFile(t)
	for _, c := range []struct {
		limitBytes int64
		readOnly   bool
		pooled     bool
	}{
		{4 * size, true, true},
		{4 * size, false, false},
		{4*size + 4<<10, true, false},
		{300 << 20, true, false},
	} {
		db, err := Open(ctx, path, testSchema, Options{MemoryLimit: fmt.Sprintf("%dKiB", c.limitBytes>>10), ReadOnly: c.readOnly})
		if err != nil {
			t.Fatal(err)
		}
		sandbox, err := db.Sandboxed(ctx)
		if err != nil {
			t.Fatal(err)
		}
		var pool, limit string
		if err := sandbox.QueryRowContext(ctx, "SELECT current_setting('block_allocator_memory'), current_setting('memory_limit')").Scan(&pool, &limit); err != nil {
			t.Fatal(err)
		}
		if c.pooled && pool != limit {
			t.Errorf("a database of %d bytes under a limit of %d bytes (read-only %v): block_allocator_memory is %s; want the memory limit, %s", size, c.limitBytes, c.readOnly, pool, limit)
		}
		if !c.pooled && pool != "0 bytes" {
			t.Errorf("a database of %d bytes under a limit of %d bytes (read-only %v): block_allocator_memory is %s; want none", size, c.limitBytes, c.readOnly, pool)
		}
		sandbox.Close()
		db.Close()
	}
}

// TestOpenForWritingRemovesStaleTempFiles: what killed processes left in the database's temp
// directory (a sandbox's spill directory, the rows a load held back) is removed when the
// database is next opened for writing, not when it is opened read-only (another process may be
// writing then), and the temp directory's other files stay.
func TestOpenForWritingRemovesStaleTempFiles(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "k.duckdb")
	db, err := Open(ctx, path, testSchema, Options{})
	if err != nil {
		t.Fatal(err)
	}
	db.Close()
	tmp := db.TempDir()
	sandbox := filepath.Join(tmp, sandboxDirPrefix+"123")
	held := filepath.Join(tmp, HeldFilePrefix+"endpoint_addresses-456.arrow")
	other := filepath.Join(tmp, "other")
	if err := os.MkdirAll(sandbox, 0o700); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{filepath.Join(sandbox, "db"), held, other} {
		if err := os.WriteFile(f, []byte("left behind"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	left := func() []string {
		t.Helper()
		entries, err := os.ReadDir(tmp)
		if err != nil {
			t.Fatal(err)
		}
		var names []string
		for _, e := range entries {
			names = append(names, e.Name())
		}
		return names
	}
	for _, opt := range []Options{{ReadOnly: true}, {}} {
		db, err := Open(ctx, path, testSchema, opt)
		if err != nil {
			t.Fatal(err)
		}
		db.Close()
		want := []string{HeldFilePrefix + "endpoint_addresses-456.arrow", "other", sandboxDirPrefix + "123"}
		if !opt.ReadOnly {
			want = []string{"other"}
		}
		if got := left(); !slices.Equal(got, want) {
			t.Errorf("after an open with %+v: %v, want %v", opt, got, want)
		}
	}
}
