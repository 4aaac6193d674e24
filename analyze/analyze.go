package analyze

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"math/big"
	"slices"
	"strings"
	"text/template"
	"time"

	"github.com/kubesift/kubesift/internal/inorder"
	"github.com/kubesift/kubesift/queries"
	"github.com/kubesift/kubesift/rules"
	"github.com/kubesift/kubesift/store"
)

// Finding is one row of a rule's query: the contract columns. Its evidence, the bulk of it,
// is kept apart (see Evidence).
type Finding struct {
	Rule      string         `json:"rule"`
	Severity  rules.Severity `json:"severity"`
	Cluster   string         `json:"cluster"` // "" when the evidence does not say
	Namespace string         `json:"namespace"`
	Name      string         `json:"name"`
	Subject   string         `json:"subject"`
	FirstSeen time.Time      `json:"first_seen"`
	LastSeen  time.Time      `json:"last_seen"`
	Count     int64          `json:"count"`
	Summary   string         `json:"summary"` // the rule's summary template rendered with the facts
	evidence  evidence
}

// Outcome is what one rule did.
type Outcome struct {
	Rule      rules.Rule
	Evaluated bool
	Reason    string // why it was not evaluated
	Err       error  // the rule's failure (its query failed or broke the contract); the other rules still ran
	Findings  int
	Profile   RuleProfile // what the rule cost (the peak memory only with Options.Profile)
	// Coverage is what the rule could see of each cluster (see Coverage); empty when it failed.
	Coverage []Coverage
}

// Failed returns the outcomes of the rules that failed.
func (rep *Report) Failed() []Outcome {
	var failed []Outcome
	for _, o := range rep.Outcomes {
		if o.Err != nil {
			failed = append(failed, o)
		}
	}
	return failed
}

// Report is the result of an analysis.
type Report struct {
	Since, Until *time.Time
	Outcomes     []Outcome
	Inputs       []Input  // the tables analysed that hold rows, in schema order
	Warnings     []string // e.g. expired suppressions
	Version      string   // kubesift's version, shown by the xlsx and markdown reports (set by the caller)
	// HTMLReport is where the same run wrote the HTML report, relative to this report's file (set by
	// the caller); the xlsx and markdown reports link to it. "" when none.
	HTMLReport string
	spills     []*evidenceSpill // where the findings' evidence is (Close frees them)
	// findings are a Run's findings, in the order of findingOrder: severity (highest first),
	// first_seen, rule, cluster, namespace, name, subject. A Sweep's report has them in its
	// reports' evidence files instead (stored), each report's in that order.
	findings []Finding
	stored   []storedFindings
	// filters drop findings from the report (KeepNamespaces, Suppress) as they are read.
	filters []func(Finding) bool
	// suppressedBy returns the suppression of Suppress that silences a finding, if one does (nil
	// before Suppress). The findings it silenced are those that the filters before its own (the
	// first suppressedAfter) keep and it matches (see EachSuppressed); suppressed counts them.
	suppressedBy    func(Finding) (Suppression, bool)
	suppressedAfter int
	suppressed      int
}

// Input is one table the analysis saw, with its row count.
type Input struct {
	Table string
	Rows  int64
}

// KeepNamespaces drops the findings about objects outside namespaces, and counts again.
func (rep *Report) KeepNamespaces(namespaces []string) error {
	_, err := rep.drop(func(f Finding) bool { return !slices.Contains(namespaces, f.Namespace) })
	return err
}

// drop leaves out the findings for which drop is true from then on (see Report.cursor), counts
// again, and returns how many it left out.
func (rep *Report) drop(drop func(Finding) bool) (dropped int, err error) {
	perRule := map[string]int{}
	err = rep.EachFinding(func(_ int, f Finding) error {
		if drop(f) {
			perRule[f.Rule]++
			dropped++
		}
		return nil
	})
	if err != nil {
		return 0, err
	}
	rep.filters = append(rep.filters, drop)
	for i := range rep.Outcomes {
		rep.Outcomes[i].Findings -= perRule[rep.Outcomes[i].Rule.ID]
	}
	return dropped, nil
}

