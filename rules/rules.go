package rules

import (
	"bytes"
	"embed"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/kubesift/kubesift/queries"
)

// Severity ranks findings: info < warning < critical.
type Severity string

// The severities, lowest first.
const (
	Info     Severity = "info"
	Warning  Severity = "warning"
	Critical Severity = "critical"
)

// Severities lists the severities, lowest first.
var Severities = []Severity{Info, Warning, Critical}

// Rank orders severities; unknown ones rank below info.
func (s Severity) Rank() int { return slices.Index(Severities, s) }

// ParseSeverity validates a severity name.
func ParseSeverity(s string) (Severity, error) {
	if Severity(s).Rank() < 0 {
		return "", fmt.Errorf("unknown severity %q (want info, warning or critical)", s)
	}
	return Severity(s), nil
}

// Columns are the columns every rule query returns, in this order.
var Columns = []string{"rule", "severity", "namespace", "name", "subject", "first_seen", "last_seen", "count", "summary", "evidence"}

// WindowParams are the parameters every query receives besides its own: the time window of
// the analysis (TIMESTAMPTZ, NULL when unbounded). Every query must use both.
var WindowParams = []string{"since", "until"}

// UnitSuffixes are the endings a parameter name must have, so that its unit is in its name.
var UnitSuffixes = []string{"_s", "_ms", "_minutes", "_count", "_ratio", "_percent", "_per_min", "_per_s", "_bytes"}

// Param is a rule parameter with its default. Values are int64, float64, string or bool.
type Param struct {
	Name        string `yaml:"name"`
	Default     any    `yaml:"default"`
	Description string `yaml:"description"`
}

// Rule is one detection rule.
type Rule struct {
	ID          string   `yaml:"id"`
	Title       string   `yaml:"title"`
	Severity    Severity `yaml:"severity"`
	Description string   `yaml:"description"`
	Remediation string   `yaml:"remediation"`
	References  []string `yaml:"references"`
	Inputs      []string `yaml:"inputs"`
	Params      []Param  `yaml:"params"`
	Charts      []Chart  `yaml:"charts"`

	SQL    string `yaml:"-"` // the query
	Source string `yaml:"-"` // where the rule came from: builtin or a directory
}

//go:embed *.yaml
var builtinFiles embed.FS

// Builtin returns kubesift's own rules, sorted by id.
func Builtin() ([]Rule, error) {
	return load(builtinFiles, ".", "builtin", func(id string) (string, bool) { return queries.SQL(id) })
}

// LoadDir reads the rules of a user directory: <id>.yaml files, each with <id>.sql beside it.
func LoadDir(dir string) ([]Rule, error) {
	if st, err := os.Stat(dir); err != nil {
		return nil, fmt.Errorf("reading rules: %w", err)
	} else if !st.IsDir() {
		return nil, fmt.Errorf("reading rules: %s is not a directory", dir)
	}
	fsys := os.DirFS(dir)
	return load(fsys, ".", dir, func(id string) (string, bool) {
		b, err := fs.ReadFile(fsys, id+".sql")
		return string(b), err == nil
	})
}

