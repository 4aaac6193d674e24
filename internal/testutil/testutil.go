package testutil

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// UpdateEnv is the environment variable that rewrites every golden file instead of comparing
// with it: UPDATE_GOLDENS=1 go test -tags duckdb_arrow ./...
const UpdateEnv = "UPDATE_GOLDENS"

// update is the same switch as a flag, go test -tags duckdb_arrow ./... -update. Every package
// with tests links this package (TestEveryTestBinaryAcceptsUpdate), so that every test binary
// accepts it.
var update = flag.Bool("update", false, "rewrite every golden file instead of comparing with it (same as "+UpdateEnv+"=1)")

// Updating reports whether this test run rewrites golden files: -update or UPDATE_GOLDENS=1.
func Updating() bool { return *update || os.Getenv(UpdateEnv) == "1" }

// Golden compares got with the golden file at path, or with UPDATE_GOLDENS=1 writes got to it
// (creating its directory).
func Golden(t testing.TB, path string, got []byte) {
	t.Helper()
	if Updating() {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (%s=1 go test -tags duckdb_arrow ./... writes it)", err, UpdateEnv)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s is out of date (rerun with %s=1 if the change is intended); %s", path, UpdateEnv, firstDifference(string(want), string(got)))
	}
}

// firstDifference names the first line where got differs from want and shows both versions.
func firstDifference(want, got string) string {
	w, g := strings.Split(want, "\n"), strings.Split(got, "\n")
	line := func(l []string, i int) string {
		if i < len(l) {
			return l[i]
		}
		return "(end of file)"
	}
	for i := range max(len(w), len(g)) {
		if line(w, i) != line(g, i) {
			return fmt.Sprintf("first difference at line %d:\n--- want ---\n%s\n--- got ---\n%s", i+1, line(w, i), line(g, i))
		}
	}
	return "they differ"
}

// NeedProgram returns the path of the first of names found on $PATH. When none is, the test
// is skipped with a message saying how to install it, or fails under CI=true, where .ci/run
// installs every optional program.
func NeedProgram(t testing.TB, install string, names ...string) string {
	t.Helper()
	for _, name := range names {
		if path, err := exec.LookPath(name); err == nil {
			return path
		}
	}
	Missing(t, fmt.Sprintf("%s not found on PATH (install: %s)", strings.Join(names, " or "), install))
	return ""
}

// Missing skips the test for want of something optional that msg names, or fails it under
// CI=true, where .ci/run installs everything optional.
func Missing(t testing.TB, msg string) {
	t.Helper()
	if os.Getenv("CI") == "true" {
		t.Fatal(msg + "; CI=true requires it")
	}
	t.Skip(msg + "; skipped (under CI=true this fails)")
}

// Scenarios returns the names of the recorded scenarios, the directories of samplesDir other
// than record/ (the recording scripts); a samplesDir that cannot be read fails the test.
func Scenarios(t testing.TB, samplesDir string) []string {
	t.Helper()
	entries, err := os.ReadDir(samplesDir)
	if err != nil {
		t.Fatal(err)
	}
	var dirs []string
	for _, e := range entries {
		if e.IsDir() && e.Name() != "record" {
			dirs = append(dirs, e.Name())
		}
	}
	if len(dirs) == 0 {
		t.Fatalf("no scenarios in %s", samplesDir)
	}
	return dirs
}