// Options set the analysis window and parameter overrides.
type Options struct {
	Since, Until *time.Time
	// Set overrides parameters: Set[ruleID][param] = value (already of the param's type).
	Set map[string]map[string]any
	// Profile measures each rule's peak memory (Outcome.Profile.PeakRSS), resetting the process's
	// peak before each rule.
	Profile bool
	// Pieces, when positive, is how many pieces a rule that runs in pieces runs in, instead of the
	// count its table's rows and the memory limit give (rule tests, see rules.TestCase.Pieces).
	Pieces int64

	// memoryLimit is the database's memory limit as given (--memory-limit), for the advice of a
	// rule that runs out of memory (outOfMemoryError); set by Run.
	memoryLimit string
	// memoryShare is the database's memory limit as a share of the default one, by which the rows
	// of a rule's pieces scale (see rules.Pieces); set by Run.
	memoryShare float64
}

// Run evaluates rs over db. A rule whose input tables are all empty is not evaluated. A rule
// whose query fails or breaks the column contract is reported with its error (Outcome.Err) and
// the other rules still run; Run itself fails only when the database cannot be read at all.
// The findings' evidence is kept in a temporary file (see Finding.Evidence) until the report is
// closed (Report.Close).
func Run(ctx context.Context, db *store.DB, rs []rules.Rule, opt Options) (*Report, error) {
	opt.memoryShare, opt.memoryLimit = db.MemoryShare(), db.MemoryLimit()
	spill := &evidenceSpill{}
	rep := &Report{Since: opt.Since, Until: opt.Until, spills: []*evidenceSpill{spill}}
	// one sandbox for every rule: the memory a rule frees stays with DuckDB and its allocator for the
	// next, instead of an instance per rule whose closing purges it all and makes the next rule
	// fault its memory in again (on a virtual machine about 17 µs a page: all rules over 10M events
	// of the independent mix took 21.2-22.3 s this way against 27.3-28.9 s with a sandbox per rule,
	// the recordings at 10M 49.9-62.0 s against 61.1-62.1 s, the highest peak 0-206 MiB higher,
	// 1,033 MiB at 4M events; BENCHMARKS.md).
	// --profile's peak of a rule is then the process's while the rule ran, the blocks the rules
	// before it cached included.
	sandbox, err := openSandbox(ctx, db)
	if err != nil {
		rep.Close()
		return nil, err
	}
	defer sandbox.Close()
	if rep.Inputs, err = countInputs(ctx, db.Schema, sandbox); err != nil {
		rep.Close()
		return nil, err
	}
	clusterNames, perTable, err := evidenceClusters(ctx, db.Schema, sandbox, rep.Inputs, opt)
	if err != nil {
		rep.Close()
		return nil, err
	}
	held := heldTables(rep.Inputs, db.OutsideWindow)
	for _, r := range rs {
		out, findings := evaluate(ctx, db.Schema, sandbox, spill, r, opt, held)
		if out.Err == nil {
			gs, err := gaps(ctx, sandbox, r, opt)
			if err != nil {
				out.Err = fmt.Errorf("rule %s (%s): %w", r.ID, r.Source, err)
				out.Reason = "failed: " + err.Error()
			} else {
				out.Coverage = coverageOf(clusterNames, notEvaluatedIn(db.Schema, clusterNames, perTable, r, out, opt, held), gs)
			}
		}
		rep.findings = append(rep.findings, findings...)
		rep.Outcomes = append(rep.Outcomes, out)
	}
	if err := spill.seal(); err != nil {
		rep.Close()
		return nil, err
	}
	sortFindings(rep.findings)
	return rep, nil
}

