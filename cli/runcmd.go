package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"runtime/debug"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/pflag"

	"github.com/kubesift/kubesift/analyze"
	"github.com/kubesift/kubesift/ingest"
	"github.com/kubesift/kubesift/rules"
	"github.com/kubesift/kubesift/store"
)

type runFlags struct {
	retain      string
	summary     string
	metricsFile string
}

func runRun(ctx context.Context, e *env, args []string) error {
	started := time.Now()
	fs, c := newFlags(e, "run", "PATH...",
		"Ingest PATH... into a temporary in-memory database (or --db) and analyze it: the findings go\n"+
			"to stdout, what was loaded to stderr. Takes the flags of ingest and analyze.\n\n"+
			"With a persistent --db (a CronJob), each run loads only what is new in growing or rotated\n"+
			"audit logs and, without --since and --until, analyzes what arrived since the previous\n"+
			"successful run: the time span of the rows those loads added (each rule reading its lookback\n"+
			"before it), however late they arrived; with nothing new it reports the rules not evaluated.")
	fs.StringVar(&c.db, "db", "", "database file to load into and keep (default: temporary, in memory)")
	var f ingestFlags
	addIngestFlags(fs, &f)
	var a analyzeFlags
	addAnalyzeFlags(fs, &a)
	var r runFlags
	fs.StringVar(&r.retain, "retain", "", "with --db: delete rows observed longer ago than this (e.g. 7d, 36h)")
	fs.StringVar(&r.summary, "summary", "text", "summary on stderr: text (a line per file), json (one line for log pipelines) or none")
	fs.StringVar(&r.metricsFile, "metrics-file", "", "write Prometheus metrics (findings by rule and severity, rows loaded, last success) to this file, for node_exporter's textfile collector")
	if err := parse(fs, args); err != nil {
		return err
	}
	retain, err := r.check(fs, c, &a)
	if err != nil {
		return err
	}
	quiet := c.quiet || r.summary != "text"
	opt, err := f.options(e, quiet)
	if err != nil {
		return err
	}
	inputs, err := ingest.ExpandPaths(fs.Args())
	if err != nil {
		return err
	}
	path := c.db
	if path == "" {
		path = store.InMemory
	}
	db, err := c.openDB(ctx, path, false)
	if err != nil {
		return err
	}
	defer func() {
		if db != nil {
			db.Close()
		}
	}()

	results, ingestErr := e.ingestFiles(ctx, db, opt, inputs)
	ingested := time.Now()
	pruned, counts, err := pruneAndCount(ctx, e.logWriter(quiet), db, retain, started)
	if err != nil {
		return err
	}
	var arrived *window
	if path != store.InMemory && a.since == "" && a.until == "" {
		if arrived, err = arrivedSincePreviousRun(ctx, db); err != nil {
			return err
		}
	}
	var rep *analyze.Report
	var analyzeErr error
	if path == store.InMemory {
		rep, analyzeErr = a.analyzeAndReport(ctx, e.stdout, db, arrived)
	} else if rep, analyzeErr, err = analyzeReadOnly(ctx, e, c, &db, &a, arrived); err != nil {
		return err
	}
	if rep == nil && analyzeErr != nil {
		return analyzeErr
	}
	defer rep.Close()
	loadErr := loadStatus(results, ingestErr, f.strict)
	runErr := worst(loadErr, analyzeErr)
	if loadErr != nil && analyzeErr != nil {
		runErr = exitError{exitCode(runErr), fmt.Errorf("%w\n%w", analyzeErr, loadErr)}
	}
	bySeverity, err := rep.BySeverity()
	if err != nil {
		return worst(runErr, err)
	}
	s := newRunSummary(started, ingested, results, rep, bySeverity, pruned, exitCode(runErr))
	if err := r.record(ctx, e, db, s, rep, counts); err != nil {
		return err
	}
	return runErr
}

