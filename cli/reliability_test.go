package cli

import (
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/kubesift/kubesift/internal/testutil"
)

// TestReliabilityScriptNamesTests: each name in the -run pattern of .ci/reliability matches a test
// of the packages it runs, so that a renamed failure test cannot drop out of it unseen, and the
// script is valid bash. CI does not run the script: with --short it runs tests the suite runs.
func TestReliabilityScriptNamesTests(t *testing.T) {
	const script = "../.ci/reliability"
	b, err := os.ReadFile(script)
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?m)^tests='([^']+)'$`).FindSubmatch(b)
	if m == nil {
		t.Fatalf("%s: no line tests='…'", script)
	}
	run := regexp.MustCompile(`(?m)^go test .* -run "\$tests" (.+)$`).FindSubmatch(b)
	if run == nil {
		t.Fatalf("%s: no go test line running $tests", script)
	}
	testFunc := regexp.MustCompile(`(?m)^func (Test\w+)\(t \*testing\.T\)`)
	var tests []string
	for _, pkg := range strings.Fields(string(run[1])) {
		dir, recursive := strings.CutSuffix(pkg, "/...")
		err := filepath.WalkDir(filepath.Join("..", dir), func(path string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if d.IsDir() && !recursive && path != filepath.Join("..", dir) {
				return filepath.SkipDir
			}
			if !d.IsDir() && strings.HasSuffix(path, "_test.go") {
				src, err := os.ReadFile(path)
				if err != nil {
					return err
				}
				for _, f := range testFunc.FindAllSubmatch(src, -1) {
					tests = append(tests, string(f[1]))
				}
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	for _, name := range strings.Split(string(m[1]), "|") {
		found := false
		for _, test := range tests {
			found = found || strings.Contains(test, name)
		}
		if !found {
			t.Errorf("%s: %q matches no test of %s", script, name, run[1])
		}
	}
	bash := testutil.NeedProgram(t, "apt-get install bash", "bash")
	if out, err := exec.Command(bash, "-n", script).CombinedOutput(); err != nil {
		t.Fatalf("bash -n %s: %v\n%s", script, err, out)
	}
}