// NotEvaluated is the report of rs evaluated over nothing of cluster, each rule not evaluated
// for reason (a scheduled run with no new evidence, cluster ""; a dataset's cluster whose files
// could not be read).
func NotEvaluated(rs []rules.Rule, cluster, reason string) *Report {
	rep := &Report{}
	for _, r := range rs {
		rep.Outcomes = append(rep.Outcomes, Outcome{Rule: r, Reason: reason, Coverage: coverageOf([]string{cluster}, map[string]string{cluster: reason}, nil)})
	}
	return rep
}

// evaluate runs one rule: not evaluated when its input tables have no rows in the window (held
// are the tables with rows at all, see heldTables).
func evaluate(ctx context.Context, schema store.Schema, sandbox *store.Sandbox, spill *evidenceSpill, r rules.Rule, opt Options, held []string) (Outcome, []Finding) {
	out := Outcome{Rule: r}
	empty, err := emptyInputs(ctx, schema, sandbox, r.Inputs, opt)
	if err != nil {
		out.Err = err
		out.Reason = "failed: " + err.Error()
		return out, nil
	}
	if len(empty) == len(r.Inputs) {
		out.Reason = noData(schema, empty, opt, held)
		return out, nil
	}
	var peak peakRSS
	if opt.Profile {
		peak.reset()
	}
	started := time.Now()
	findings, err := runRule(ctx, schema, sandbox, spill, r, opt, &out.Profile)
	out.Profile.Elapsed, out.Profile.PeakRSS = time.Since(started), peak.read()
	if err != nil {
		if store.IsOutOfMemory(err) {
			err = outOfMemoryError{err: err, limit: opt.memoryLimit}
		}
		out.Err = fmt.Errorf("rule %s (%s): %w", r.ID, r.Source, err)
		out.Reason = "failed: " + err.Error()
		return out, nil
	}
	out.Evaluated = true
	out.Findings = len(findings)
	return out, findings
}

// outOfMemoryError is a rule that ran out of memory (store.IsOutOfMemory), worded for kubesift's
// user: DuckDB's message ends with advice on settings (SET threads, SET memory_limit) that the
// sandbox does not let anyone change, so only its first line is kept, followed by what the user
// can do.
type outOfMemoryError struct {
	err   error
	limit string
}

func (e outOfMemoryError) Error() string {
	first, _, _ := strings.Cut(e.err.Error(), "\n")
	return fmt.Sprintf("%s: the rule needs more memory than --memory-limit %s gives it over this input; "+
		"raise --memory-limit, or analyse a shorter window (--since/--until)", first, e.limit)
}

func (e outOfMemoryError) Unwrap() error { return e.err }

// openSandbox returns the read-only connection that rules (and their charts) run on, with the
// rules' shared macros (queries/macros.sql) defined as TEMP macros: they live with the connection
// and write nothing to the database.
func openSandbox(ctx context.Context, db *store.DB) (*store.Sandbox, error) {
	sandbox, err := db.Sandboxed(ctx)
	if err != nil {
		return nil, err
	}
	if err := sandbox.Define(ctx, queries.Macros()); err != nil {
		sandbox.Close()
		return nil, fmt.Errorf("creating the rules' shared macros: %w", err)
	}
	return sandbox, nil
}

// noData is the reason a rule is not evaluated whose input tables have no rows in the window of
// opt: "no conntrack data", or "no conntrack data in the window" when one of them has rows
// elsewhere (held: the tables with rows, see heldTables).
func noData(schema store.Schema, tables []string, opt Options, held []string) string {
	reason := "no " + evidenceKinds(schema, tables) + " data"
	if (opt.Since != nil || opt.Until != nil) && slices.ContainsFunc(tables, func(t string) bool { return slices.Contains(held, t) }) {
		return reason + " in the window"
	}
	return reason
}

// heldTables names the tables that hold rows at all: those of inputs (the tables read, with rows),
// and a dataset's tables whose cluster has days outside the window, which its views do not read
// (store.DB.OutsideWindow).
func heldTables(inputs []Input, outsideWindow []string) []string {
	held := slices.Clone(outsideWindow)
	for _, in := range inputs {
		held = append(held, in.Table)
	}
	return held
}