// analyzeReadOnly runs the analysis of a database file that *db loaded. The rules read the file
// from an instance of their own (store.Sandboxed), so the instance that loaded it is closed first,
// and Go's heap of the load handed back, so that what the load left goes back before the rules run;
// the file is opened read-only for them (with DuckDB's block pool, as for analyze --db), then for
// writing again into *db, to record the run. run --db over a stream of 30M events peaked at
// 1,347 MiB this way, at 1,564 MiB with the loading instance kept open (BENCHMARKS.md). err is an
// error of those opens and closes; the analysis's own comes back as analyzeErr.
func analyzeReadOnly(ctx context.Context, e *env, c *commonFlags, db **store.DB, a *analyzeFlags, arrived *window) (rep *analyze.Report, analyzeErr, err error) {
	path := (*db).Path
	err = (*db).Close()
	*db = nil
	if err != nil {
		return nil, nil, fmt.Errorf("closing %s after the load: %w", path, err)
	}
	debug.FreeOSMemory()
	ro, err := c.openDB(ctx, path, true)
	if err != nil {
		return nil, nil, err
	}
	rep, analyzeErr = a.analyzeAndReport(ctx, e.stdout, ro, arrived)
	err = ro.Close()
	if err != nil {
		err = fmt.Errorf("closing %s after the analysis: %w", path, err)
	} else {
		*db, err = c.openDB(ctx, path, false)
	}
	if err != nil {
		if rep != nil {
			rep.Close()
		}
		return nil, nil, err
	}
	return rep, analyzeErr, nil
}

// arrivedSincePreviousRun is the window of a scheduled run: the time span of the evidence that the
// loads after the previous successful run (exit code other than ExitError) added, this run's
// included; nil (everything) when no run succeeded before.
func arrivedSincePreviousRun(ctx context.Context, db *store.DB) (*window, error) {
	prev, err := db.LastRunFinishedWithout(ctx, ExitError)
	if err != nil || prev == nil {
		return nil, err
	}
	first, last, err := db.EvidenceSpan(ctx, prev)
	if err != nil {
		return nil, err
	}
	return &window{since: first, until: last, nothingNew: first == nil}, nil
}

// check validates the run flags (and the rule selection, before anything is loaded) and
// returns the retention period (0: keep everything).
func (r *runFlags) check(fs *pflag.FlagSet, c *commonFlags, a *analyzeFlags) (time.Duration, error) {
	if fs.NArg() == 0 {
		return 0, usagef("no PATH given")
	}
	if err := a.validate(fs); err != nil {
		return 0, err
	}
	if r.summary != "text" && r.summary != "json" && r.summary != "none" {
		return 0, usagef("unknown --summary %q (want text, json or none)", r.summary)
	}
	var retain time.Duration
	if r.retain != "" {
		var err error
		if retain, err = parseRetention(r.retain); err != nil {
			return 0, usageError{err}
		}
		if c.db == "" {
			return 0, usagef("--retain needs --db: a temporary database keeps nothing")
		}
	}
	if _, _, err := a.selectRules(); err != nil {
		return 0, err
	}
	return retain, nil
}

// pruneAndCount deletes what is older than retain before started (retain 0 keeps all), counts
// the rows of every table and says on log (nil: nowhere) what the database holds.
func pruneAndCount(ctx context.Context, log io.Writer, db *store.DB, retain time.Duration, started time.Time) (map[string]int64, []store.TableRows, error) {
	var pruned map[string]int64
	if retain > 0 {
		var err error
		if pruned, err = db.Prune(ctx, started.Add(-retain)); err != nil {
			return nil, nil, err
		}
	}
	counts, err := db.Schema.CountRows(ctx, db.DB)
	if err != nil {
		return nil, nil, err
	}
	if log != nil {
		var parts []string
		for _, tc := range counts {
			if tc.Rows > 0 {
				parts = append(parts, fmt.Sprintf("%d %s", tc.Rows, tc.Table))
			}
		}
		fmt.Fprintf(log, "loaded: %s\n", strings.Join(parts, ", "))
	}
	return pruned, counts, nil
}

// record keeps the run in a database file's runs table, prints the JSON summary and writes
// the metrics file, as the flags ask.
func (r *runFlags) record(ctx context.Context, e *env, db *store.DB, s *runSummary, rep *analyze.Report, counts []store.TableRows) error {
	inMemory := db.Path == store.InMemory
	if !inMemory {
		if err := db.RecordRun(ctx, s.run()); err != nil {
			return err
		}
	}
	if r.summary == "json" {
		b, _ := json.Marshal(s)
		fmt.Fprintln(e.stderr, string(b))
	}
	if r.metricsFile == "" {
		return nil
	}
	lastSuccess, err := lastSuccessfulRun(ctx, db, inMemory, s.ExitCode)
	if err != nil {
		return err
	}
	return writeMetrics(r.metricsFile, s, rep, counts, lastSuccess)
}

