package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"

	"github.com/kubesift/kubesift/analyze"
	"github.com/kubesift/kubesift/ingest"
	"github.com/kubesift/kubesift/rules"
	"github.com/kubesift/kubesift/store"
)

func runRules(ctx context.Context, e *env, args []string) error {
	fs, _ := newFlags(e, "rules", "list | show ID | test [FILE...] | check DIR",
		"list: the rules. show ID: what a rule finds, why it matters, what to do, the evidence it\n"+
			"needs, its parameters with their defaults, its tests and references.\n"+
			"test [FILE...]: run rule test files (input rows or files, and the findings expected; see\n"+
			"rules/tests/ for examples); without FILE, the built-in rules' own tests. Exit 1 when one fails.\n"+
			"check DIR: validate a directory of rules (<id>.yaml + <id>.sql), every problem with file:line:col.")
	dir := fs.String("rules", "", "directory of extra rules, as for analyze")
	if err := parse(fs, args); err != nil {
		return err
	}
	if fs.NArg() == 2 && fs.Arg(0) == "check" {
		rs, err := rules.LoadDir(fs.Arg(1))
		if err != nil {
			return err
		}
		if err := analyze.CheckQueries(ctx, ingest.Schema(), rs); err != nil {
			return err
		}
		fmt.Fprintf(e.stdout, "%s: rules are valid\n", fs.Arg(1))
		return nil
	}
	f := analyzeFlags{dir: *dir}
	rs, _, err := f.selectRules()
	if err != nil {
		return err
	}
	switch {
	case fs.NArg() == 1 && fs.Arg(0) == "list":
		for _, r := range rs {
			fmt.Fprintf(e.stdout, "%-28s %-9s %s\n", r.ID, r.Severity, r.Title)
		}
		return nil
	case fs.NArg() == 2 && fs.Arg(0) == "show":
		i := slices.IndexFunc(rs, func(r rules.Rule) bool { return r.ID == fs.Arg(1) })
		if i < 0 {
			return usagef("unknown rule %q (see kubesift rules list)", fs.Arg(1))
		}
		tests, err := rules.BuiltinTests(rs)
		if err != nil {
			return err
		}
		showRule(e.stdout, rs[i], tests[rs[i].ID])
		return nil
	case fs.NArg() >= 1 && fs.Arg(0) == "test":
		return testRules(ctx, e, rs, fs.Args()[1:])
	}
	return usagef("want 'rules list', 'rules show ID', 'rules test [FILE...]' or 'rules check DIR'")
}

// testRules runs rule test files (the built-in ones when none is given) and prints one line per
// case; it fails when a case fails.
func testRules(ctx context.Context, e *env, rs []rules.Rule, paths []string) error {
	var files []*rules.TestFile
	if len(paths) == 0 {
		builtin, err := rules.BuiltinTests(rs)
		if err != nil {
			return err
		}
		for _, r := range rs {
			if tf := builtin[r.ID]; tf != nil {
				files = append(files, tf)
			}
		}
	}
	var errs []error
	for _, p := range paths {
		b, err := os.ReadFile(p)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		tf, err := rules.ParseTests(p, b, rs)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		files = append(files, tf)
	}
	if err := errors.Join(errs...); err != nil {
		return err
	}
	load := func(ctx context.Context, db *store.DB, paths []string) error {
		inputs, err := ingest.ExpandPaths(paths)
		if err != nil {
			return err
		}
		_, err = ingest.New(db, ingest.Options{}).Ingest(ctx, inputs)
		return err
	}
	passed, failed := 0, 0
	for _, tf := range files {
		for _, res := range analyze.RunTests(ctx, tf, rs, ingest.Schema(), load) {
			if res.Err == nil {
				passed++
				fmt.Fprintf(e.stdout, "ok    %s: %s\n", res.File, res.Case)
				continue
			}
			failed++
			fmt.Fprintf(e.stdout, "FAIL  %s: %s\n      %s\n", res.File, res.Case, strings.ReplaceAll(res.Err.Error(), "\n", "\n      "))
		}
	}
	fmt.Fprintf(e.stdout, "%d passed, %d failed\n", passed, failed)
	if failed > 0 {
		return fmt.Errorf("%d of %d rule tests failed", failed, passed+failed)
	}
	return nil
}

func showRule(w io.Writer, r rules.Rule, tests *rules.TestFile) {
	lookback := "none"
	if r.Lookback != "" {
		lookback = r.Lookback + " before --since (to judge the first events inside the window; only those are reported)"
	}
	fmt.Fprintf(w, "%s: %s\nseverity: %s (may rise with the numbers)\nevidence needed: %s\nlookback: %s\nsource: %s\n\n%s\n\nRemediation:\n%s\n",
		r.ID, r.Title, r.Severity, strings.Join(r.Inputs, ", "), lookback, r.Source,
		strings.TrimSpace(r.Description), strings.TrimSpace(r.Remediation))
	if len(r.Needs) > 0 {
		fmt.Fprintln(w, "\nEvidence it needs besides rows (checked per cluster: without it the rule is blind or partial; kubesift policy logs it):")
		for _, n := range r.Needs {
			fmt.Fprintf(w, "  %s\n      %s\n      audit policy: %s\n", n.Evidence, strings.TrimSpace(n.Description), n.Policy)
		}
	}
	if len(r.Params) > 0 {
		fmt.Fprintln(w, "\nParameters (override with --set "+r.ID+".NAME=VALUE):")
		for _, p := range r.Params {
			fmt.Fprintf(w, "  %s = %v\n      %s\n", p.Name, p.Default, strings.TrimSpace(p.Description))
		}
	}
	if tests != nil && r.Source == "builtin" {
		fmt.Fprintf(w, "\nTests (kubesift rules test runs them; the file is %s):\n", tests.Name)
		for _, c := range tests.Tests {
			kind := "must not find"
			if c.Positive() {
				kind = "must find"
			}
			fmt.Fprintf(w, "  %-13s  %s\n", kind, c.Name)
		}
	}
	if len(r.DuckDBOnly) > 0 {
		fmt.Fprintf(w, "\nDuckDB-only SQL (port it to run the rule elsewhere): %s\n", strings.Join(r.DuckDBOnly, ", "))
	}
	fmt.Fprintln(w, "\nReferences:")
	for _, ref := range r.References {
		fmt.Fprintln(w, "  "+ref)
	}
}