// evidenceKinds names the kinds of evidence that fill tables: "conntrack", "audit or snapshot".
func evidenceKinds(schema store.Schema, tables []string) string {
	var kinds []string
	for _, t := range tables {
		table, _ := schema.Lookup(t)
		k := table.Evidence
		if !slices.Contains(kinds, k) {
			kinds = append(kinds, k)
		}
	}
	return strings.Join(kinds, " or ")
}

// countInputs counts the rows of every table of schema and keeps those that have some.
func countInputs(ctx context.Context, schema store.Schema, conn *store.Sandbox) ([]Input, error) {
	counts, err := schema.CountRows(ctx, conn)
	if err != nil {
		return nil, err
	}
	var out []Input
	for _, c := range counts {
		if c.Rows > 0 {
			out = append(out, Input{c.Table, c.Rows})
		}
	}
	return out, nil
}

// emptyInputs returns the input tables without rows in the window of opt: a window of a database
// that holds the evidence of other times only could not show what the rule looks for, and says
// so (an analysis of a dataset reads only the days of its window).
func emptyInputs(ctx context.Context, schema store.Schema, conn *store.Sandbox, inputs []string, opt Options) ([]string, error) {
	var empty []string
	for _, t := range inputs {
		has, err := schema.HasRows(ctx, conn, t, opt.Since, opt.Until)
		if err != nil {
			return nil, err
		}
		if !has {
			empty = append(empty, t)
		}
	}
	return empty, nil
}

// Args returns the named parameters of r's query: its params (defaults, overridden by set),
// the window and, for a rule with a lookback, the start of it.
func Args(r rules.Rule, opt Options) []any {
	args := make([]any, 0, len(r.Params)+2)
	for _, p := range r.Params {
		v := p.Default
		if o, ok := opt.Set[r.ID][p.Name]; ok {
			v = o
		}
		args = append(args, sql.Named(p.Name, v))
	}
	var since, until any
	if opt.Since != nil {
		since = *opt.Since
	}
	if opt.Until != nil {
		until = *opt.Until
	}
	args = append(args, sql.Named("since", since), sql.Named("until", until))
	if r.Lookback != "" {
		var start any
		if opt.Since != nil {
			start = opt.Since.Add(-r.LookbackDuration())
		}
		args = append(args, sql.Named(rules.LookbackParam, start))
	}
	return args
}

// summaryData is what a rule's summary template sees.
type summaryData struct {
	Finding
	Facts  map[string]any // the typed values the query returned for the summary (its facts column)
	Params map[string]any
}

// runRule runs r and returns its findings, their evidence kept in spill.
// prof gets the pieces it ran in.
func runRule(ctx context.Context, schema store.Schema, conn *store.Sandbox, spill *evidenceSpill, r rules.Rule, opt Options, prof *RuleProfile) (_ []Finding, err error) {
	tmpl, err := rules.SummaryTemplate(r.Summary)
	if err != nil {
		return nil, fmt.Errorf("summary: %w", err)
	}
	args := Args(r, opt)
	params := map[string]any{}
	for _, a := range args {
		params[a.(sql.NamedArg).Name] = a.(sql.NamedArg).Value
	}
	if r.Pieces == nil {
		return runPiece(ctx, conn, spill, r, args, tmpl, params)
	}
	// a stage with SortForPieces is sorted unless the rule will run in one piece, as far as can be
	// told; before stage i is made that is undecided when its own rows tell, and is told once it is
	sortStage := func(i int, made bool) (sort, decided bool, err error) {
		if opt.Pieces > 0 {
			return opt.Pieces > 1, true, nil
		}
		waiting := false
		pieces, known, err := pieceCount(r, opt, func(table string) (int64, bool, error) {
			if !made && r.Stages[i].Table == table {
				waiting = true
				return 0, false, nil
			}
			return rowsOnceStaged(ctx, schema, conn, r, opt, i, table)
		})
		return !known || pieces > 1, !waiting, err
	}
	drop, err := stage(ctx, conn, r, args, sortStage)
	defer func() { err = errors.Join(err, drop()) }()
	if err != nil {
		return nil, err
	}
	pieces := opt.Pieces
	if pieces <= 0 {
		if pieces, _, err = pieceCount(r, opt, func(table string) (int64, bool, error) {
			n, err := pieceRows(ctx, schema, conn, r, table, opt)
			return n, true, err
		}); err != nil {
			return nil, err
		}
	}
	if err := settleStages(ctx, conn, r, pieces); err != nil {
		return nil, err
	}
	var out []Finding
	for piece := range pieces {
		found, err := runPieceOrSplit(ctx, conn, spill, r, args, tmpl, params, piece, pieces, 0, prof)
		if err != nil {
			return nil, err
		}
		out = append(out, found...)
	}
	return out, nil
}

