package testdb

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/gofrs/flock"

	"github.com/kubesift/kubesift/ingest"
	"github.com/kubesift/kubesift/store"
)

// CacheDirEnv names the directory of the cache instead of kubesift-testdb-<uid> in the system
// temp directory.
const CacheDirEnv = "KUBESIFT_TESTDB_CACHE"

// Empty returns an empty in-memory database of kubesift's tables, closed when the test ends.
func Empty(t testing.TB) *store.DB {
	t.Helper()
	db, err := store.Open(context.Background(), store.InMemory, ingest.Schema(), store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

// Ingest returns a database of the test's own (closed when the test ends) with dirs loaded by
// ingest.New(db, opt).Ingest into a database file opened with store.Options{}, as analyze's and
// htmlreport's tests load the recordings of samples/. The paths in dirs are loaded as given (they
// are the names the evidence carries), relative to the working directory. opt's Progress and Log do
// not change the database and are not used.
func Ingest(t testing.TB, opt ingest.Options, dirs ...string) *store.DB {
	t.Helper()
	opt.Progress, opt.Log = nil, nil
	recipe := fmt.Sprintf("testdb.Ingest %q %#v", dirs, opt)
	path := Cached(t, recipe, dirs, func(path string) error {
		ctx := context.Background()
		db, err := store.Open(ctx, path, ingest.Schema(), store.Options{})
		if err != nil {
			return err
		}
		inputs, err := ingest.ExpandPaths(dirs)
		if err == nil {
			_, err = ingest.New(db, opt).Ingest(ctx, inputs)
		}
		if err != nil {
			db.Close()
			return fmt.Errorf("loading %s: %w", strings.Join(dirs, " "), err)
		}
		return db.Close()
	})
	db, err := store.Open(context.Background(), path, ingest.Schema(), store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

// Cached returns the path of a copy, the test's own, of the database file that build writes to
// the path it is given. The database is built once and kept in a cache shared by every test binary
// and every run, under a key of everything it can depend on: recipe (which must name what build
// does with which arguments), the names and contents of every file under inputs, the sources of the
// module the test runs in (see sourcesHash) and the Go toolchain and build settings. A change to
// any of them is another key, so a database is never reused for inputs or code it was not built
// from. Concurrent processes building the same key wait for the first one (a lock file), and a
// database appears in the cache only whole (an atomic rename).
func Cached(t testing.TB, recipe string, inputs []string, build func(path string) error) string {
	t.Helper()
	root, err := moduleRoot()
	if err != nil {
		t.Fatal(err)
	}
	dir := os.Getenv(CacheDirEnv)
	if dir == "" {
		dir = filepath.Join(os.TempDir(), "kubesift-testdb-"+strconv.Itoa(os.Getuid()))
	}
	cached, err := cachedPath(dir, root, recipe, inputs, build)
	if err != nil {
		t.Fatal(err)
	}
	own := filepath.Join(t.TempDir(), filepath.Base(cached))
	if err := store.CopyDatabase(own, cached); err != nil {
		t.Fatal(err)
	}
	return own
}

// cachedPath returns the path in dir of the database of recipe over inputs with the sources
// under root, building it first when dir does not hold it.
func cachedPath(dir, root, recipe string, inputs []string, build func(path string) error) (string, error) {
	key, err := cacheKey(root, recipe, inputs)
	if err != nil {
		return "", err
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", fmt.Errorf("test database cache: %w", err)
	}
	path := filepath.Join(dir, key+".duckdb")
	lock := flock.New(filepath.Join(dir, key+".lock"))
	if err := lock.Lock(); err != nil {
		return "", fmt.Errorf("locking the test database cache: %w", err)
	}
	defer lock.Unlock()
	if _, err := os.Stat(path); err == nil {
		return path, nil
	} else if !errors.Is(err, fs.ErrNotExist) {
		return "", fmt.Errorf("test database cache: %w", err)
	}
	work, err := os.MkdirTemp(dir, key+".build-")
	if err != nil {
		return "", fmt.Errorf("test database cache: %w", err)
	}
	defer os.RemoveAll(work)
	built := filepath.Join(work, "k.duckdb")
	if err := build(built); err != nil {
		return "", fmt.Errorf("building the test database (%s): %w", recipe, err)
	}
	if _, err := os.Stat(built + ".wal"); err == nil {
		return "", fmt.Errorf("building the test database (%s): the database was left open (%s.wal exists)", recipe, built)
	}
	if err := os.Rename(built, path); err != nil {
		return "", fmt.Errorf("test database cache: %w", err)
	}
	return path, nil
}

// cacheKey hashes recipe, the files under inputs, the sources under root and the toolchain.
func cacheKey(root, recipe string, inputs []string) (string, error) {
	h := sha256.New()
	fmt.Fprintf(h, "recipe %q\ngo %s %s/%s\n", recipe, runtime.Version(), runtime.GOOS, runtime.GOARCH)
	if bi, ok := debug.ReadBuildInfo(); ok {
		for _, s := range bi.Settings {
			if !strings.HasPrefix(s.Key, "vcs") {
				fmt.Fprintf(h, "setting %s=%s\n", s.Key, s.Value)
			}
		}
	}
	for _, in := range inputs {
		if err := hashTree(h, "input "+in, in, func(string, fs.DirEntry) bool { return true }); err != nil {
			return "", err
		}
	}
	if err := hashTree(h, "source", root, isSource); err != nil {
		return "", err
	}
	return hex.EncodeToString(h.Sum(nil))[:32], nil
}

// sourceExts are the files under the module root that go into a test binary or a database: Go
// code (tests too: they hold the recipes), the SQL, the rules and what else is embedded, and the
// modules' requirements (DuckDB's version among them).
var sourceExts = []string{".go", ".sql", ".yaml", ".yml", ".tmpl", ".css", ".js", ".mod", ".sum"}

// isSource says whether the walk of the module root hashes path (a file) or enters it (a
// directory): not .git and other hidden directories, samples/ (recordings are inputs, named by
// the recipe that loads them), testdata/ and docs/.
func isSource(path string, d fs.DirEntry) bool {
	if d.IsDir() {
		name := d.Name()
		return !(strings.HasPrefix(name, ".") && name != ".") && name != "samples" && name != "testdata" && name != "docs"
	}
	return slices.Contains(sourceExts, filepath.Ext(path))
}

// hashTree writes to h label, then the path under root and the content of every file under root
// (root itself when it is a file) that keep accepts, in lexical order. A symbolic link to a file
// is hashed as that file; one to anything else is an error (ingest follows a link to a directory,
// the walk would not).
func hashTree(h hash.Hash, label, root string, keep func(string, fs.DirEntry) bool) error {
	return filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return fmt.Errorf("test database cache key: %w", err)
		}
		if path != root && !keep(path, d) {
			if d.IsDir() {
				return filepath.SkipDir
			}
			return nil
		}
		if d.IsDir() {
			return nil
		}
		st, err := os.Stat(path) // through a symbolic link
		if err != nil {
			return fmt.Errorf("test database cache key: %w", err)
		}
		if !st.Mode().IsRegular() {
			return fmt.Errorf("test database cache key: %s is not a regular file (%s)", path, st.Mode().Type())
		}
		rel, err := filepath.Rel(root, path)
		if err != nil {
			return err
		}
		f, err := os.Open(path)
		if err != nil {
			return fmt.Errorf("test database cache key: %w", err)
		}
		defer f.Close()
		fmt.Fprintf(h, "%s %q %d\n", label, rel, st.Size())
		if n, err := io.Copy(h, f); err != nil || n != st.Size() {
			return fmt.Errorf("test database cache key: reading %s: %d of %d bytes: %v", path, n, st.Size(), err)
		}
		return nil
	})
}

// moduleRoot is the directory of the go.mod above the working directory (a test runs in its
// package's directory, or where its TestMain moved).
func moduleRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("test database cache: no go.mod above the working directory")
		}
		dir = parent
	}
}
