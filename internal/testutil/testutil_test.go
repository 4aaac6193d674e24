package testutil

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

func TestGoldenWritesAndCompares(t *testing.T) {
	path := filepath.Join(t.TempDir(), "sub", "x.golden")
	t.Setenv(UpdateEnv, "1")
	Golden(t, path, []byte("a\nb\n"))
	if b, err := os.ReadFile(path); err != nil || string(b) != "a\nb\n" {
		t.Fatalf("UPDATE_GOLDENS=1 wrote %q, %v", b, err)
	}
	t.Setenv(UpdateEnv, "")
	Golden(t, path, []byte("a\nb\n"))
	var rec recorder
	Golden(&rec, path, []byte("a\nc\n"))
	if !rec.failed || !strings.Contains(rec.msg, "line 2") || !strings.Contains(rec.msg, UpdateEnv) {
		t.Errorf("a changed golden: failed %v, %q", rec.failed, rec.msg)
	}
}

func TestNeedProgram(t *testing.T) {
	t.Setenv("PATH", t.TempDir())
	t.Setenv("CI", "true")
	var rec recorder
	rec.run(func() { NeedProgram(&rec, "apt-get install nothing", "kubesift-no-such-program") })
	if !rec.failed || rec.skipped {
		t.Errorf("CI=true: failed %v skipped %v", rec.failed, rec.skipped)
	}
	t.Setenv("CI", "")
	rec = recorder{}
	rec.run(func() { NeedProgram(&rec, "apt-get install nothing", "kubesift-no-such-program") })
	if rec.failed || !rec.skipped || !strings.Contains(rec.msg, "apt-get install nothing") {
		t.Errorf("locally: failed %v skipped %v %q", rec.failed, rec.skipped, rec.msg)
	}
	dir := os.Getenv("PATH")
	prog := filepath.Join(dir, "kubesift-test-program")
	if err := os.WriteFile(prog, []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	if got := NeedProgram(t, "", "kubesift-no-such-program", "kubesift-test-program"); got != prog {
		t.Errorf("NeedProgram found %q, want %q", got, prog)
	}
}

// recorder is a testing.TB that records failures and skips instead of acting on them.
type recorder struct {
	testing.TB
	failed, skipped bool
	msg             string
}

func (r *recorder) Helper()                           {}
func (r *recorder) Fatal(args ...any)                 { r.failed = true; r.msg = args[0].(string); panic(r) }
func (r *recorder) Fatalf(format string, args ...any) { r.failed = true; r.msg = format; panic(r) }
func (r *recorder) Errorf(format string, args ...any) {
	r.failed = true
	r.msg = fmt.Sprintf(format, args...)
}
func (r *recorder) Skip(args ...any) { r.skipped = true; r.msg = args[0].(string); panic(r) }

// run calls f and recovers the panic that stands for Fatal or Skip's runtime.Goexit.
func (r *recorder) run(f func()) {
	defer func() {
		if p := recover(); p != nil && p != r {
			panic(p)
		}
	}()
	f()
}

// TestEveryTestBinaryAcceptsUpdate: every package of the module that has tests links this
// package, whose -update flag go test ./... -update passes to every test binary (one that does
// not define it fails with "flag provided but not defined").
func TestEveryTestBinaryAcceptsUpdate(t *testing.T) {
	const self = "github.com/kubesift/kubesift/internal/testutil"
	root := filepath.Join("..", "..")
	linked := map[string]bool{}
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			_, modErr := os.Stat(filepath.Join(path, "go.mod"))
			if path != root && (strings.HasPrefix(d.Name(), ".") || d.Name() == "testdata" || modErr == nil) {
				return filepath.SkipDir // another module (samples/record/*) or no package
			}
			return nil
		}
		if !strings.HasSuffix(path, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(token.NewFileSet(), path, nil, parser.ImportsOnly)
		if err != nil {
			return err
		}
		dir := filepath.Dir(path)
		linked[dir] = linked[dir] || slices.ContainsFunc(f.Imports, func(s *ast.ImportSpec) bool { return s.Path.Value == strconv.Quote(self) })
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(linked) < 10 {
		t.Fatalf("found tests in %d directories under %s, expected the module's packages", len(linked), root)
	}
	for dir, ok := range linked {
		if !ok && dir != filepath.Join(root, "internal", "testutil") {
			t.Errorf("%s: no test file imports %s; add testflags_test.go with import _ %q", dir, self, self)
		}
	}
}
