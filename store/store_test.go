package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kubesift/kubesift/internal/jemalloc"
)

// An in-memory database spills into a private directory of its own, never into ".tmp" under the
// working directory (which may be read-only, or the user's checkout), and removes it on Close.
func TestInMemorySpillsIntoAPrivateDirectory(t *testing.T) {
	ctx := context.Background()
	cwd := t.TempDir()
	t.Chdir(cwd)
	db, err := Open(ctx, InMemory, testSchema, Options{MemoryLimit: "64MB"})
	if err != nil {
		t.Fatal(err)
	}
	spill := db.TempDir()
	var setting string
	if err := db.QueryRowContext(ctx, "SELECT current_setting('temp_directory')").Scan(&setting); err != nil {
		t.Fatal(err)
	}
	if setting != spill || spill == "" || strings.HasPrefix(spill, cwd) {
		t.Fatalf("temp_directory = %q, TempDir = %q: want a private directory outside %s", setting, spill, cwd)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(spill); !os.IsNotExist(err) {
		t.Errorf("spill directory %s still there after Close (%v)", spill, err)
	}
}

// TestCopyDatabase: the copy holds the same database, and an existing file is never overwritten.
func TestCopyDatabase(t *testing.T) {
	dir := t.TempDir()
	src := filepath.Join(dir, "src.duckdb")
	db, err := Open(context.Background(), src, testSchema, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec("CREATE TABLE t AS SELECT 42 AS v"); err != nil {
		t.Fatal(err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	dst := filepath.Join(dir, "dst.duckdb")
	if err := CopyDatabase(dst, src); err != nil {
		t.Fatal(err)
	}
	cp, err := Open(context.Background(), dst, testSchema, Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer cp.Close()
	var v int
	if err := cp.QueryRow("SELECT v FROM t").Scan(&v); err != nil || v != 42 {
		t.Errorf("copy holds %d (%v), want the table of the original", v, err)
	}
	if err := CopyDatabase(dst, src); !errors.Is(err, fs.ErrExist) {
		t.Errorf("copying onto an existing file: %v, want it refused", err)
	}
}

// TestEveryInstancePurgesInTheBackground: jemalloc's background thread runs while a database is
// open, and again once a sandbox has closed (DuckDB sets it off whenever an instance closes) and
// the next one has opened, as the charts' sandbox does after the analysis's.
func TestEveryInstancePurgesInTheBackground(t *testing.T) {
	if _, err := jemalloc.BackgroundThread(); errors.Is(err, jemalloc.ErrNotLinked) {
		t.Skip("DuckDB links jemalloc into its Linux builds only")
	}
	running := func(when string) {
		t.Helper()
		if on, err := jemalloc.BackgroundThread(); err != nil || !on {
			t.Errorf("%s: jemalloc's background thread runs: %v (%v)", when, on, err)
		}
	}
	ctx := context.Background()
	db, err := Open(ctx, filepath.Join(t.TempDir(), "k.duckdb"), testSchema, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	running("database open")
	for i := range 2 {
		sandbox, err := db.Sandboxed(ctx)
		if err != nil {
			t.Fatal(err)
		}
		running(fmt.Sprintf("sandbox %d open", i+1))
		if err := sandbox.Close(); err != nil {
			t.Fatal(err)
		}
	}
}

// TestThreads: Options.Threads caps DuckDB's threads, in the sandbox the rules run in too (the
// database's own connection in memory, an instance of its own for a file); without it the
// database has DuckDB's default.
func TestThreads(t *testing.T) {
	for _, path := range []string{InMemory, filepath.Join(t.TempDir(), "k.duckdb")} {
		t.Run(filepath.Base(path), func(t *testing.T) { testThreads(t, path) })
	}
}

// inSandbox opens the database at path with opt and its sandbox, calls f with the sandbox, and
// closes both before it returns.
func inSandbox(t *testing.T, path string, opt Options, f func(*Sandbox)) {
	t.Helper()
	ctx := context.Background()
	db, err := Open(ctx, path, testSchema, opt)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	sandbox, err := db.Sandboxed(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer sandbox.Close()
	f(sandbox)
}

func testThreads(t *testing.T, path string) {
	ctx := context.Background()
	threads := func(opt Options) int64 {
		t.Helper()
		var n int64
		inSandbox(t, path, opt, func(sandbox *Sandbox) {
			if err := sandbox.QueryRowContext(ctx, "SELECT current_setting('threads')").Scan(&n); err != nil {
				t.Fatal(err)
			}
		})
		return n
	}
	if n := threads(Options{Threads: 1}); n != 1 {
		t.Errorf("Threads: 1 gives %d threads", n)
	}
	plain, err := sql.Open("duckdb", "")
	if err != nil {
		t.Fatal(err)
	}
	defer plain.Close()
	var want int64
	if err := plain.QueryRowContext(ctx, "SELECT current_setting('threads')").Scan(&want); err != nil {
		t.Fatal(err)
	}
	if n := threads(Options{}); n != want {
		t.Errorf("without Threads: %d threads, want DuckDB's default %d", n, want)
	}
}
