package rules

import (
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"math"
	"math/big"
	"net/url"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"text/template"
	"time"

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

// Columns are the columns every rule query returns, in this order. cluster is the cluster the
// finding is about ("" when the evidence does not say): a rule never joins evidence of two
// clusters. facts is a struct (or NULL) of typed values that the rule's summary template words;
// evidence is JSON.
var Columns = []string{"rule", "severity", "cluster", "namespace", "name", "subject", "first_seen", "last_seen", "count", "facts", "evidence"}

// WindowParams are the parameters every query receives besides its own: the time window of
// the analysis (TIMESTAMPTZ, NULL when unbounded). Every query must use both.
var WindowParams = []string{"since", "until"}

// LookbackParam is the start of a rule's lookback: $since minus the rule's lookback (NULL when
// $since is). Exactly the rules that declare a lookback use it.
const LookbackParam = "lookback_since"

// PieceParam and PiecesParam are the parameters of a rule that runs in pieces: the query is run
// once per $piece from 0 to $pieces-1, reads only the part of its input that hashes to $piece
// (ks_in_piece), and the findings of all pieces are the rule's findings. Exactly the rules that
// declare pieces use them.
const (
	PieceParam  = "piece"
	PiecesParam = "pieces"
)

// Pieces says how a rule's query is split: into one piece per Rows rows of Table in the rule's
// window (from the start of its lookback; at least one piece) under the default memory limit, and
// proportionally fewer or more rows under a larger or smaller one, each piece reading only its
// share of every input (by keys no finding spans, e.g. cluster and namespace, or each object for
// findings about one object: ks_in_piece, ks_object_in_piece), so that a piece's memory stays
// that of an input of Rows rows under the default limit. A piece that runs out of memory anyway
// (its share crowded with what the query cannot spill) runs again as smaller pieces, which the
// piece macros nest exactly (see analyze).
type Pieces struct {
	Table string `yaml:"table"`
	Rows  int64  `yaml:"rows"`
	// Also, when set, bounds the pieces by a second table as well (its own Table and Rows; no Also):
	// the rule runs in the more pieces of the two counts (a query whose memory grows with the
	// objects it may report as well as with its rows), each piece still taking its share of Table's
	// rows. Its Table may be a transient stage: it is counted before those are dropped.
	Also *Pieces `yaml:"also"`
}

// Count returns how many pieces a table of rows rows makes (at least 1) under a memory limit of
// memoryShare times the default one: pieces of Rows × memoryShare rows (at least 1).
func (p *Pieces) Count(rows int64, memoryShare float64) int64 {
	if p == nil {
		return 1
	}
	per := max(int64(float64(p.Rows)*memoryShare), 1)
	if rows <= per {
		return 1
	}
	return (rows + per - 1) / per
}

// LookbackDuration returns the rule's lookback (0 without one).
func (r Rule) LookbackDuration() time.Duration {
	d, _ := time.ParseDuration(r.Lookback) // validated by Parse
	return d
}

// UnitSuffixes are the endings a parameter name must have, so that its unit is in its name.
// _usernames holds comma-separated Kubernetes usernames.
var UnitSuffixes = []string{"_s", "_ms", "_minutes", "_count", "_ratio", "_percent", "_per_min", "_per_s", "_bytes", "_usernames"}

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
	// Lookback is how far before --since the query reads, to judge the first events inside the
	// window (a Go duration, e.g. 1h); the query gets the start of that as $lookback_since and
	// reports only what happened inside the window. Empty: no lookback.
	Lookback string `yaml:"lookback"`
	// Pieces, when set, runs the query in pieces of its input so that its memory stays bounded
	// however large the input grows (see Pieces).
	Pieces *Pieces `yaml:"pieces"`
	// Stages are parts of the input the query reads, selected once per analysis into temporary
	// tables before the query runs (see Stage).
	Stages []Stage `yaml:"stages"`
	// Summary is a text/template rendered per finding (see SummaryTemplate): the query returns
	// facts, the rule words them.
	Summary string  `yaml:"summary"`
	Charts  []Chart `yaml:"charts"`
	// Needs is the evidence the rule needs besides rows in its inputs (see Need).
	Needs []Need `yaml:"needs"`
	// DuckDBOnly lists the SQL of the rule's queries (its own, its stages', its charts', its
	// coverage checks' and the macros of queries/macros.sql they call) that is DuckDB's rather
	// than standard SQL or Trino's: function names (arg_max, list_sort) and constructs (->>, ::,
	// QUALIFY, CREATE MACRO), so that whoever runs the rule on another engine knows what to port.
	// For built-in rules a test keeps it exact; a user rule may omit it.
	DuckDBOnly []string `yaml:"duckdb_only"`

	SQL    string `yaml:"-"` // the query
	Source string `yaml:"-"` // where the rule came from: builtin or a directory
}

