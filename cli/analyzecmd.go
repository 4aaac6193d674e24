package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/spf13/pflag"

	"github.com/kubesift/kubesift/analyze"
	"github.com/kubesift/kubesift/rules"
	"github.com/kubesift/kubesift/store"
)

type analyzeFlags struct {
	only   []string
	dir    string
	set    []string
	since  string
	until  string
	failOn string
	ignore string
	// namespaces keeps only findings about objects in these namespaces (none: all)
	namespaces []string
	// html is a second report, the HTML one, written beside -o's (the xlsx and markdown reports link it)
	html   string
	output *outputFlag
}

func addAnalyzeFlags(fs *pflag.FlagSet, f *analyzeFlags) {
	fs.StringArrayVar(&f.only, "rule", nil, "run only this rule (repeatable; see 'kubesift rules list')")
	fs.StringVar(&f.dir, "rules", "", "directory of extra rules (<id>.yaml + <id>.sql); a rule there replaces the built-in of the same id")
	fs.StringArrayVar(&f.set, "set", nil, "override a rule parameter: ID.PARAM=VALUE (repeatable)")
	fs.StringVar(&f.since, "since", "", "analyse from this time: RFC3339 (2026-11-21T04:00:00Z) or a duration before now (2h, 30m)")
	fs.StringVar(&f.until, "until", "", "analyse up to this time: RFC3339 or a duration before now")
	fs.StringVar(&f.failOn, "fail-on", "", "exit with code 3 when a finding has this severity or higher: info, warning or critical")
	fs.StringVar(&f.ignore, "ignore", "", "YAML file of suppressions (rule, object glob, expires, reason): matching findings are listed apart as suppressed, not counted for --fail-on; an expired one is a warning")
	fs.StringArrayVar(&f.namespaces, "namespace", nil, "report only findings about objects in this namespace (repeatable; node-level findings have none)")
	f.output = addOutputFlag(fs, "table", reportFormats...)
	fs.StringVar(&f.html, "html", "", "also write the HTML report (with charts) to this file; the xlsx and markdown reports link to it")
}

// validate checks -o, --out and --html before any work.
func (f *analyzeFlags) validate() error {
	if err := f.output.validate(); err != nil {
		return err
	}
	if f.html == "" {
		return nil
	}
	if f.output.format == "html" {
		return usagef("--html writes a second report beside another -o format; -o html writes the HTML report already")
	}
	if !f.output.force {
		if _, err := os.Lstat(f.html); err == nil {
			return existsError(f.html)
		}
	}
	return nil
}

// htmlLink is where the report written to --out (or stdout) finds the --html file: relative to
// the --out file's directory, else as given.
func (f *analyzeFlags) htmlLink() string {
	if f.output.out == "" {
		return f.html
	}
	dir, err1 := filepath.Abs(filepath.Dir(f.output.out))
	html, err2 := filepath.Abs(f.html)
	if err1 != nil || err2 != nil {
		return f.html
	}
	if rel, err := filepath.Rel(dir, html); err == nil {
		return rel
	}
	return html
}

// parseTime reads --since/--until: RFC3339, or a duration meaning that long before now.
func parseTime(flag, s string, now time.Time) (*time.Time, error) {
	if s == "" {
		return nil, nil
	}
	if t, err := time.Parse(time.RFC3339, s); err == nil {
		t = t.UTC()
		return &t, nil
	}
	if d, err := time.ParseDuration(s); err == nil && d >= 0 {
		t := now.Add(-d).UTC()
		return &t, nil
	}
	return nil, usagef("--%s wants an RFC3339 time (2026-11-21T04:00:00Z) or a duration (2h), got %q", flag, s)
}

// selectRules loads the built-in rules plus --rules, keeps --rule, and parses --set.
func (f *analyzeFlags) selectRules() ([]rules.Rule, map[string]map[string]any, error) {
	rs, err := rules.Builtin()
	if err != nil {
		return nil, nil, fmt.Errorf("built-in rules: %w", err)
	}
	if f.dir != "" {
		extra, err := rules.LoadDir(f.dir)
		if err != nil {
			return nil, nil, err
		}
		rs = rules.Merge(rs, extra)
	}
	if len(f.only) > 0 {
		var kept []rules.Rule
		for _, id := range f.only {
			i := slices.IndexFunc(rs, func(r rules.Rule) bool { return r.ID == id })
			if i < 0 {
				return nil, nil, usagef("unknown rule %q (see kubesift rules list)", id)
			}
			kept = append(kept, rs[i])
		}
		rs = kept
	}
	set := map[string]map[string]any{}
	for _, s := range f.set {
		key, value, ok := strings.Cut(s, "=")
		id, param, ok2 := strings.Cut(key, ".")
		if !ok || !ok2 {
			return nil, nil, usagef("--set wants ID.PARAM=VALUE, got %q", s)
		}
		i := slices.IndexFunc(rs, func(r rules.Rule) bool { return r.ID == id })
		if i < 0 {
			return nil, nil, usagef("--set %s: unknown rule %q", s, id)
		}
		j := slices.IndexFunc(rs[i].Params, func(p rules.Param) bool { return p.Name == param })
		if j < 0 {
			return nil, nil, usagef("--set %s: rule %s has no param %q (see kubesift rules show %s)", s, id, param, id)
		}
		v, err := rs[i].Params[j].ParamValue(value)
		if err != nil {
			return nil, nil, usagef("--set %s: %v", s, err)
		}
		if set[id] == nil {
			set[id] = map[string]any{}
		}
		set[id][param] = v
	}
	return rs, set, nil
}