// parseRetention reads a retention period: a Go duration (36h) or days (7d).
func parseRetention(s string) (time.Duration, error) {
	if days, ok := strings.CutSuffix(s, "d"); ok {
		n, err := strconv.Atoi(days)
		if err == nil && n > 0 {
			return time.Duration(n) * 24 * time.Hour, nil
		}
	} else if d, err := time.ParseDuration(s); err == nil && d > 0 {
		return d, nil
	}
	return 0, fmt.Errorf("--retain wants a period like 7d or 36h, got %q", s)
}

// lastSuccessfulRun returns when the last run that did not fail finished: this one, or for a
// failed run with a database, the latest recorded one (nil when none).
func lastSuccessfulRun(ctx context.Context, db *store.DB, inMemory bool, exit int) (*time.Time, error) {
	if exit != ExitError {
		now := time.Now()
		return &now, nil
	}
	if inMemory {
		return nil, nil
	}
	return db.LastRunFinishedWithout(ctx, ExitError)
}

// runSummary is the one-line JSON summary of a run, for log pipelines.
type runSummary struct {
	Msg          string           `json:"msg"`
	Started      time.Time        `json:"started"`
	Since        *time.Time       `json:"since"`
	Until        *time.Time       `json:"until"`
	Files        int              `json:"files"`
	Skipped      int              `json:"files_skipped"` // not loaded for a reason (not evidence, empty, already loaded)
	Failed       int              `json:"files_failed"`  // not loaded because of an error
	Rows         int64            `json:"rows"`
	Rejected     int64            `json:"rejected"`
	Findings     map[string]int   `json:"findings"`
	Pruned       map[string]int64 `json:"pruned,omitempty"`
	IngestMs     int64            `json:"ingest_ms"`
	AnalyzeMs    int64            `json:"analyze_ms"`
	NotEvaluated []string         `json:"not_evaluated,omitempty"`
	Blind        []string         `json:"blind,omitempty"`   // "blind: RULE [CLUSTER] (REASONS)", see Report.CoverageGaps
	Partial      []string         `json:"partial,omitempty"` // "partial: RULE [CLUSTER] (REASONS)"
	ExitCode     int              `json:"exit_code"`
}

func newRunSummary(started, ingested time.Time, results []ingest.FileResult, rep *analyze.Report, bySeverity map[rules.Severity]int, pruned map[string]int64, exit int) *runSummary {
	s := &runSummary{Msg: "kubesift run", Started: started.UTC(), Since: rep.Since, Until: rep.Until, Pruned: pruned,
		IngestMs: ingested.Sub(started).Milliseconds(), AnalyzeMs: time.Since(ingested).Milliseconds(), ExitCode: exit,
		Findings: map[string]int{}}
	for _, sev := range rules.Severities {
		s.Findings[string(sev)] = bySeverity[sev]
	}
	for _, r := range results {
		switch {
		case r.Err != nil:
			s.Failed++
			continue
		case r.Skipped != "":
			s.Skipped++
			continue
		}
		s.Files++
		s.Rows += r.Rows
		s.Rejected += r.Rejected
	}
	for _, o := range rep.Outcomes {
		if !o.Evaluated {
			s.NotEvaluated = append(s.NotEvaluated, o.Rule.ID)
		}
	}
	s.Blind, s.Partial = rep.CoverageGaps(rules.Blind), rep.CoverageGaps(rules.Partial)
	return s
}

// run is the row of the runs table for s.
func (s *runSummary) run() store.Run {
	return store.Run{Started: s.Started, Since: s.Since, Until: s.Until, Files: s.Files, Rows: s.Rows, Rejected: s.Rejected,
		Critical: s.Findings["critical"], Warning: s.Findings["warning"], Info: s.Findings["info"], ExitCode: s.ExitCode}
}