//go:embed *.yaml
var builtinFiles embed.FS

// Builtin returns kubesift's own rules, sorted by id.
func Builtin() ([]Rule, error) {
	return load(builtinFiles, ".", "builtin", func(id string) (string, bool) { return queries.SQL(id) })
}

// TestFileSuffix names rule test files that may sit beside the rules: <id>.test.yaml.
const TestFileSuffix = ".test.yaml"

// LoadDir reads the rules of a user directory: <id>.yaml files, each with <id>.sql beside it
// (<id>.test.yaml files are tests, see TestFile).
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
		if strings.HasSuffix(p, TestFileSuffix) {
			continue // a rule test file kept beside its rule
		}
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
		if sErrs := loadStageSQL(&r, sqlOf); len(sErrs) > 0 {
			errs = append(errs, sErrs...)
			continue
		}
		if cErrs := loadChartSQL(&r, sqlOf); len(cErrs) > 0 {
			errs = append(errs, cErrs...)
			continue
		}
		if nErrs := loadNeedSQL(&r, sqlOf); len(nErrs) > 0 {
			errs = append(errs, nErrs...)
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
// every problem it finds, each prefixed with name:line:col of the offending YAML node.
func Parse(name string, data []byte) (Rule, []error) {
	var r Rule
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil {
		return r, []error{fmt.Errorf("%s: %w", name, err)}
	}
	if len(doc.Content) == 0 {
		return r, []error{fmt.Errorf("%s: empty file", name)}
	}
	root := doc.Content[0]
	var errs []error
	at := func(n *yaml.Node, format string, args ...any) {
		errs = append(errs, fmt.Errorf("%s:%d:%d: %s", name, n.Line, n.Column, fmt.Sprintf(format, args...)))
	}
	if root.Kind != yaml.MappingNode {
		at(root, "a rule is a mapping of fields (id, title, ...)")
		return r, errs
	}
	unknownFields(root, reflect.TypeOf(r), at)
	if err := root.Decode(&r); err != nil {
		var te *yaml.TypeError
		if !errors.As(err, &te) {
			return r, []error{fmt.Errorf("%s: %w", name, err)}
		}
		for _, e := range te.Errors {
			errs = append(errs, fmt.Errorf("%s:%s", name, strings.TrimPrefix(e, "line ")))
		}
		return r, errs
	}
	field := func(key string) *yaml.Node { // the value of a top-level field, or the mapping
		if v := valueOf(root, key); v != nil {
			return v
		}
		return root
	}
	base := strings.TrimSuffix(filepath.Base(name), ".yaml")
	switch {
	case r.ID == "":
		at(root, "missing id")
	case !idPattern.MatchString(r.ID):
		at(field("id"), "id %q: want lowercase words joined by dashes", r.ID)
	case r.ID != base:
		at(field("id"), "id %q differs from the file name %s.yaml", r.ID, base)
	}
	for _, f := range []struct{ key, value string }{{"title", r.Title}, {"description", r.Description}, {"remediation", r.Remediation}, {"summary", r.Summary}} {
		if strings.TrimSpace(f.value) == "" {
			at(field(f.key), "missing %s", f.key)
		}
	}
	if _, err := ParseSeverity(string(r.Severity)); err != nil {
		at(field("severity"), "severity: %v", err)
	}
	if r.Summary != "" {
		if _, err := SummaryTemplate(r.Summary); err != nil {
			at(field("summary"), "summary: %v", err)
		}
	}
	if r.Lookback != "" {
		if d, err := time.ParseDuration(r.Lookback); err != nil || d <= 0 {
			at(field("lookback"), "lookback %q: want a positive duration such as 30m or 2h", r.Lookback)
		}
	}
	if r.Pieces != nil {
		if !slices.Contains(r.Inputs, r.Pieces.Table) && !slices.Contains(r.StageTables(), r.Pieces.Table) {
			at(field("pieces"), "pieces: table %q is not one of the rule's inputs %v or stages", r.Pieces.Table, r.Inputs)
		}
		if i := slices.IndexFunc(r.Stages, func(s Stage) bool { return s.Table == r.Pieces.Table }); i >= 0 && r.Stages[i].Transient {
			at(field("pieces"), "pieces: table %q is a transient stage, dropped before the pieces run", r.Pieces.Table)
		}
		if r.Pieces.Rows <= 0 {
			at(field("pieces"), "pieces: rows %d: want a positive number of rows per piece", r.Pieces.Rows)
		}
		if b := r.Pieces.Also; b != nil {
			also := field("pieces")
			if v := valueOf(also, "also"); v != nil {
				also = v
			}
			if !slices.Contains(r.Inputs, b.Table) && !slices.Contains(r.StageTables(), b.Table) {
				at(also, "pieces.also: table %q is not one of the rule's inputs %v or stages", b.Table, r.Inputs)
			}
			if b.Rows <= 0 {
				at(also, "pieces.also: rows %d: want a positive number of rows per piece", b.Rows)
			}
			if b.Also != nil {
				at(also, "pieces.also: a second table has no also of its own")
			}
		}
	}
	if len(r.References) == 0 {
		at(field("references"), "missing references (upstream issues, PRs or docs)")
	}
	for i, ref := range r.References {
		if u, err := url.Parse(ref); err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
			at(item(field("references"), i), "reference %q is not a URL", ref)
		}
	}
	if len(r.Inputs) == 0 {
		at(field("inputs"), "missing inputs (the tables the query reads)")
	}
	names := map[string]bool{}
	for i, p := range r.Params {
		n := item(field("params"), i)
		nameNode := n
		if v := valueOf(n, "name"); v != nil {
			nameNode = v
		}
		switch {
		case p.Name == "":
			at(n, "params[%d]: missing name", i)
			continue
		case names[p.Name]:
			at(nameNode, "param %q declared twice", p.Name)
		case slices.Contains(WindowParams, p.Name) || p.Name == LookbackParam:
			at(nameNode, "param %q is reserved for the analysis window", p.Name)
		case p.Name == PieceParam || p.Name == PiecesParam:
			at(nameNode, "param %q is reserved for rules that run in pieces", p.Name)
		case !hasUnit(p.Name):
			at(nameNode, "param %q: put its unit in its name (one of %s)", p.Name, strings.Join(UnitSuffixes, ", "))
		}
		names[p.Name] = true
		if strings.TrimSpace(p.Description) == "" {
			at(n, "param %q: missing description", p.Name)
		}
		switch v := p.Default.(type) {
		case int:
			r.Params[i].Default = int64(v)
		case float64, string, bool:
		default:
			d := n
			if v := valueOf(n, "default"); v != nil {
				d = v
			}
			at(d, "param %q: default %v (%T) is not a number, string or boolean", p.Name, p.Default, p.Default)
		}
	}
	checkStages(r.Stages, func(i int, format string, args ...any) { at(item(field("stages"), i), format, args...) })
	if len(r.Stages) > 0 && r.Pieces == nil {
		at(field("stages"), "stages: only a rule that runs in pieces stages its input (the query of any other rule reads it once)")
	}
	if problems := checkCharts(r.Charts); len(problems) > 0 {
		charts := valueOf(root, "charts")
		for _, p := range problems {
			at(charts, "%s", p)
		}
	}
	for i, name := range r.DuckDBOnly {
		switch {
		case strings.TrimSpace(name) == "":
			at(item(field("duckdb_only"), i), "duckdb_only[%d]: empty", i)
		case slices.Index(r.DuckDBOnly, name) < i:
			at(item(field("duckdb_only"), i), "duckdb_only: %q listed twice", name)
		}
	}
	if problems := checkNeeds(r.Needs); len(problems) > 0 {
		needs := valueOf(root, "needs")
		for _, p := range problems {
			at(needs, "%s", p)
		}
	}
	return r, errs
}