// splitFactor is how many smaller pieces a piece that ran out of memory runs again as, and
// maxSplits how many times over: a rule's pieces are sized for its usual input (rules.Pieces), and
// an input that crowds one piece (many reported objects in one share) still finishes, in pieces
// down to splitFactor^maxSplits (64) times smaller.
const (
	splitFactor = 4
	maxSplits   = 3
)

// runPieceOrSplit runs piece (from 0) of pieces of r. When it runs out of memory it runs again as
// the splitFactor pieces of pieces*splitFactor that hold exactly its rows (the piece macros nest:
// queries/macros.sql), up to maxSplits times; the query is staged before any row is read
// (runPiece), so a piece that failed has no finding to take back. prof counts the pieces run and
// split.
func runPieceOrSplit(ctx context.Context, conn *store.Sandbox, spill *evidenceSpill, r rules.Rule, args []any, tmpl *template.Template,
	params map[string]any, piece, pieces int64, splits int, prof *RuleProfile) ([]Finding, error) {
	found, err := runPiece(ctx, conn, spill, r, pieceArgs(r, args, piece, pieces), tmpl, params)
	if err == nil {
		prof.Pieces++
		return found, nil
	}
	if !store.IsOutOfMemory(err) || splits == maxSplits {
		return nil, fmt.Errorf("piece %d of %d: %w", piece+1, pieces, err)
	}
	prof.Splits++
	var out []Finding
	for sub := range int64(splitFactor) {
		found, err := runPieceOrSplit(ctx, conn, spill, r, args, tmpl, params, piece*splitFactor+sub, pieces*splitFactor, splits+1, prof)
		if err != nil {
			return nil, err
		}
		out = append(out, found...)
	}
	return out, nil
}

