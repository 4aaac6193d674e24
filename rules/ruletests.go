package rules

import (
	"bytes"
	"embed"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"path"
	"regexp"
	"slices"
	"sort"
	"strings"
	"time"

	"gopkg.in/yaml.v3"
)

// TestFile is a rule test file, in the spirit of `promtool test rules`: cases of input rows
// (or input files) and the findings the rule must report on them.
//
//	rule: watch-rewind
//	defaults:                  # merged into every row of a table (a row's own values win); a
//	                           # column ingest derives (response_rv) is derived when left out,
//	                           # and a computed one (watch_rv, latency_ms) cannot be given
//	  audit_events: {stage: ResponseComplete, code: 200}
//	tests:
//	  - name: goes backwards
//	    params: {min_rewinds_count: 1}   # --set for this case
//	    since: 2026-11-21T06:00:00Z      # optional window
//	    pieces: 3                        # optional: run a rule that runs in pieces in this many
//	    tables:
//	      audit_events:
//	        - {audit_id: w1, verb: watch, resource_version: "200", ...}
//	    files: [../../samples/flapping/]  # optional, relative to the test file (or absolute)
//	    expect:                           # exactly these findings; [] for none
//	      - {object: lab/services, severity: warning, count: 2, summary: "*went backwards*"}
type TestFile struct {
	Rule     string                    `yaml:"rule"`
	Defaults map[string]map[string]any `yaml:"defaults"`
	Tests    []TestCase                `yaml:"tests"`

	Name string `yaml:"-"` // the file, as given
}

// TestCase is one case of a TestFile.
type TestCase struct {
	Name   string         `yaml:"name"`
	Params map[string]any `yaml:"params"`
	Since  *time.Time     `yaml:"since"`
	Until  *time.Time     `yaml:"until"`
	// Pieces, when set, runs the rule (one that runs in pieces) in this many pieces, so that a case
	// can check that the findings do not depend on how its input is split.
	Pieces int64                       `yaml:"pieces"`
	Tables map[string][]map[string]any `yaml:"tables"`
	Files  []string                    `yaml:"files"`
	Expect *[]Match                    `yaml:"expect"`
}

// Positive says whether the case expects findings (a negative case expects none).
func (c TestCase) Positive() bool { return len(*c.Expect) > 0 }

// Match selects findings: every field that is set must hold. Object, Subject, Summary and the
// Evidence items are globs where * matches any text (including /) and ? one character.
type Match struct {
	Rule     string   `yaml:"rule"`
	Cluster  *string  `yaml:"cluster"` // the finding's cluster exactly ("" for evidence without one)
	Object   string   `yaml:"object"`  // namespace/name, or the name of a cluster-scoped object (a node)
	Severity Severity `yaml:"severity"`
	Subject  string   `yaml:"subject"`
	Count    *int64   `yaml:"count"`
	MinCount *int64   `yaml:"min_count"`
	Summary  string   `yaml:"summary"`
	// Evidence: each entry must match one evidence item: every key's value (text as is, other
	// values as JSON) matches the entry's glob.
	Evidence []map[string]string `yaml:"evidence"`
	// EvidenceCount: how many evidence items the finding lists, exactly (Evidence alone allows
	// more items than its entries, and an item listed twice).
	EvidenceCount *int `yaml:"evidence_count"`
}

// Finding is what a Match looks at, so that this package needs no analyze types.
type Finding struct {
	Rule, Cluster, Object, Subject, Summary string
	Severity                                Severity
	Count                                   int64
	Evidence                                []json.RawMessage
}

// Matches reports whether f satisfies every set field of m.
func (m Match) Matches(f Finding) bool {
	if (m.Rule != "" && m.Rule != f.Rule) || (m.Cluster != nil && *m.Cluster != f.Cluster) || (m.Severity != "" && m.Severity != f.Severity) ||
		(m.Count != nil && *m.Count != f.Count) || (m.MinCount != nil && f.Count < *m.MinCount) ||
		(m.EvidenceCount != nil && *m.EvidenceCount != len(f.Evidence)) {
		return false
	}
	for _, g := range []struct{ glob, s string }{{m.Object, f.Object}, {m.Subject, f.Subject}, {m.Summary, f.Summary}} {
		if g.glob != "" && !Glob(g.glob, g.s) {
			return false
		}
	}
	for _, want := range m.Evidence {
		if !slices.ContainsFunc(f.Evidence, func(item json.RawMessage) bool { return evidenceMatches(want, item) }) {
			return false
		}
	}
	return true
}

func evidenceMatches(want map[string]string, item json.RawMessage) bool {
	var fields map[string]json.RawMessage
	if json.Unmarshal(item, &fields) != nil {
		return false
	}
	for k, glob := range want {
		raw, ok := fields[k]
		if !ok {
			return false
		}
		var text string
		if json.Unmarshal(raw, &text) != nil {
			text = string(raw)
		}
		if !Glob(glob, text) {
			return false
		}
	}
	return true
}

