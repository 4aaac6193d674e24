package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/pflag"

	"github.com/kubesift/kubesift/analyze"
	"github.com/kubesift/kubesift/analyze/htmlreport"
	"github.com/kubesift/kubesift/ingest"
	"github.com/kubesift/kubesift/rules"
	"github.com/kubesift/kubesift/store"
	"github.com/kubesift/kubesift/tabular"
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
	html string
	// htmlCharts is how many findings of each rule get charts in the HTML report
	htmlCharts int
	output     *outputFlag
	// profile prints each rule's time and peak memory to stderr (analyze only)
	profile bool
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
	fs.IntVar(&f.htmlCharts, "html-charts", htmlreport.ChartsPerRule, "HTML report: charts and evidence for the first N findings of each rule (the most severe, then the earliest); the page lists the others with their summary and says so")
}

// validate checks -o, --out, --html and --html-charts (as fs parsed them) before any work.
func (f *analyzeFlags) validate(fs *pflag.FlagSet) error {
	if err := f.output.validate(); err != nil {
		return err
	}
	if _, _, err := parseWindow(f.since, f.until, time.Now()); err != nil {
		return err
	}
	if f.htmlCharts < 0 {
		return usagef("--html-charts wants a number of findings per rule, 0 or more, got %d", f.htmlCharts)
	}
	if fs.Changed("html-charts") && f.html == "" && f.output.format != "html" {
		return usagef("--html-charts applies to the HTML report: add --html FILE or -o html")
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

// parseWindow reads --since and --until: each RFC3339 (in either case: 2026-11-21t04:00:00z is read
// too, as ingest reads times) or a duration meaning that long before now. A window that ends before
// it starts, or where it starts, is a bad command line: it would hold nothing.
func parseWindow(since, until string, now time.Time) (from, to *time.Time, err error) {
	if from, err = parseTime("since", since, now); err != nil {
		return nil, nil, err
	}
	if to, err = parseTime("until", until, now); err != nil {
		return nil, nil, err
	}
	if from != nil && to != nil && !from.Before(*to) {
		return nil, nil, usagef("--until (%s) is not after --since (%s): the window holds nothing",
			to.Format(time.RFC3339Nano), from.Format(time.RFC3339Nano))
	}
	return from, to, nil
}

func parseTime(flag, s string, now time.Time) (*time.Time, error) {
	if s == "" {
		return nil, nil
	}
	if t, err := time.Parse(time.RFC3339, strings.ToUpper(s)); err == nil {
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

// analysis is an analysis's command line, checked: the rules, the window, what to fail on.
type analysis struct {
	rules   []rules.Rule
	set     map[string]map[string]any
	window  // what to analyse: the flags' window, or the scheduled one
	failOn  rules.Severity
	sups    []analyze.Suppression
	now     time.Time
	profile bool
}

// prepare checks the analysis flags. def is the window when neither --since nor --until is
// given (nil: unbounded).
func (f *analyzeFlags) prepare(def *window) (*analysis, error) {
	rs, set, err := f.selectRules()
	if err != nil {
		return nil, err
	}
	a := &analysis{rules: rs, set: set, now: time.Now()}
	if a.since, a.until, err = parseWindow(f.since, f.until, a.now); err != nil {
		return nil, err
	}
	if def != nil && f.since == "" && f.until == "" {
		a.window = *def
	}
	if f.failOn != "" {
		if a.failOn, err = rules.ParseSeverity(f.failOn); err != nil {
			return nil, usageError{err}
		}
	}
	if f.ignore != "" {
		b, err := os.ReadFile(f.ignore)
		if err != nil {
			return nil, fmt.Errorf("--ignore: %w", err)
		}
		if a.sups, err = analyze.ParseSuppressions(f.ignore, b, rs); err != nil {
			return nil, err
		}
	}
	a.profile = f.profile
	return a, nil
}

// run runs the rules over db; with nothing new to analyse it reports each rule not evaluated.
func (a *analysis) run(ctx context.Context, db *store.DB) (*analyze.Report, error) {
	if a.nothingNew {
		return analyze.NotEvaluated(a.rules, "", nothingNewReason), nil
	}
	return analyze.Run(ctx, db, a.rules, analyze.Options{Since: a.since, Until: a.until, Set: a.set, Profile: a.profile})
}

// analyzeAndReport runs the rules over db and writes the report (see report). def is the window
// when neither --since nor --until is given (nil: unbounded).
func (f *analyzeFlags) analyzeAndReport(ctx context.Context, w io.Writer, db *store.DB, def *window) (*analyze.Report, error) {
	a, err := f.prepare(def)
	if err != nil {
		return nil, err
	}
	rep, err := a.run(ctx, db)
	if err != nil {
		return nil, err
	}
	return rep, f.report(ctx, w, db, a, rep)
}

// report filters and writes rep (db serves the html report's chart queries). When some rules
// failed it returns an ExitPartial error (the report holds the others' findings), else with
// --fail-on an ExitFindings error when a finding is at or above that severity.
func (f *analyzeFlags) report(ctx context.Context, w io.Writer, db *store.DB, a *analysis, rep *analyze.Report) error {
	rep.Version = Version
	if len(f.namespaces) > 0 {
		if err := rep.KeepNamespaces(f.namespaces); err != nil {
			return err
		}
	}
	if err := rep.Suppress(a.sups, a.now); err != nil {
		return err
	}
	if f.html != "" {
		if err := writeFile(f.html, "html", f.output.force, func(w io.Writer) error { return writeReport(ctx, w, db, rep, "html", f.htmlCharts) }); err != nil {
			return fmt.Errorf("--html: %w", err)
		}
		rep.HTMLReport = f.htmlLink()
	}
	if err := f.output.emit(w, func(w io.Writer) error { return writeReport(ctx, w, db, rep, f.output.format, f.htmlCharts) }); err != nil {
		return err
	}
	if failed := rep.Failed(); len(failed) > 0 {
		errs := make([]error, len(failed))
		for i, o := range failed {
			errs[i] = o.Err
		}
		if len(failed) == len(rep.Outcomes) {
			return exitError{ExitError, fmt.Errorf("every rule failed: %w", errors.Join(errs...))}
		}
		return exitError{ExitPartial, fmt.Errorf("%d of %d rules failed (the other rules' findings are reported): %w", len(failed), len(rep.Outcomes), errors.Join(errs...))}
	}
	if a.failOn != "" {
		bySeverity, err := rep.BySeverity()
		if err != nil {
			return err
		}
		n := 0
		for sev, count := range bySeverity {
			if sev.Rank() >= a.failOn.Rank() {
				n += count
			}
		}
		if n > 0 {
			return exitError{ExitFindings, fmt.Errorf("%s at or above %s", pluralFindings(n), a.failOn)}
		}
	}
	return nil
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
			"finding reaches that severity.\n\n"+
			"--dataset DIR runs them over a dataset that export --dataset wrote instead, one cluster at a\n"+
			"time (--cluster: that one only), reading only the files of the days the window needs.\n"+
			"--partition N analyses only the Nth (from 0) of the dataset's (cluster, day) partitions in\n"+
			"the window, in order of cluster and day, and --findings-dir writes its findings as Parquet\n"+
			"to DIR/cluster=<cluster>/date=<day>/findings.parquet: one Indexed Job pod per partition\n"+
			"(--partition $(JOB_COMPLETION_INDEX), --partitions the Job's completions; see\n"+
			"deploy/kubernetes/dataset/).")
	c.addDB(fs, e, "database file to analyse")
	var f analyzeFlags
	addAnalyzeFlags(fs, &f)
	dataset := fs.String("dataset", "", "analyse this dataset directory (see export --dataset) instead of --db")
	cluster := fs.String("cluster", "", "with --dataset: analyse only this cluster (\"\" is the unknown cluster); one the dataset does not have is an error that lists those it has")
	partition := fs.Int("partition", 0, "with --dataset: analyse only the Nth (from 0) (cluster, day) partition in the window")
	findingsDir := fs.String("findings-dir", "", "with --partition: also write the findings to DIR/cluster=<cluster>/date=<day>/findings.parquet")
	partitions := fs.Int("partitions", 0, "with --partition: the number of (cluster, day) partitions in the window the Indexed Job was made for (its completions); when the dataset holds another number (an export added days since), fail with exit code 2 rather than analyse a partition the shift gave this index")
	fs.BoolVar(&f.profile, "profile", false, "print each rule's wall time and the peak resident memory while it ran to stderr, and last the total time and the highest of those peaks (the analysis's peak: the process's own high-water mark is reset before each rule); with --dataset, for each cluster as it is analysed")
	if err := parse(fs, args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return usagef("unexpected argument %q (analyze reads --db; use run to load files first)", fs.Arg(0))
	}
	if err := f.validate(fs); err != nil {
		return err
	}
	if err := f.output.checkTerminal(e.stdout); err != nil {
		return err
	}
	if *dataset != "" || fs.Changed("cluster") || fs.Changed("partition") || fs.Changed("findings-dir") {
		if *dataset == "" || fs.Changed("db") {
			return usagef("--cluster and --partition go with --dataset, and --dataset replaces --db")
		}
		if *findingsDir != "" && !fs.Changed("partition") {
			return usagef("--findings-dir goes with --partition (it names the files after the partition's cluster and day)")
		}
		if fs.Changed("partitions") && (!fs.Changed("partition") || *partitions < 1) {
			return usagef("--partitions goes with --partition and is at least 1")
		}
		var only *string
		if fs.Changed("cluster") {
			only = cluster
		}
		if fs.Changed("partition") {
			return f.analyzeDatasetPartition(ctx, e, c, *dataset, only, *partition, *partitions, *findingsDir)
		}
		return f.analyzeDataset(ctx, e, c, *dataset, only)
	}
	db, err := c.openDB(ctx, c.db, true)
	if err != nil {
		return err
	}
	defer db.Close()
	rep, err := f.analyzeAndReport(ctx, e.stdout, db, nil)
	if rep != nil {
		defer rep.Close()
	}
	if f.profile && rep != nil {
		if perr := rep.WriteProfile(e.stderr); perr != nil {
			return errors.Join(err, perr)
		}
	}
	return err
}

// checkDatasetCluster returns a usage error when cluster is not among the clusters of the dataset
// dir (a misspelt --cluster would otherwise be a cluster without data: every rule not evaluated).
func checkDatasetCluster(dir, cluster string, clusters []string) error {
	if slices.Contains(clusters, cluster) {
		return nil
	}
	return usagef("--cluster %q: dataset %s has no such cluster (it has %s)", cluster, dir, someClusters(clusters))
}

// someClusters words a dataset's clusters for an error: how many, and the first ten, quoted.
func someClusters(clusters []string) string {
	names := make([]string, 0, min(len(clusters), 10))
	for _, c := range clusters[:min(len(clusters), 10)] {
		names = append(names, strconv.Quote(c))
	}
	if len(clusters) > 10 {
		names = append(names, "…")
	}
	return fmt.Sprintf("%d: %s", len(clusters), strings.Join(names, ", "))
}

// analyzeDataset runs the rules over the dataset dir: over each of its clusters in turn (only,
// when given), each in a DuckDB of its own that reads only the days the window and the rules'
// lookback need, and reports the findings of all.
func (f *analyzeFlags) analyzeDataset(ctx context.Context, e *env, c *commonFlags, dir string, only *string) error {
	a, err := f.prepare(nil)
	if err != nil {
		return err
	}
	clusters, err := store.DatasetClusters(dir, ingest.Schema())
	switch {
	case err != nil:
		return err
	case only != nil:
		if err := checkDatasetCluster(dir, *only, clusters); err != nil {
			return err
		}
		clusters = []string{*only}
	case len(clusters) == 0:
		return fmt.Errorf("dataset %s holds no partitions (cluster=…/date=…): write one with export --dataset", dir)
	}
	if len(clusters) > 1 && (f.output.format == "html" || f.html != "") {
		return usagef("the HTML report draws the charts of one cluster: add --cluster to -o html or --html (the dataset has %s)", someClusters(clusters))
	}
	from, to := readDays(a)
	// each cluster's findings are kept on disk as soon as its rules have run (see analyze.Sweep)
	var sweep analyze.Sweep
	defer sweep.Close()
	// the cluster's database when there is one cluster, open until the report is written (-o
	// html's charts read it); a sweep closes each cluster's before it opens the next: kept open
	// through the next cluster's analysis, its memory (the block pool) was still held then, and a
	// sweep of 10 clusters' busiest day peaked at 1.8-1.9 GiB instead of 1.0-1.2 GiB (BENCHMARKS.md)
	var last *store.DB
	read := 0          // the clusters analysed
	var unread []error // the clusters whose files could not be read
	for n, cl := range clusters {
		started := time.Now()
		db, err := c.openDataset(ctx, dir, cl, from, to)
		var rep *analyze.Report
		if err == nil {
			if rep, err = a.run(ctx, db); err != nil {
				db.Close()
			}
		}
		if err != nil {
			err = fmt.Errorf("cluster %q: %w", cl, err)
			if len(clusters) == 1 || ctx.Err() != nil {
				return err
			}
			// the other clusters are analysed and reported; this one's rules say why they are not
			unread = append(unread, err)
			if err := sweep.Add(analyze.NotEvaluated(a.rules, cl, "failed: "+err.Error())); err != nil {
				return err
			}
			if log := e.logWriter(c.quiet); log != nil {
				fmt.Fprintf(log, "kubesift analyze: %v; the other clusters are analysed\n", err)
			}
			continue
		}
		if len(clusters) == 1 {
			last = db
			defer last.Close()
		} else if err := db.Close(); err != nil {
			return fmt.Errorf("cluster %q: %w", cl, err)
		}
		read++
		if log := e.logWriter(c.quiet); log != nil { // a sweep of a fleet runs for minutes
			fmt.Fprintf(log, "cluster %q (%d of %d): %s in %.1f s\n", cl, n+1, len(clusters), plural(rep.NumFindings(), "finding"),
				time.Since(started).Seconds())
		}
		if f.profile {
			fmt.Fprintf(e.stderr, "cluster %q:\n", cl)
			if err := rep.WriteProfile(e.stderr); err != nil {
				rep.Close()
				return err
			}
		}
		if err := sweep.Add(rep); err != nil {
			return fmt.Errorf("cluster %q: %w", cl, err)
		}
	}
	if read == 0 {
		return fmt.Errorf("no cluster of dataset %s could be read: %w", dir, errors.Join(unread...))
	}
	err = f.report(ctx, e.stdout, last, a, sweep.Report())
	if len(unread) == 0 {
		return err
	}
	partial := fmt.Errorf("%d of %d clusters could not be read (the others' findings are reported): %w", len(unread), len(clusters), errors.Join(unread...))
	if exitCode(err) == ExitPartial { // some rules failed in the clusters read, too
		return exitError{ExitPartial, errors.Join(err, partial)}
	}
	return worst(err, exitError{ExitPartial, partial})
}

// analyzeDatasetPartition runs the rules over the nth (cluster, day) partition of the dataset
// dir in the window (of cluster only, when given), with the window cut to that day, and writes
// the findings into findingsDir too when given. of, when not 0, is how many partitions the
// window must hold: the Indexed Job's completions.
func (f *analyzeFlags) analyzeDatasetPartition(ctx context.Context, e *env, c *commonFlags, dir string, only *string, n, of int, findingsDir string) error {
	a, err := f.prepare(nil)
	if err != nil {
		return err
	}
	all, err := store.DatasetDays(dir, ingest.Schema())
	if err != nil {
		return err
	}
	if only != nil {
		if err := checkDatasetCluster(dir, *only, store.ClustersOf(all)); err != nil {
			return err
		}
	}
	var days []store.DatasetPartition
	for _, d := range all {
		start, err := time.Parse(time.DateOnly, d.Date)
		if err != nil {
			continue // __HIVE_DEFAULT_PARTITION__: rows without a time belong to no day
		}
		end := start.Add(24*time.Hour - time.Nanosecond)
		if (only == nil || *only == d.Cluster) && (a.since == nil || !end.Before(*a.since)) && (a.until == nil || !start.After(*a.until)) {
			days = append(days, d)
		}
	}
	if of != 0 && len(days) != of {
		return usagef("--partitions %d: the dataset has %d (cluster, day) partitions in the window: exports changed it since the Job was made, and index %d may no longer be the partition it stood for; make the Job again with completions and --partitions %d", of, len(days), n, len(days))
	}
	if n < 0 || n >= len(days) {
		return usagef("--partition %d: the dataset has %d (cluster, day) partitions in the window (0 to %d)", n, len(days), len(days)-1)
	}
	p := days[n]
	start, _ := time.Parse(time.DateOnly, p.Date)
	end := start.Add(24*time.Hour - time.Nanosecond)
	if a.since == nil || a.since.Before(start) {
		a.since = &start
	}
	if a.until == nil || a.until.After(end) {
		a.until = &end
	}
	from, to := readDays(a)
	db, err := c.openDataset(ctx, dir, p.Cluster, from, to)
	if err != nil {
		return err
	}
	defer db.Close()
	if log := e.logWriter(c.quiet); log != nil {
		fmt.Fprintf(log, "partition %d of %d: cluster %q, %s\n", n, len(days), p.Cluster, p.Date)
	}
	rep, err := a.run(ctx, db)
	if err != nil {
		return fmt.Errorf("cluster %q, %s: %w", p.Cluster, p.Date, err)
	}
	defer rep.Close()
	if f.profile {
		if err := rep.WriteProfile(e.stderr); err != nil {
			return err
		}
	}
	reportErr := f.report(ctx, e.stdout, db, a, rep)
	if findingsDir != "" {
		path := filepath.Join(findingsDir, store.PartitionPath(p.Cluster, p.Date), "findings.parquet")
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			return err
		}
		if err := writeFile(path, "parquet", true, func(w io.Writer) error { return tabular.Parquet(ctx, w, partitionFindings(rep)) }); err != nil {
			return fmt.Errorf("%s: %w", path, err)
		}
	}
	return reportErr
}

// partitionFindings is the findings table of one dataset partition for findings/: without the
// cluster column, which its cluster=… directory holds (the view over the partition gives the
// rules one cluster's rows, so every finding has it). Hive-partitioned readers (Athena, Trino)
// reject a partition key that is also a column in the files; DuckDB and Spark read it from the
// path.
func partitionFindings(rep *analyze.Report) *tabular.Table {
	t := analyze.FindingsTable(rep)
	i := slices.IndexFunc(t.Columns, func(c tabular.Column) bool { return c.Name == "cluster" })
	t.Columns = slices.Delete(t.Columns, i, i+1)
	scan := t.Scan
	t.Scan = func(yield func(row []any) error) error {
		return scan(func(row []any) error { return yield(slices.Delete(row, i, i+1)) })
	}
	return t
}

// readDays returns the days of a dataset an analysis reads: from the start of the longest
// lookback before --since to --until (nil: unbounded).
func readDays(a *analysis) (from, to *time.Time) {
	if a.since != nil {
		var lookback time.Duration
		for _, r := range a.rules {
			lookback = max(lookback, r.LookbackDuration())
		}
		start := a.since.Add(-lookback)
		from = &start
	}
	return from, a.until
}