// window is the analysis window when --since and --until are not given.
type window struct {
	since, until *time.Time // nil: unbounded
	nothingNew   bool       // no evidence to analyse: the rules are not evaluated
}

// nothingNewReason says why a scheduled run evaluated no rule.
const nothingNewReason = "no evidence loaded since the previous run"

// analyzeAndReport runs the rules over db and writes the report. When some rules failed it
// returns an ExitPartial error (the report holds the others' findings), else with --fail-on an
// ExitFindings error when a finding is at or above that severity. def is the window when neither
// --since nor --until is given (nil: unbounded).
func (f *analyzeFlags) analyzeAndReport(ctx context.Context, w io.Writer, db *store.DB, def *window) (*analyze.Report, error) {
	rs, set, err := f.selectRules()
	if err != nil {
		return nil, err
	}
	now := time.Now()
	since, err := parseTime("since", f.since, now)
	if err != nil {
		return nil, err
	}
	until, err := parseTime("until", f.until, now)
	if err != nil {
		return nil, err
	}
	if f.since != "" || f.until != "" {
		def = nil
	}
	if def != nil {
		since, until = def.since, def.until
	}
	var failOn rules.Severity
	if f.failOn != "" {
		if failOn, err = rules.ParseSeverity(f.failOn); err != nil {
			return nil, usageError{err}
		}
	}
	var sups []analyze.Suppression
	if f.ignore != "" {
		b, err := os.ReadFile(f.ignore)
		if err != nil {
			return nil, fmt.Errorf("--ignore: %w", err)
		}
		if sups, err = analyze.ParseSuppressions(f.ignore, b, rs); err != nil {
			return nil, err
		}
	}
	rep := &analyze.Report{}
	if def != nil && def.nothingNew {
		for _, r := range rs {
			rep.Outcomes = append(rep.Outcomes, analyze.Outcome{Rule: r, Reason: nothingNewReason})
		}
	} else if rep, err = analyze.Run(ctx, db, rs, analyze.Options{Since: since, Until: until, Set: set}); err != nil {
		return nil, err
	}
	rep.Version = Version
	if len(f.namespaces) > 0 {
		rep.KeepNamespaces(f.namespaces)
	}
	rep.Suppress(sups, now)
	if f.html != "" {
		if err := writeFile(f.html, "html", f.output.force, func(w io.Writer) error { return writeReport(ctx, w, db, rep, "html") }); err != nil {
			return rep, fmt.Errorf("--html: %w", err)
		}
		rep.HTMLReport = f.htmlLink()
	}
	if err := f.output.emit(w, func(w io.Writer) error { return writeReport(ctx, w, db, rep, f.output.format) }); err != nil {
		return rep, err
	}
	if failed := rep.Failed(); len(failed) > 0 {
		errs := make([]error, len(failed))
		for i, o := range failed {
			errs[i] = o.Err
		}
		return rep, exitError{ExitPartial, fmt.Errorf("%d of %d rules failed (the other rules' findings are reported): %w", len(failed), len(rep.Outcomes), errors.Join(errs...))}
	}
	if failOn != "" {
		n := 0
		for _, fd := range rep.Findings {
			if fd.Severity.Rank() >= failOn.Rank() {
				n++
			}
		}
		if n > 0 {
			return rep, exitError{ExitFindings, fmt.Errorf("%s at or above %s", pluralFindings(n), failOn)}
		}
	}
	return rep, nil
}

func pluralFindings(n int) string {
	if n == 1 {
		return "1 finding"
	}
	return fmt.Sprintf("%d findings", n)
}

func runAnalyze(ctx context.Context, e *env, args []string) error {
	fs, c := newFlags(e, "analyze", "",
		"Run the rules over a database and report the findings, most severe first. A rule whose\n"+
			"input tables are empty is reported as not evaluated. Exit code 3 with --fail-on when a\n"+
			"finding reaches that severity.")
	c.addDB(fs, e, "database file to analyse")
	var f analyzeFlags
	addAnalyzeFlags(fs, &f)
	if err := parse(fs, args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return usagef("unexpected argument %q (analyze reads --db; use run to load files first)", fs.Arg(0))
	}
	if err := f.validate(); err != nil {
		return err
	}
	if err := f.output.checkTerminal(e.stdout); err != nil {
		return err
	}
	db, err := c.openDB(ctx, c.db, true)
	if err != nil {
		return err
	}
	defer db.Close()
	_, err = f.analyzeAndReport(ctx, e.stdout, db, nil)
	return err
}