// stage keeps r's stages as their tables (see rules.Stage), in order, with the rule's args; drop
// removes those made (also when a later one failed). A stage with SortForPieces is made sorted by
// those columns when sorted(its index, false) says so and has decided: a piece that joins it on
// them then skips the other pieces' row groups, where in one piece the sort buys nothing
// (election-lock-churn on the recordings at 10M events: its stage of 882,244 writes in 0.66-0.73
// s instead of 1.14-1.26 s). When only the stage's own rows can decide, it is made as its query
// makes it and sorted(its index, true) counts the made stage; counting its query before it was
// made read the events a second time (0.66-0.83 s of the rule's 5.5-7.6 s there). If it is then
// to be sorted, it is made again from its query, not sorted in place, and before the later
// stages: the made table sorted in place with the later stages in memory too took the rule
// 23.3 s instead of 17.0 s under 200MB (BENCHMARKS.md).
func stage(ctx context.Context, conn *store.Sandbox, r rules.Rule, args []any, sorted func(i int, made bool) (sort, decided bool, err error)) (drop func() error, err error) {
	var made []string
	drop = func() error {
		var errs []error
		for _, t := range made {
			errs = append(errs, conn.DropStage(context.WithoutCancel(ctx), t))
		}
		return errors.Join(errs...)
	}
	for i, s := range r.Stages {
		query, decided := s.SQL, true
		if len(s.SortForPieces) > 0 {
			sort, ok, err := sorted(i, false)
			if err != nil {
				return drop, fmt.Errorf("stage %s (stages/%s.sql): %w", s.Table, s.Query, err)
			}
			if decided = ok; sort && ok {
				query = sortedStageQuery(s)
			}
		}
		made = append(made, s.Table)
		if err := conn.Stage(ctx, s.Table, query, args...); err != nil {
			return drop, fmt.Errorf("stage %s (stages/%s.sql): %w", s.Table, s.Query, err)
		}
		if err := checkSortColumns(ctx, conn, s); err != nil {
			return drop, fmt.Errorf("stage %s (stages/%s.sql): %w", s.Table, s.Query, err)
		}
		if decided {
			continue
		}
		sort, _, err := sorted(i, true)
		if err != nil {
			return drop, fmt.Errorf("stage %s (stages/%s.sql): %w", s.Table, s.Query, err)
		}
		if !sort {
			continue
		}
		// dropped first, so that the two are never in memory together
		if err := conn.DropStage(ctx, s.Table); err != nil {
			return drop, fmt.Errorf("stage %s (stages/%s.sql): %w", s.Table, s.Query, err)
		}
		if err := conn.Stage(ctx, s.Table, sortedStageQuery(s), args...); err != nil {
			return drop, fmt.Errorf("stage %s (stages/%s.sql), sorted: %w", s.Table, s.Query, err)
		}
	}
	return drop, nil
}

// sortedStageQuery is s's query sorted by its SortForPieces.
func sortedStageQuery(s rules.Stage) string {
	keys := make([]string, len(s.SortForPieces))
	for j, c := range s.SortForPieces {
		keys[j] = `"` + c + `"` // a plain name (rules.Stage): quoted, so that it may be a keyword
	}
	// a comment ending the query ends at its line
	return "SELECT * FROM (" + s.SQL + "\n) ORDER BY " + strings.Join(keys, ", ")
}

// rowsOnceStaged counts the rows of table for the pieces of r (see pieceRows) once its stage i is
// made: the rows of stage i or of an earlier one, or those of an input; known is false for a later
// stage, which is not made yet.
func rowsOnceStaged(ctx context.Context, schema store.Schema, conn *store.Sandbox, r rules.Rule, opt Options, i int, table string) (n int64, known bool, err error) {
	if slices.IndexFunc(r.Stages, func(s rules.Stage) bool { return s.Table == table }) > i {
		return 0, false, nil
	}
	n, err = pieceRows(ctx, schema, conn, r, table, opt)
	return n, err == nil, err
}

// checkSortColumns reports a column of s.SortForPieces that the staged table lacks, when it is
// made: a rule that usually runs in one piece would otherwise fail only on an input large enough
// for two.
func checkSortColumns(ctx context.Context, conn *store.Sandbox, s rules.Stage) error {
	if len(s.SortForPieces) == 0 {
		return nil
	}
	rows, err := conn.QueryContext(ctx, "SELECT * FROM "+s.Table+" LIMIT 0")
	if err != nil {
		return err
	}
	columns, err := rows.Columns()
	if err = errors.Join(err, rows.Close()); err != nil {
		return err
	}
	for _, c := range s.SortForPieces {
		if !slices.Contains(columns, c) {
			return fmt.Errorf("sort_for_pieces: the stage has no column %q (it has %s)", c, strings.Join(columns, ", "))
		}
	}
	return nil
}