// Merge returns base with extra added; a rule of extra replaces the base rule of the same id.
func Merge(base, extra []Rule) []Rule {
	byID := map[string]Rule{}
	for _, r := range base {
		byID[r.ID] = r
	}
	for _, r := range extra {
		byID[r.ID] = r
	}
	out := make([]Rule, 0, len(byID))
	for _, r := range byID {
		out = append(out, r)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out
}

func load(fsys fs.FS, dir, source string, sqlOf func(id string) (string, bool)) ([]Rule, error) {
	paths, err := fs.Glob(fsys, filepath.Join(dir, "*.yaml"))
	if err != nil {
		return nil, err
	}
	var rules []Rule
	var errs []error
	seen := map[string]string{}
	for _, p := range paths {
		b, err := fs.ReadFile(fsys, p)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		name := filepath.Join(source, filepath.Base(p))
		r, ruleErrs := Parse(name, b)
		errs = append(errs, ruleErrs...)
		if len(ruleErrs) > 0 {
			continue
		}
		if prev, dup := seen[r.ID]; dup {
			errs = append(errs, fmt.Errorf("%s: duplicate rule id %q (also in %s)", name, r.ID, prev))
			continue
		}
		seen[r.ID] = name
		sql, ok := sqlOf(r.ID)
		if !ok {
			errs = append(errs, fmt.Errorf("%s: no query %s.sql for rule %q", name, r.ID, r.ID))
			continue
		}
		r.SQL, r.Source = sql, source
		if cErrs := loadChartSQL(&r, sqlOf); len(cErrs) > 0 {
			errs = append(errs, cErrs...)
			continue
		}
		if qErrs := checkSQL(r); len(qErrs) > 0 {
			errs = append(errs, qErrs...)
			continue
		}
		rules = append(rules, r)
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	sort.Slice(rules, func(i, j int) bool { return rules[i].ID < rules[j].ID })
	return rules, nil
}

var idPattern = regexp.MustCompile(`^[a-z0-9]+(-[a-z0-9]+)*$`)

// Parse decodes one rule file strictly (unknown fields are errors) and validates it; it returns
// every problem it finds, each prefixed with name.
func Parse(name string, data []byte) (Rule, []error) {
	var r Rule
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	if err := dec.Decode(&r); err != nil {
		if errors.Is(err, io.EOF) {
			err = errors.New("empty file")
		}
		return r, []error{fmt.Errorf("%s: %w", name, err)}
	}
	var errs []error
	bad := func(format string, args ...any) {
		errs = append(errs, fmt.Errorf("%s: %s", name, fmt.Sprintf(format, args...)))
	}
	base := strings.TrimSuffix(filepath.Base(name), ".yaml")
	switch {
	case r.ID == "":
		bad("missing id")
	case !idPattern.MatchString(r.ID):
		bad("id %q: want lowercase words joined by dashes", r.ID)
	case r.ID != base:
		bad("id %q differs from the file name %s.yaml", r.ID, base)
	}
	for field, v := range map[string]string{"title": r.Title, "description": r.Description, "remediation": r.Remediation} {
		if strings.TrimSpace(v) == "" {
			bad("missing %s", field)
		}
	}
	if _, err := ParseSeverity(string(r.Severity)); err != nil {
		bad("severity: %v", err)
	}
	if len(r.References) == 0 {
		bad("missing references (upstream issues, PRs or docs)")
	}
	for _, ref := range r.References {
		if u, err := url.Parse(ref); err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
			bad("reference %q is not a URL", ref)
		}
	}
	if len(r.Inputs) == 0 {
		bad("missing inputs (the tables the query reads)")
	}
	names := map[string]bool{}
	for i, p := range r.Params {
		switch {
		case p.Name == "":
			bad("params[%d]: missing name", i)
			continue
		case names[p.Name]:
			bad("param %q declared twice", p.Name)
		case slices.Contains(WindowParams, p.Name):
			bad("param %q is reserved for the analysis window", p.Name)
		case !hasUnit(p.Name):
			bad("param %q: put its unit in its name (one of %s)", p.Name, strings.Join(UnitSuffixes, ", "))
		}
		names[p.Name] = true
		if strings.TrimSpace(p.Description) == "" {
			bad("param %q: missing description", p.Name)
		}
		switch v := p.Default.(type) {
		case int:
			r.Params[i].Default = int64(v)
		case float64, string, bool:
		default:
			bad("param %q: default %v (%T) is not a number, string or boolean", p.Name, p.Default, p.Default)
		}
	}
	for _, p := range checkCharts(r.Charts) {
		bad("%s", p)
	}
	return r, errs
}

func hasUnit(name string) bool {
	for _, s := range UnitSuffixes {
		if strings.HasSuffix(name, s) {
			return true
		}
	}
	return false
}

var placeholder = regexp.MustCompile(`\$([A-Za-z_][A-Za-z0-9_]*)`)

// checkSQL makes sure the query uses exactly the declared parameters and the window.
func checkSQL(r Rule) []error {
	used := map[string]bool{}
	for _, m := range placeholder.FindAllStringSubmatch(stripSQLComments(r.SQL), -1) {
		used[m[1]] = true
	}
	var errs []error
	declared := map[string]bool{}
	for _, p := range r.Params {
		declared[p.Name] = true
		if !used[p.Name] {
			errs = append(errs, fmt.Errorf("%s.sql: declared param %q is not used as $%s", r.ID, p.Name, p.Name))
		}
	}
	for _, w := range WindowParams {
		declared[w] = true
		if !used[w] {
			errs = append(errs, fmt.Errorf("%s.sql: must use $%s (the analysis window)", r.ID, w))
		}
	}
	for name := range used {
		if !declared[name] {
			errs = append(errs, fmt.Errorf("%s.sql: $%s is not a declared param", r.ID, name))
		}
	}
	return errs
}

// stripSQLComments removes -- comments, so that a $name in a comment is not a placeholder.
func stripSQLComments(sql string) string {
	var b strings.Builder
	for _, line := range strings.Split(sql, "\n") {
		if i := strings.Index(line, "--"); i >= 0 {
			line = line[:i]
		}
		b.WriteString(line)
		b.WriteByte('\n')
	}
	return b.String()
}

// ParamValue parses a --set value for param p, by the type of its default.
func (p Param) ParamValue(s string) (any, error) {
	switch p.Default.(type) {
	case int64:
		return strconv.ParseInt(s, 10, 64)
	case float64:
		return strconv.ParseFloat(s, 64)
	case bool:
		return strconv.ParseBool(s)
	default:
		return s, nil
	}
}