// unknownFields reports the keys of mapping m that no yaml tag of struct type t names, and
// descends into the fields that are structs or lists of structs (params, needs and their policy).
func unknownFields(m *yaml.Node, t reflect.Type, at func(*yaml.Node, string, ...any)) {
	known := map[string]reflect.Type{}
	for i := range t.NumField() {
		if tag, _, _ := strings.Cut(t.Field(i).Tag.Get("yaml"), ","); tag != "" && tag != "-" {
			known[tag] = t.Field(i).Type
		}
	}
	for i := 0; i+1 < len(m.Content); i += 2 {
		k, v := m.Content[i], m.Content[i+1]
		ft, ok := known[k.Value]
		if !ok {
			at(k, "unknown field %q (known: %s)", k.Value, strings.Join(slices.Sorted(maps.Keys(known)), ", "))
			continue
		}
		if ft.Kind() == reflect.Pointer {
			ft = ft.Elem()
		}
		if ft.Kind() == reflect.Struct && v.Kind == yaml.MappingNode {
			unknownFields(v, ft, at)
		}
		if ft.Kind() == reflect.Slice && ft.Elem().Kind() == reflect.Struct && v.Kind == yaml.SequenceNode {
			for _, e := range v.Content {
				if e.Kind == yaml.MappingNode {
					unknownFields(e, ft.Elem(), at)
				}
			}
		}
	}
}