// settleStages readies r's stages for its pieces: stages that make more than one piece are large
// beside the memory limit (the pieces are sized by it), and every piece reads them, so they are
// compressed and leave that memory to the pieces (a rule in one piece, a short window, reads them
// once and would only pay for the compression); then the transient stages are dropped. Dropped
// before the compression instead, election-lock-churn with every one of 48,932 locks reported at
// 10M events peaked higher (median 1,320 MiB of five runs, against 1,179 MiB of six; the runs of
// each overlap) and ran 1–6 s faster of about 50 s; its transient stages then held every
// lock-capable write (1.84M rows), where now they hold only its candidates.
func settleStages(ctx context.Context, conn *store.Sandbox, r rules.Rule, pieces int64) error {
	if pieces > 1 && len(r.Stages) > 0 {
		if err := conn.CompressStages(ctx); err != nil {
			return fmt.Errorf("compressing the stages: %w", err)
		}
	}
	for _, s := range r.Stages {
		if !s.Transient {
			continue
		}
		if err := conn.DropStage(ctx, s.Table); err != nil {
			return fmt.Errorf("dropping the transient stage %s: %w", s.Table, err)
		}
	}
	return nil
}

// pieceCount returns how many pieces r runs in: one per r.Pieces.Rows rows of its table (scaled
// by the memory limit) in its window, or more when r.Pieces.Also asks for more; rows counts a
// table's rows (pieceRows), known false when it cannot yet, and then so is the count.
func pieceCount(r rules.Rule, opt Options, rows func(table string) (n int64, known bool, err error)) (pieces int64, known bool, err error) {
	n, known, err := rows(r.Pieces.Table)
	if err != nil || !known {
		return 0, false, err
	}
	pieces = r.Pieces.Count(n, opt.memoryShare)
	if b := r.Pieces.Also; b != nil {
		n, known, err := rows(b.Table)
		if err != nil || !known {
			return 0, false, err
		}
		pieces = max(pieces, b.Count(n, opt.memoryShare))
	}
	return pieces, true, nil
}

// pieceRows counts the rows of table that r's pieces follow: a stage's whole, an input's in r's
// window from the start of its lookback.
func pieceRows(ctx context.Context, schema store.Schema, conn *store.Sandbox, r rules.Rule, table string, opt Options) (int64, error) {
	if slices.Contains(r.StageTables(), table) {
		var rows int64
		if err := conn.QueryRowContext(ctx, "SELECT count(*) FROM "+table).Scan(&rows); err != nil {
			return 0, fmt.Errorf("splitting the query into pieces: counting %s: %w", table, err)
		}
		return rows, nil
	}
	from := opt.Since
	if from != nil && r.Lookback != "" {
		start := from.Add(-r.LookbackDuration())
		from = &start
	}
	rows, err := schema.RowCountIn(ctx, conn, table, from, opt.Until)
	if err != nil {
		return 0, fmt.Errorf("splitting the query into pieces: %w", err)
	}
	return rows, nil
}

// pieceArgs adds to args the parameters that select piece (from 0) of pieces, for a rule that
// runs in pieces; the args of any other rule are returned as they are.
func pieceArgs(r rules.Rule, args []any, piece, pieces int64) []any {
	if r.Pieces == nil {
		return args
	}
	return append(slices.Clip(args), sql.Named(rules.PieceParam, piece), sql.Named(rules.PiecesParam, pieces))
}

