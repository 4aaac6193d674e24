package cli

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/kubesift/kubesift/analyze"
	"github.com/kubesift/kubesift/internal/testutil"
	"github.com/kubesift/kubesift/rules"
)

// expectations is samples/<scenario>/expect.yaml: the README's "must find / must not report"
// lists as data, for the whole recording and for --since/--until windows of it.
type expectations struct {
	Args        []string      `yaml:"args"`
	MustFind    []rules.Match `yaml:"must_find"`
	MustNotFind []rules.Match `yaml:"must_not_find"`
	// Coverage: each rule's coverage of the whole recording (one cluster: the recordings name
	// none), and a text its reasons must contain.
	Coverage []struct {
		Rule   string `yaml:"rule"`
		Status string `yaml:"status"`
		Reason string `yaml:"reason"`
	} `yaml:"coverage"`
	Windows []struct {
		Since       time.Time     `yaml:"since"`
		Until       time.Time     `yaml:"until"`
		MustFind    []rules.Match `yaml:"must_find"`
		MustNotFind []rules.Match `yaml:"must_not_find"`
	} `yaml:"windows"`
}

// ruleCoverage is a rule's coverage in analyze's JSON.
type ruleCoverage struct {
	ID       string
	Coverage []analyze.Coverage
}

// TestScenarioExpectations loads every samples/<scenario>/ (each must have an expect.yaml),
// analyzes it (whole, then each window) and checks that every must_find matches a finding and no
// must_not_find does, and the coverage of the rules it names. It also exports the database into a
// dataset and checks that analyze --dataset reports exactly what analyze --db reports, for the
// whole recording and for each window (the days read are then only those the window and the rules'
// lookback need); one load and one analyze --db per window serve both checks.
func TestScenarioExpectations(t *testing.T) {
	for _, scenario := range testutil.Scenarios(t, "../samples") {
		dir := filepath.Join("../samples", scenario)
		path := filepath.Join(dir, "expect.yaml")
		t.Run(scenario, func(t *testing.T) {
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
			dataset := filepath.Join(t.TempDir(), "dataset")
			if r := runCLI(t, "ingest", "--quiet", "--db", db, dir); r.code != ExitOK {
				t.Fatalf("ingest %s: %+v", dir, r)
			}
			if r := runCLI(t, "export", "--quiet", "--db", db, "--dataset", dataset); r.code != ExitOK {
				t.Fatalf("export --dataset: %+v", r)
			}
			check := func(what string, args []string, whole bool, mustFind, mustNotFind []rules.Match) {
				r := runCLI(t, append([]string{"analyze", "--db", db, "-o", "json"}, args...)...)
				if r.code != ExitOK {
					t.Fatalf("%s: analyze %v: %+v", what, args, r)
				}
				fromDataset := runCLI(t, append([]string{"analyze", "--dataset", dataset, "-o", "json"}, args...)...)
				if got, want := reportFindings(t, fromDataset), reportFindings(t, r); got != want {
					t.Errorf("%s: analyze --dataset %v differs from analyze --db:\n%s\nwant\n%s", what, args, got, want)
				}
				var rep struct {
					Findings []analyze.Finding
					Rules    []ruleCoverage
				}
				if err := json.Unmarshal([]byte(r.stdout), &rep); err != nil {
					t.Fatal(err)
				}
				if whole {
					for _, want := range exp.Coverage {
						i := slices.IndexFunc(rep.Rules, func(r ruleCoverage) bool { return r.ID == want.Rule })
						if i < 0 || len(rep.Rules[i].Coverage) != 1 {
							t.Errorf("%s: coverage of %s: %+v", what, want.Rule, rep.Rules)
							continue
						}
						if got := rep.Rules[i].Coverage[0]; got.Status != want.Status || !strings.Contains(got.String(), want.Reason) {
							t.Errorf("%s: coverage of %s is %s; want %s (%s)", what, want.Rule, got, want.Status, want.Reason)
						}
					}
				}
				found := make([]rules.Finding, len(rep.Findings))
				for i, f := range rep.Findings {
					var err error
					if found[i], err = analyze.MatchFinding(f); err != nil {
						t.Fatal(err)
					}
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
			check(path, exp.Args, true, exp.MustFind, exp.MustNotFind)
			for _, w := range exp.Windows {
				args := append([]string{"--since", w.Since.Format(time.RFC3339), "--until", w.Until.Format(time.RFC3339)}, exp.Args...)
				check(path+" "+w.Since.Format(time.RFC3339)+".."+w.Until.Format(time.RFC3339), args, false, w.MustFind, w.MustNotFind)
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