// String describes m for messages.
func (m Match) String() string {
	var parts []string
	add := func(k, v string) {
		if v != "" {
			parts = append(parts, k+"="+v)
		}
	}
	add("rule", m.Rule)
	if m.Cluster != nil {
		add("cluster", fmt.Sprintf("%q", *m.Cluster))
	}
	add("object", m.Object)
	add("severity", string(m.Severity))
	add("subject", m.Subject)
	if m.Count != nil {
		add("count", fmt.Sprint(*m.Count))
	}
	if m.MinCount != nil {
		add("min_count", fmt.Sprint(*m.MinCount))
	}
	add("summary", m.Summary)
	if len(m.Evidence) > 0 {
		b, _ := json.Marshal(m.Evidence)
		add("evidence", string(b))
	}
	if m.EvidenceCount != nil {
		add("evidence_count", fmt.Sprint(*m.EvidenceCount))
	}
	if len(parts) == 0 {
		return "any finding"
	}
	return strings.Join(parts, " ")
}

// Glob matches s against pattern, where * matches any text and ? one character.
func Glob(pattern, s string) bool { return GlobMatcher(pattern)(s) }

// GlobMatcher returns Glob with pattern, compiled once: for matching many strings.
func GlobMatcher(pattern string) func(s string) bool {
	var re strings.Builder
	re.WriteString("^")
	for _, r := range pattern {
		switch r {
		case '*':
			re.WriteString("(?s:.*)")
		case '?':
			re.WriteString("(?s:.)")
		default:
			re.WriteString(regexp.QuoteMeta(string(r)))
		}
	}
	re.WriteString("$")
	return regexp.MustCompile(re.String()).MatchString
}

// ParseTests decodes a rule test file strictly and checks it against the rules it may test;
// every problem is reported, prefixed with name (and the line for YAML errors).
func ParseTests(name string, data []byte, rs []Rule) (*TestFile, error) {
	tf := &TestFile{Name: name}
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	if err := dec.Decode(tf); err != nil {
		if errors.Is(err, io.EOF) {
			err = errors.New("empty file")
		}
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	var errs []error
	bad := func(format string, args ...any) {
		errs = append(errs, fmt.Errorf("%s: %s", name, fmt.Sprintf(format, args...)))
	}
	var rule *Rule
	for i := range rs {
		if rs[i].ID == tf.Rule {
			rule = &rs[i]
		}
	}
	if rule == nil {
		bad("rule %q is not a known rule", tf.Rule)
	}
	if len(tf.Tests) == 0 {
		bad("no tests")
	}
	seen := map[string]bool{}
	for i, c := range tf.Tests {
		where := fmt.Sprintf("tests[%d] %q", i, c.Name)
		switch {
		case c.Name == "":
			bad("tests[%d]: missing name", i)
		case seen[c.Name]:
			bad("%s: name used twice", where)
		}
		seen[c.Name] = true
		if c.Expect == nil {
			bad("%s: missing expect (the findings the rule must report; [] for none)", where)
		}
		if len(c.Tables) == 0 && len(c.Files) == 0 {
			bad("%s: no input (tables or files)", where)
		}
		if c.Pieces < 0 {
			bad("%s: pieces %d: want a positive number of pieces", where, c.Pieces)
		}
		if rule == nil {
			continue
		}
		if c.Pieces != 0 && rule.Pieces == nil {
			bad("%s: pieces: rule %s does not run in pieces", where, rule.ID)
		}
		for p, v := range c.Params {
			j := -1
			for k := range rule.Params {
				if rule.Params[k].Name == p {
					j = k
				}
			}
			if j < 0 {
				bad("%s: rule %s has no param %q", where, rule.ID, p)
				continue
			}
			conv, err := rule.Params[j].ParamValue(fmt.Sprint(v))
			if err != nil {
				bad("%s: param %s: %v", where, p, err)
			}
			c.Params[p] = conv
		}
		if c.Expect != nil {
			for k := range *c.Expect {
				m := &(*c.Expect)[k]
				if m.Rule == "" {
					m.Rule = rule.ID
				}
				if m.Severity != "" {
					if _, err := ParseSeverity(string(m.Severity)); err != nil {
						bad("%s: expect[%d]: %v", where, k, err)
					}
				}
			}
		}
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return tf, nil
}

//go:embed tests/*.yaml
var builtinTests embed.FS

// BuiltinTests returns the test files of the built-in rules (rules/tests/<id>.yaml), by rule id.
func BuiltinTests(rs []Rule) (map[string]*TestFile, error) {
	paths, err := fs.Glob(builtinTests, "tests/*.yaml")
	if err != nil {
		return nil, err
	}
	sort.Strings(paths)
	out := map[string]*TestFile{}
	var errs []error
	for _, p := range paths {
		b, err := fs.ReadFile(builtinTests, p)
		if err != nil {
			return nil, err
		}
		tf, err := ParseTests(path.Join("rules", p), b, rs)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		out[tf.Rule] = tf
	}
	return out, errors.Join(errs...)
}
