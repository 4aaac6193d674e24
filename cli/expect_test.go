package cli

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/kubesift/kubesift/analyze"
	"github.com/kubesift/kubesift/rules"
)

// expectations is samples/<scenario>/expect.yaml: the README's "must find / must not report"
// lists as data, for the whole recording and for --since/--until windows of it.
type expectations struct {
	Args        []string      `yaml:"args"`
	MustFind    []rules.Match `yaml:"must_find"`
	MustNotFind []rules.Match `yaml:"must_not_find"`
	Windows     []struct {
		Since       time.Time     `yaml:"since"`
		Until       time.Time     `yaml:"until"`
		MustFind    []rules.Match `yaml:"must_find"`
		MustNotFind []rules.Match `yaml:"must_not_find"`
	} `yaml:"windows"`
}

// TestScenarioExpectations loads every samples/<scenario>/ that has an expect.yaml, analyzes it
// (whole, then each window) and checks that every must_find matches a finding and no
// must_not_find does.
func TestScenarioExpectations(t *testing.T) {
	paths, err := filepath.Glob("../samples/*/expect.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if len(paths) == 0 {
		t.Fatal("no samples/*/expect.yaml")
	}
	for _, path := range paths {
		dir := filepath.Dir(path)
		t.Run(filepath.Base(dir), func(t *testing.T) {
			b, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			var exp expectations
			dec := yaml.NewDecoder(bytes.NewReader(b))
			dec.KnownFields(true)
			if err := dec.Decode(&exp); err != nil {
				t.Fatalf("%s: %v", path, err)
			}
			db := filepath.Join(t.TempDir(), "k.duckdb")
			if r := runCLI(t, "ingest", "--quiet", "--db", db, dir); r.code != ExitOK {
				t.Fatalf("ingest %s: %+v", dir, r)
			}
			check := func(what string, args []string, mustFind, mustNotFind []rules.Match) {
				r := runCLI(t, append([]string{"analyze", "--db", db, "-o", "json"}, args...)...)
				if r.code != ExitOK {
					t.Fatalf("%s: analyze %v: %+v", what, args, r)
				}
				var rep struct{ Findings []analyze.Finding }
				if err := json.Unmarshal([]byte(r.stdout), &rep); err != nil {
					t.Fatal(err)
				}
				found := make([]rules.Finding, len(rep.Findings))
				for i, f := range rep.Findings {
					found[i] = analyze.MatchFinding(f)
				}
				for _, m := range mustFind {
					if !matchesAny(m, found) {
						t.Errorf("%s: must find %s; found:\n%s", what, m, describe(found))
					}
				}
				for _, m := range mustNotFind {
					for _, f := range found {
						if m.Matches(f) {
							t.Errorf("%s: must not find %s; found %s %s %s: %s", what, m, f.Rule, f.Severity, f.Object, f.Summary)
						}
					}
				}
			}
			check(path, exp.Args, exp.MustFind, exp.MustNotFind)
			for _, w := range exp.Windows {
				args := append([]string{"--since", w.Since.Format(time.RFC3339), "--until", w.Until.Format(time.RFC3339)}, exp.Args...)
				check(path+" "+w.Since.Format(time.RFC3339)+".."+w.Until.Format(time.RFC3339), args, w.MustFind, w.MustNotFind)
			}
		})
	}
}

func matchesAny(m rules.Match, found []rules.Finding) bool {
	for _, f := range found {
		if m.Matches(f) {
			return true
		}
	}
	return false
}

func describe(found []rules.Finding) string {
	var b bytes.Buffer
	for _, f := range found {
		b.WriteString("  " + f.Rule + " " + string(f.Severity) + " " + f.Object + " " + f.Subject + ": " + f.Summary + "\n")
	}
	return b.String()
}