// runPiece runs r's query once with args and reads its findings, keeping their evidence in spill.
// The query's rows are kept as the stage table rules.FindingsStage and read from it with
// the evidence as JSON text: the driver would decode a JSON column into Go maps (keys sorted,
// numbers as float64, invalid JSON as nil), which the report then encoded again.
func runPiece(ctx context.Context, conn *store.Sandbox, spill *evidenceSpill, r rules.Rule, args []any, tmpl *template.Template, params map[string]any) (_ []Finding, err error) {
	if err := conn.Stage(ctx, rules.FindingsStage, r.SQL, args...); err != nil {
		return nil, err
	}
	defer func() { err = errors.Join(err, conn.DropStage(context.WithoutCancel(ctx), rules.FindingsStage)) }()
	cols, err := columns(ctx, conn, "SELECT * FROM "+rules.FindingsStage+" LIMIT 0")
	if err != nil {
		return nil, err
	}
	if !slices.Equal(cols, rules.Columns) {
		return nil, fmt.Errorf("query returns columns %v; the contract is %v", cols, rules.Columns)
	}
	rows, err := conn.QueryContext(ctx, `SELECT * REPLACE (CASE WHEN typeof(evidence) IN ('JSON', 'VARCHAR') THEN CAST(evidence AS VARCHAR)
	                                                          ELSE CAST(to_json(evidence) AS VARCHAR) END AS evidence)
	                                     FROM `+rules.FindingsStage)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	// A row is read here, its summary written and its evidence checked and counted on every CPU
	// (text/template and a pass over the evidence: 6 of 56 CPU-s in election-lock-churn's 48,932
	// findings at 10M events), and its evidence kept in the rows' order.
	var out []Finding
	err = inorder.Run(func() (findingRow, bool, error) {
		if !rows.Next() {
			return findingRow{}, false, rows.Err()
		}
		row, err := scanFinding(rows, r.ID)
		return row, err == nil, err
	}, func(row findingRow) (findingRow, error) {
		var summary strings.Builder
		if err := tmpl.Execute(&summary, summaryData{row.f, row.facts, params}); err != nil {
			return row, fmt.Errorf("summary of %s: %w", object(row.f), err)
		}
		row.f.Summary = summary.String()
		var err error
		row.items, err = countEvidence(row.raw)
		return row, err
	}, func(row findingRow) error {
		ev, err := spill.add(row.raw, row.items)
		if err != nil {
			return err
		}
		row.f.evidence = ev
		out = append(out, row.f)
		return nil
	})
	return out, err
}

// findingRow is a row of a rule's findings as it is read: the finding without its summary, the
// values of its facts, and its evidence as JSON with the number of its items.
type findingRow struct {
	f     Finding
	facts map[string]any
	raw   json.RawMessage
	items int
}

// scanFinding reads the row rows is at, of rule ruleID's findings.
func scanFinding(rows *sql.Rows, ruleID string) (findingRow, error) {
	var f Finding
	var severity, cluster, namespace, name, subject, evidence sql.NullString
	var first, last sql.NullTime
	var count, facts any
	if err := rows.Scan(&f.Rule, &severity, &cluster, &namespace, &name, &subject, &first, &last, &count, &facts, &evidence); err != nil {
		return findingRow{}, err
	}
	if f.Rule != ruleID {
		return findingRow{}, fmt.Errorf("a row says rule %q", f.Rule)
	}
	var err error
	if f.Severity, err = rules.ParseSeverity(severity.String); err != nil {
		return findingRow{}, err
	}
	f.Cluster, f.Namespace, f.Name, f.Subject = cluster.String, namespace.String, name.String, subject.String
	f.FirstSeen, f.LastSeen = first.Time.UTC(), last.Time.UTC()
	switch c := count.(type) {
	case int64:
		f.Count = c
	case int32:
		f.Count = int64(c)
	case *big.Int:
		f.Count = c.Int64()
	default:
		return findingRow{}, fmt.Errorf("count is %T, want an integer", count)
	}
	factValues := map[string]any{}
	switch v := facts.(type) {
	case nil:
	case map[string]any:
		factValues = v
	default:
		return findingRow{}, fmt.Errorf("facts is %T, want a struct", facts)
	}
	raw := json.RawMessage("[]")
	if evidence.Valid {
		raw = json.RawMessage(evidence.String)
	}
	return findingRow{f: f, facts: factValues, raw: raw}, nil
}

// columns returns the names of the columns query returns.
func columns(ctx context.Context, conn *store.Sandbox, query string) ([]string, error) {
	rows, err := conn.QueryContext(ctx, query)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	return rows.Columns()
}
