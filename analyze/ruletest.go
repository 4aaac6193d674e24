package analyze

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"path/filepath"
	"slices"
	"strings"

	"github.com/kubesift/kubesift/rules"
	"github.com/kubesift/kubesift/store"
)

// Loader loads input files into db, as `kubesift ingest` does; rule tests with files need one.
type Loader func(ctx context.Context, db *store.DB, paths []string) error

// TestResult is the outcome of one rule test case.
type TestResult struct {
	File, Case string
	Positive   bool  // the case expects findings
	Err        error // nil when the case passed
}

// RunTests runs every case of tf against its rule from rs, each on a fresh in-memory database
// with the tables of schema. load may be nil when no case has files.
func RunTests(ctx context.Context, tf *rules.TestFile, rs []rules.Rule, schema store.Schema, load Loader) []TestResult {
	i := slices.IndexFunc(rs, func(r rules.Rule) bool { return r.ID == tf.Rule })
	var out []TestResult
	for _, c := range tf.Tests {
		res := TestResult{File: tf.Name, Case: c.Name, Positive: c.Positive()}
		if i < 0 {
			res.Err = fmt.Errorf("rule %q is not loaded", tf.Rule)
		} else {
			res.Err = runCase(ctx, tf, c, rs[i], schema, load)
		}
		out = append(out, res)
	}
	return out
}

// testCaseStore opens the database of a test case (a handful of rows) and of CheckQueries (none)
// with one DuckDB thread: their queries cost what DuckDB sets up for each operator and thread
// (perf: zeroing the aggregates' hash tables is the largest part), not their rows. The 108 cases
// of rules/tests/ took 36.6 CPU-s instead of 47.4 that way, 34.8 s instead of 39.2 s (medians of
// 3 on 2 CPUs; BENCHMARKS.md).
var testCaseStore = store.Options{Threads: 1}

func runCase(ctx context.Context, tf *rules.TestFile, c rules.TestCase, r rules.Rule, schema store.Schema, load Loader) error {
	db, err := store.Open(ctx, store.InMemory, schema, testCaseStore)
	if err != nil {
		return err
	}
	defer db.Close()
	for _, table := range slices.Sorted(maps.Keys(c.Tables)) {
		for n, row := range c.Tables[table] {
			full := maps.Clone(tf.Defaults[table])
			if full == nil {
				full = map[string]any{}
			}
			maps.Copy(full, row)
			if err := insertRow(ctx, db, table, full); err != nil {
				return fmt.Errorf("tables.%s[%d]: %w", table, n, err)
			}
		}
	}
	if err := schema.DeriveAll(ctx, db); err != nil {
		return err
	}
	if len(c.Files) > 0 {
		if load == nil {
			return fmt.Errorf("files given but no loader")
		}
		paths := make([]string, len(c.Files))
		for i, f := range c.Files {
			if paths[i] = f; !filepath.IsAbs(f) {
				paths[i] = filepath.Join(filepath.Dir(tf.Name), f)
			}
		}
		if err := load(ctx, db, paths); err != nil {
			return fmt.Errorf("loading %s: %w", strings.Join(paths, ", "), err)
		}
	}
	rep, err := Run(ctx, db, []rules.Rule{r}, Options{Since: c.Since, Until: c.Until, Pieces: c.Pieces, Set: map[string]map[string]any{r.ID: c.Params}})
	if err != nil {
		return err
	}
	defer rep.Close()
	if failed := rep.Failed(); len(failed) > 0 {
		return failed[0].Err
	}
	return compareFindings(*c.Expect, rep.findings)
}

// compareFindings pairs every expected match with a distinct finding and reports the matches
// without a finding and the findings without a match.
func compareFindings(expect []rules.Match, findings []Finding) error {
	matched := make([]rules.Finding, len(findings))
	for i, f := range findings {
		var err error
		if matched[i], err = MatchFinding(f); err != nil {
			return err
		}
	}
	used := make([]bool, len(findings))
	var problems []string
	for _, m := range expect {
		found := false
		for i := range findings {
			if !used[i] && m.Matches(matched[i]) {
				used[i], found = true, true
				break
			}
		}
		if !found {
			problems = append(problems, "missing: "+m.String())
		}
	}
	for i, f := range findings {
		if !used[i] {
			evidence, err := f.Evidence()
			if err != nil {
				return err
			}
			problems = append(problems, fmt.Sprintf("unexpected: %s %s %s count=%d subject=%q summary=%q evidence=%s", f.Rule, f.Severity, object(f), f.Count, f.Subject, f.Summary, evidence))
		}
	}
	if len(problems) > 0 {
		return fmt.Errorf("%s", strings.Join(problems, "\n"))
	}
	return nil
}