// valueOf returns the value of key in mapping m, or nil.
func valueOf(m *yaml.Node, key string) *yaml.Node {
	if m == nil || m.Kind != yaml.MappingNode {
		return nil
	}
	for i := 0; i+1 < len(m.Content); i += 2 {
		if m.Content[i].Value == key {
			return m.Content[i+1]
		}
	}
	return nil
}

// item returns the i-th element of sequence s, or s itself.
func item(s *yaml.Node, i int) *yaml.Node {
	if s.Kind == yaml.SequenceNode && i < len(s.Content) {
		return s.Content[i]
	}
	return s
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

// checkSQL makes sure the query and its stages together use exactly the declared parameters and
// the window.
func checkSQL(r Rule) []error {
	used := map[string]bool{}
	for _, m := range placeholder.FindAllStringSubmatch(stripSQLComments(r.stagedSQL()), -1) {
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
	if r.Lookback != "" {
		declared[LookbackParam] = true
		if !used[LookbackParam] {
			errs = append(errs, fmt.Errorf("%s.sql: the rule declares lookback %s but the query does not use $%s", r.ID, r.Lookback, LookbackParam))
		}
	}
	if r.Pieces != nil {
		for _, p := range []string{PieceParam, PiecesParam} {
			declared[p] = true
			if !used[p] {
				errs = append(errs, fmt.Errorf("%s.sql: the rule runs in pieces but the query does not use $%s", r.ID, p))
			}
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

// ParamValue parses a --set value for param p, by the type of its default. A number is a quantity
// in the unit its name ends in (UnitSuffixes): a negative one, or one that is not finite, is an
// error rather than a threshold no finding can meet or every finding does.
func (p Param) ParamValue(s string) (any, error) {
	switch p.Default.(type) {
	case int64:
		n, err := strconv.ParseInt(s, 10, 64)
		if err == nil && n < 0 {
			return nil, fmt.Errorf("%s is a quantity: %d is negative", p.Name, n)
		}
		return n, err
	case float64:
		x, err := strconv.ParseFloat(s, 64)
		if err == nil && (x < 0 || math.IsNaN(x) || math.IsInf(x, 0)) {
			return nil, fmt.Errorf("%s is a quantity: %s is negative or not a finite number", p.Name, s)
		}
		return x, err
	case bool:
		return strconv.ParseBool(s)
	default:
		return s, nil
	}
}

// SummaryTemplate parses a rule's summary: a text/template over .Facts (the query's facts
// column: a struct, as a map of typed values), .Params (the parameter values the query ran
// with) and the finding's contract fields (.Namespace, .Name, .Subject, .FirstSeen,
// .LastSeen, .Count). Besides the built-ins it has
//
//	clock T       15:04:05Z of a time        clockms T  15:04:05.000Z
//	rfc3339 T     2006-01-02T15:04:05Z       join L SEP the list L joined
//	plural N ONE MANY  ONE when N is 1       decimal X  a number as SQL prints it (5.0, 0.25)
//	round X D     X rounded to D decimals    int X      X rounded to an integer
//	first N L     the first N items of L     sub/mul/div A B  arithmetic on numbers
//	lower S       S in lower case            null X     X is NULL (0 and false are not)
//
// A fact the template names but the query did not return is an error, not "<no value>".
func SummaryTemplate(text string) (*template.Template, error) {
	return template.New("summary").Option("missingkey=error").Funcs(summaryFuncs).Parse(strings.TrimSpace(text))
}

var summaryFuncs = template.FuncMap{
	"clock":   func(t time.Time) string { return t.UTC().Format("15:04:05Z") },
	"clockms": func(t time.Time) string { return t.UTC().Format("15:04:05.000Z") },
	"rfc3339": func(t time.Time) string { return t.UTC().Format(time.RFC3339) },
	"lower":   strings.ToLower,
	"null":    func(x any) bool { return x == nil },
	"join": func(l []any, sep string) string {
		s := make([]string, len(l))
		for i, v := range l {
			s[i] = fmt.Sprint(v)
		}
		return strings.Join(s, sep)
	},
	"plural": func(n any, one, many string) string {
		if number(n) == 1 {
			return one
		}
		return many
	},
	"decimal": func(x any) string {
		s := strconv.FormatFloat(number(x), 'f', -1, 64)
		if !strings.ContainsAny(s, ".eE") {
			s += ".0"
		}
		return s
	},
	"round": func(x any, digits int) float64 {
		p := math.Pow(10, float64(digits))
		return math.Round(number(x)*p) / p
	},
	"int": func(x any) int64 { return int64(math.Round(number(x))) },
	"first": func(n int, l []any) []any {
		return l[:min(n, len(l))]
	},
	"sub": func(a, b any) float64 { return number(a) - number(b) },
	"mul": func(a, b any) float64 { return number(a) * number(b) },
	"div": func(a, b any) float64 { return number(a) / number(b) },
}

// number converts the numeric types the database returns to float64.
func number(x any) float64 {
	if v, ok := x.(*big.Int); ok {
		f, _ := new(big.Float).SetInt(v).Float64()
		return f
	}
	switch v := reflect.ValueOf(x); {
	case v.CanInt():
		return float64(v.Int())
	case v.CanUint():
		return float64(v.Uint())
	case v.CanFloat():
		return v.Float()
	}
	panic(fmt.Sprintf("%v (%T) is not a number", x, x))
}
