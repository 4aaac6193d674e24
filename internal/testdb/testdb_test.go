package testdb

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/kubesift/kubesift/ingest"
)

// TestCacheRebuildsWhenAKeyInputChanges: the same recipe, inputs and sources reuse the database;
// a change to an input file's content, a new input file, a changed Go or SQL source or another
// recipe each build it again, and files that are not sources (docs, testdata) do not.
func TestCacheRebuildsWhenAKeyInputChanges(t *testing.T) {
	cache, root, in := t.TempDir(), t.TempDir(), t.TempDir()
	write := func(path, content string) {
		t.Helper()
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write(filepath.Join(root, "go.mod"), "module example.com/m\n")
	write(filepath.Join(root, "ingest", "load.go"), "package ingest\n")
	write(filepath.Join(root, "queries", "q.sql"), "SELECT 1\n")
	write(filepath.Join(in, "audit.log"), "{}\n")
	builds := 0
	get := func(recipe string) string {
		t.Helper()
		path, err := cachedPath(cache, root, recipe, []string{in}, func(path string) error {
			builds++
			return os.WriteFile(path, []byte(recipe), 0o644)
		})
		if err != nil {
			t.Fatal(err)
		}
		return path
	}
	step := func(what string, wantBuilds int) {
		t.Helper()
		get("r")
		if builds != wantBuilds {
			t.Errorf("%s: %d builds, want %d", what, builds, wantBuilds)
		}
	}
	first := get("r")
	step("the same key again", 1)
	if again := get("r"); again != first {
		t.Errorf("the same key: %s then %s", first, again)
	}
	write(filepath.Join(in, "audit.log"), "{ }\n")
	step("an input's content changed", 2)
	write(filepath.Join(in, "sub", "more.log"), "{}\n")
	step("an input file added", 3)
	write(filepath.Join(root, "ingest", "load.go"), "package ingest // changed\n")
	step("a Go source changed", 4)
	write(filepath.Join(root, "queries", "q.sql"), "SELECT 2\n")
	step("a SQL source changed", 5)
	write(filepath.Join(root, "go.sum"), "example.com/dep v1.0.0 h1:x\n")
	step("go.sum added", 6)
	write(filepath.Join(root, "README.md"), "docs\n")
	write(filepath.Join(root, "docs", "x.go"), "package docs\n")
	write(filepath.Join(root, "ingest", "testdata", "golden.go"), "package golden\n")
	write(filepath.Join(root, "samples", "s", "audit.log"), "{}\n")
	step("only files that are not sources changed", 6)
	if get("other recipe"); builds != 7 {
		t.Errorf("another recipe: %d builds, want 7", builds)
	}
	entries, err := os.ReadDir(cache)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if strings.Contains(e.Name(), ".build-") {
			t.Errorf("build directory %s left in the cache", e.Name())
		}
	}
}

// TestCacheBuildsOnceUnderConcurrency: callers that ask for the same key at once wait for one
// build; a failed build leaves nothing in the cache.
func TestCacheBuildsOnceUnderConcurrency(t *testing.T) {
	cache, root := t.TempDir(), t.TempDir()
	if err := os.WriteFile(filepath.Join(root, "go.mod"), []byte("module example.com/m\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := cachedPath(cache, root, "fails", nil, func(string) error { return errors.New("no") }); err == nil || !strings.Contains(err.Error(), "no") {
		t.Errorf("a failing build: %v", err)
	}
	var mu sync.Mutex
	builds := 0
	var wg sync.WaitGroup
	paths := make([]string, 8)
	for i := range paths {
		wg.Go(func() {
			path, err := cachedPath(cache, root, "fails", nil, func(path string) error {
				mu.Lock()
				builds++
				mu.Unlock()
				return os.WriteFile(path, []byte("db"), 0o644)
			})
			if err != nil {
				t.Error(err)
			}
			paths[i] = path
		})
	}
	wg.Wait()
	if builds != 1 {
		t.Errorf("%d builds by 8 concurrent callers, want 1 (the failed one before cached nothing)", builds)
	}
	for _, p := range paths {
		if p != paths[0] {
			t.Errorf("concurrent callers got %q", paths)
			break
		}
	}
}

// TestIngestLoadsAndRebuilds loads a recording through the cache: each test gets a database of its
// own, and a changed recording is loaded again rather than taken from the cache.
func TestIngestLoadsAndRebuilds(t *testing.T) {
	cache := t.TempDir()
	t.Setenv(CacheDirEnv, cache)
	log, err := os.ReadFile("../../samples/real-lab/audit.log")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	path := filepath.Join(dir, "audit.log")
	count := func(want int) {
		t.Helper()
		db := Ingest(t, ingest.Options{}, dir)
		var n int
		if err := db.QueryRowContext(context.Background(), "SELECT count(*) FROM audit_events").Scan(&n); err != nil {
			t.Fatal(err)
		}
		if n != want {
			t.Errorf("%d audit events, want %d", n, want)
		}
		if _, err := db.ExecContext(context.Background(), "DELETE FROM audit_events"); err != nil {
			t.Fatal(err) // the test's own copy: the cached database keeps its rows
		}
	}
	if err := os.WriteFile(path, log, 0o644); err != nil {
		t.Fatal(err)
	}
	count(1204)
	count(1204)
	lines := strings.SplitAfter(string(log), "\n")
	if err := os.WriteFile(path, []byte(strings.Join(lines[:100], "")), 0o644); err != nil {
		t.Fatal(err)
	}
	count(100)
	if dbs, _ := filepath.Glob(filepath.Join(cache, "*.duckdb")); len(dbs) != 2 {
		t.Errorf("cached databases %q, want one per content of the recording", dbs)
	}
}