// MatchFinding is f as rules.Match sees it.
func MatchFinding(f Finding) (rules.Finding, error) {
	evidence, err := f.Evidence()
	if err != nil {
		return rules.Finding{}, err
	}
	var items []json.RawMessage
	if json.Unmarshal(evidence, &items) != nil {
		items = []json.RawMessage{evidence}
	}
	return rules.Finding{Rule: f.Rule, Cluster: f.Cluster, Object: object(f), Subject: f.Subject, Summary: f.Summary, Severity: f.Severity, Count: f.Count, Evidence: items}, nil
}

// insertRow adds one row to table: each value is cast to its column's type; lists and maps go
// through JSON (so a YAML list fills a VARCHAR[] and a YAML map a JSON or MAP column). A column
// that ingest derives from others (one with a Backfill, such as response_rv from
// response_object) is derived from them the same way when the row leaves it out; a computed
// column (latency_ms) cannot be given.
func insertRow(ctx context.Context, db *store.DB, table string, row map[string]any) error {
	t, ok := db.Schema.Lookup(table)
	if !ok {
		return fmt.Errorf("%q is not a kubesift table (see kubesift schema)", table)
	}
	given := map[string]string{} // column → its value's SQL
	values := map[string]any{}
	for _, name := range slices.Sorted(maps.Keys(row)) {
		i := slices.IndexFunc(t.Columns, func(c store.Column) bool { return c.Name == name })
		if i < 0 {
			return fmt.Errorf("table %s has no column %q", table, name)
		}
		if c := t.Columns[i]; c.Generated != "" {
			return fmt.Errorf("column %s of table %s is computed, not given (%s): give the columns it is computed from", name, table, c.Doc)
		}
		typ := t.Columns[i].Type
		v := row[name]
		switch v.(type) {
		case []any, map[string]any:
			b, err := json.Marshal(v)
			if err != nil {
				return fmt.Errorf("column %s: %w", name, err)
			}
			v = string(b)
			if typ == "JSON" {
				given[name] = "CAST(? AS JSON)"
			} else {
				given[name] = "CAST(CAST(? AS JSON) AS " + typ + ")"
			}
		default:
			given[name] = "CAST(? AS " + typ + ")"
		}
		values[name] = v
	}
	var cols, derived []string
	var args []any
	for _, c := range t.Columns {
		if c.Generated != "" {
			continue
		}
		value, ok := given[c.Name]
		switch {
		case ok:
			args = append(args, values[c.Name])
		case c.Backfill != "":
			derived = append(derived, fmt.Sprintf(`%s AS "%s"`, c.Backfill, c.Name))
			value = "NULL"
		default:
			value = "NULL"
		}
		cols = append(cols, fmt.Sprintf(`CAST(%s AS %s) AS "%s"`, value, c.Type, c.Name))
	}
	replace := ""
	if len(derived) > 0 {
		replace = " REPLACE (" + strings.Join(derived, ", ") + ")"
	}
	_, err := db.ExecContext(ctx, fmt.Sprintf("INSERT INTO %s BY NAME SELECT *%s FROM (SELECT %s)", table, replace, strings.Join(cols, ", ")), args...)
	return err
}

// CheckQueries runs every rule's query and the coverage queries of its needs on an empty
// database with the tables of schema: a syntax error, an unknown table or column, a broken column
// contract or summary template shows up here, before any data is loaded.
func CheckQueries(ctx context.Context, schema store.Schema, rs []rules.Rule) error {
	db, err := store.Open(ctx, store.InMemory, schema, testCaseStore)
	if err != nil {
		return err
	}
	defer db.Close()
	conn, err := openSandbox(ctx, db)
	if err != nil {
		return err
	}
	defer conn.Close()
	spill := &evidenceSpill{}
	defer spill.Close()
	var errs []error
	for _, r := range rs {
		if _, err := runRule(ctx, schema, conn, spill, r, Options{}, new(RuleProfile)); err != nil {
			errs = append(errs, fmt.Errorf("%s.sql: %w", r.ID, err))
		}
		if _, err := gaps(ctx, conn, r, Options{}); err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", r.ID, err))
		}
	}
	return errors.Join(errs...)
}
