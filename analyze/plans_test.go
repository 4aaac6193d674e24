package analyze

import (
	"context"
	"database/sql"
	"encoding/json"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/kubesift/kubesift/ingest"
	"github.com/kubesift/kubesift/queries"
	"github.com/kubesift/kubesift/rules"
	"github.com/kubesift/kubesift/store"
)

// planNode is one operator of DuckDB's EXPLAIN (FORMAT JSON).
type planNode struct {
	Name      string                     `json:"name"`
	Children  []planNode                 `json:"children"`
	ExtraInfo map[string]json.RawMessage `json:"extra_info"`
}

// info returns an extra_info entry of n as text (DuckDB writes a string or a list of strings).
func (n planNode) info(key string) string {
	raw, ok := n.ExtraInfo[key]
	if !ok {
		return ""
	}
	var list []string
	if json.Unmarshal(raw, &list) == nil {
		return strings.Join(list, " AND ")
	}
	var s string
	json.Unmarshal(raw, &s)
	return s
}

// filters returns n's scan filters, one entry each.
func (n planNode) filters() []string {
	var list []string
	if json.Unmarshal(n.ExtraInfo["Filters"], &list) == nil {
		return list
	}
	var one string
	if json.Unmarshal(n.ExtraInfo["Filters"], &one) == nil && one != "" {
		return []string{one}
	}
	return nil
}

// hintOnly returns the scan filters of n that are only a zone-map hint ("optional: verb IN
// ('create', 'delete')"): the scan then returns every row of the vectors the hint keeps, and a
// filter above it does the work. DuckDB writes all the filters of a column as one entry, the hint
// first ("optional: resource='endpoints' OR resource='endpointslices' AND (COALESCE(resource, ...)
// IN (...))"), so an entry with no other filter is a hint only.
func (n planNode) hintOnly() []string {
	var out []string
	for _, f := range n.filters() {
		if strings.HasPrefix(f, "optional: ") && !strings.Contains(f, " AND ") {
			out = append(out, f)
		}
	}
	return out
}

// table returns the table n scans ("audit_events"), "" for other operators.
func (n planNode) table() string {
	if n.Name != "SEQ_SCAN" && n.Name != "TABLE_SCAN" {
		return ""
	}
	t := n.info("Table")
	return t[strings.LastIndex(t, ".")+1:]
}

// eventTables returns the tables that record observations over time (those with a time column:
// audit events, conntrack dumps, snapshots, and the stages rules select of them) whose rows flow
// into n; not those under an ungrouped aggregate, which yields one row whatever it reads.
func (n planNode) eventTables() []string {
	var out []string
	if t, ok := ingest.Schema().Lookup(n.table()); ok && t.TimeColumn != "" {
		out = append(out, t.Name)
	}
	if strings.HasPrefix(n.table(), rules.StageTablePrefix) {
		out = append(out, n.table())
	}
	if n.Name == "UNGROUPED_AGGREGATE" {
		return nil
	}
	for _, c := range n.Children {
		out = append(out, c.eventTables()...)
	}
	return out
}

// singleRow reports whether n yields at most one row: an ungrouped aggregate (a scalar subquery's
// min or max), under projections only.
func (n planNode) singleRow() bool {
	switch {
	case n.Name == "UNGROUPED_AGGREGATE":
		return true
	case n.Name == "PROJECTION" && len(n.Children) == 1:
		return n.Children[0].singleRow()
	}
	return false
}

func (n planNode) walk(fn func(planNode)) {
	fn(n)
	for _, c := range n.Children {
		c.walk(fn)
	}
}

// windowedTables are the event tables every rule reading them must filter by the window in the
// scan: the big ones, which a short window over a long database would otherwise read whole.
var windowedTables = []string{"audit_events"}

// nestedLoops are the joins that compare every row of one side with every row of the other.
var nestedLoops = []string{"NESTED_LOOP_JOIN", "BLOCKWISE_NL_JOIN", "CROSS_PRODUCT"}

// clusterOnly matches a join's conditions when they are all on the cluster.
var clusterOnly = regexp.MustCompile(`^\(?cluster = cluster\)?( AND \(?cluster = cluster\)?)*$`)

// pairsCluster reports whether n is a join on the cluster alone that keeps every pair of rows it
// matches (not a semi, anti or mark join) and neither of whose sides is one row per cluster: it
// pairs every row of one side with every row of the other in a cluster, a cross product for a
// database of one cluster.
func (n planNode) pairsCluster() bool {
	if !strings.HasSuffix(n.Name, "_JOIN") || len(n.Children) != 2 {
		return false
	}
	switch n.info("Join Type") {
	case "SEMI", "ANTI", "MARK", "RIGHT_SEMI", "RIGHT_ANTI":
		return false
	}
	return clusterOnly.MatchString(n.info("Conditions")+n.info("Condition")) &&
		!slices.ContainsFunc(n.Children, planNode.onePerKey)
}

// onePerKey reports whether n yields at most one row for each value of a one-column key: one row,
// the distinct values of a correlated subquery's columns (DELIM_SCAN), or a grouping by one column,
// under projections and filters only.
func (n planNode) onePerKey() bool {
	switch {
	case n.singleRow(), n.Name == "DELIM_SCAN":
		return true
	case strings.HasSuffix(n.Name, "GROUP_BY"):
		groups := n.info("Groups")
		return groups != "" && !strings.Contains(groups, " AND ")
	case (n.Name == "PROJECTION" || n.Name == "FILTER") && len(n.Children) == 1:
		return n.Children[0].onePerKey()
	}
	return false
}

// checkJoins fails t on the joins of plan that compare every row of one side with every row of
// the other: a nested loop (or a cross product) over a scan of an event table, and a join that
// pairs the rows of a cluster (pairsCluster).
func checkJoins(t *testing.T, plan planNode) {
	t.Helper()
	plan.walk(func(n planNode) {
		// a nested loop against one row (a bound from a scalar subquery) reads each row once
		if slices.Contains(nestedLoops, n.Name) && !slices.ContainsFunc(n.Children, planNode.singleRow) {
			if tables := n.eventTables(); len(tables) > 0 {
				t.Errorf("%s %s over %v", n.Name, n.info("Condition")+n.info("Conditions"), tables)
			}
		}
		if n.pairsCluster() {
			t.Errorf("%s %s on the cluster alone: every row of one side meets every row of the other in a cluster", n.Name, n.info("Join Type"))
		}
	})
}

// TestRulePlans runs EXPLAIN on every built-in rule (its stages, its query, its coverage
// queries) over the scenarios in samples/, with a window set, and fails on plans that do not
// scale with the database: a nested-loop join (or a cross product) over a scan of an event table,
// a join that pairs every row of a cluster with every other (checkJoins), an event
// table the rule reads without the window (--since/--until) in the scan's own filters (see
// windowedTables), so that a short window over a long database still reads all of it, and a
// scan of one whose filter on a column is only a zone-map hint (an IN list or an OR of a bare
// column: the scan fetches every column of every row it does not skip whole, for a filter above
// it; the same list over coalesce(column, the empty string) filters in the scan, see
// queries/macros.sql).
func TestRulePlans(t *testing.T) {
	p := newPlanner(t)
	for _, r := range builtin(t) {
		t.Run(r.ID, func(t *testing.T) {
			plans := p.plans(t, r)
			windowed := map[string]bool{}
			read := map[string]bool{}
			walk := func(n planNode) {
				tbl := n.table()
				if !slices.Contains(windowedTables, tbl) {
					return
				}
				read[tbl] = true
				if hints := n.hintOnly(); len(hints) > 0 {
					t.Errorf("a scan of %s filters by a zone-map hint only: %q (write it over coalesce(column, ''))", tbl, hints)
				}
				filters := n.info("Filters")
				if strings.Contains(filters, p.since.Format(time.DateTime)) || strings.Contains(filters, p.until.Format(time.DateTime)) {
					windowed[tbl] = true
				}
			}
			for _, plan := range plans {
				checkJoins(t, plan)
				plan.walk(walk)
			}
			for tbl := range read {
				if !windowed[tbl] {
					t.Errorf("no scan of %s filters by the window in the scan", tbl)
				}
			}
		})
	}
}

// planner explains rules over the recordings in samples/, with a window set.
type planner struct {
	conn         *sql.Conn
	since, until time.Time
}

func newPlanner(t *testing.T) planner {
	// All the recordings, one cluster each: the database TestPiecesGiveTheSameFindings uses too.
	return plannerOver(t, scenarioDB(t, "samples", ingest.Options{ClusterPerDir: true}))
}

// plannerOver explains rules over db, with a window inside its audit events' time range.
func plannerOver(t *testing.T, db *store.DB) planner {
	ctx := context.Background()
	conn, err := db.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	// Plan ASOF joins as the sandbox does (store.Sandboxed: never as a nested loop, whatever the
	// estimate). Constants in the plan show in UTC.
	if _, err := conn.ExecContext(ctx, "SET asof_loop_join_threshold = 0; SET TimeZone = 'UTC'; "+queries.Macros()); err != nil {
		t.Fatal(err)
	}
	// A window inside the events' time range: DuckDB drops a filter that the column's
	// statistics say always holds (or never does).
	var first, last time.Time
	if err := conn.QueryRowContext(ctx, "SELECT min(stage_at), max(stage_at) FROM audit_events").Scan(&first, &last); err != nil {
		t.Fatal(err)
	}
	return planner{conn: conn, since: first.UTC().Truncate(time.Second).Add(time.Second), until: last.UTC().Truncate(time.Second)}
}

// TestRulePlansOverADataset runs EXPLAIN on every built-in rule over the views of a dataset
// (analyze --dataset) of samples/ loaded as one cluster, and fails on the joins TestRulePlans
// fails on. DuckDB plans a dataset's views from the Parquet files' statistics, not the database's:
// there it joined every delete of endpoints-phantom-recreate with every create of the cluster
// before keeping the cycles' pairs, and a day of 5.5M events spilled more than 12 GB
// (BENCHMARKS.md), where the database's plan of the same rule held.
func TestRulePlansOverADataset(t *testing.T) {
	ctx := context.Background()
	db := scenarioDB(t, "samples", ingest.Options{})
	dir := filepath.Join(t.TempDir(), "dataset")
	if _, _, err := db.ExportDataset(ctx, dir, ingest.Schema().DatasetTables(), nil, nil); err != nil {
		t.Fatal(err)
	}
	window := plannerOver(t, db)
	ds, err := store.OpenDataset(ctx, dir, ingest.Schema(), "", &window.since, &window.until, store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ds.Close() })
	p := plannerOver(t, ds)
	p.since, p.until = window.since, window.until
	for _, r := range builtin(t) {
		t.Run(r.ID, func(t *testing.T) {
			for _, plan := range p.plans(t, r) {
				checkJoins(t, plan)
			}
		})
	}
}

// plans returns the plans of what an analysis runs of r: its stages (see rules.Stage), each kept
// for the next until t ends, its query, and the coverage queries of its needs.
func (p planner) plans(t *testing.T, r rules.Rule) []planNode {
	ctx := context.Background()
	opt := Options{Since: &p.since, Until: &p.until}
	args := pieceArgs(r, Args(r, opt), 0, 1)
	var plans []planNode
	for _, s := range r.Stages {
		plans = append(plans, explain(t, p.conn, s.SQL, args))
		if _, err := p.conn.ExecContext(ctx, "CREATE OR REPLACE TEMP TABLE "+s.Table+" AS "+s.SQL+"\n", args...); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { p.conn.ExecContext(ctx, "DROP TABLE IF EXISTS temp."+s.Table) })
	}
	plans = append(plans, explain(t, p.conn, r.SQL, args))
	for _, n := range r.Needs {
		plans = append(plans, explain(t, p.conn, n.SQL, Args(r, opt)))
	}
	return plans
}

// TestAuditColumnsReadComeFirst checks audit_events' column order against what the built-in
// rules read of it. DuckDB stores a row group's columns in that order, packing the columns
// smaller than a block (256 KiB) together into shared blocks, and a scan reads whole blocks: with
// the columns the rules read ahead of those they never read, a scan of a few narrow ones reads a
// row group's first blocks only (BENCHMARKS.md: all rules on the recordings at 10M events in 0.92x
// the time). A rule that starts reading a column placed among the unread ones fails here: move
// the column up in ingest/audit/tables.go.
func TestAuditColumnsReadComeFirst(t *testing.T) {
	p := newPlanner(t)
	table, _ := ingest.Schema().Lookup("audit_events")
	var stored []string // a scan reads a generated column's stored ones
	for _, c := range table.Columns {
		if c.Generated == "" {
			stored = append(stored, c.Name)
		}
	}
	read := map[string]bool{}
	for _, r := range builtin(t) {
		for _, plan := range p.plans(t, r) {
			plan.walk(func(n planNode) {
				if n.table() == "audit_events" {
					for _, c := range n.columns(stored) {
						read[c] = true
					}
				}
			})
		}
	}
	if len(read) == 0 {
		t.Fatal("no rule reads audit_events")
	}
	for i, c := range stored {
		if !read[c] {
			if later := slices.IndexFunc(stored[i:], func(c string) bool { return read[c] }); later >= 0 {
				t.Errorf("audit_events.%s, which the rules read, comes after %s, which they do not", stored[i+later], c)
			}
			break
		}
	}
}

// columns returns the columns of stored that scan n reads: its projections and the columns its
// filters name (outside string constants).
func (n planNode) columns(stored []string) []string {
	var list []string
	if json.Unmarshal(n.ExtraInfo["Projections"], &list) != nil {
		list = []string{n.info("Projections")}
	}
	words := map[string]bool{}
	for _, text := range append(list, n.filters()...) {
		text = stringConstant.ReplaceAllString(text, "''")
		for _, w := range identifier.FindAllString(text, -1) {
			words[w] = true
		}
	}
	var out []string
	for _, c := range stored {
		if words[c] {
			out = append(out, c)
		}
	}
	return out
}

var (
	stringConstant = regexp.MustCompile(`'(?:[^']|'')*'`)
	identifier     = regexp.MustCompile(`[A-Za-z_][A-Za-z0-9_]*`)
)

// explain returns the physical plan of query run with args.
func explain(t *testing.T, conn *sql.Conn, query string, args []any) planNode {
	t.Helper()
	var key, value string
	if err := conn.QueryRowContext(context.Background(), "EXPLAIN (FORMAT JSON) "+query, args...).Scan(&key, &value); err != nil {
		t.Fatal(err)
	}
	var roots []planNode
	if err := json.Unmarshal([]byte(value), &roots); err != nil {
		t.Fatalf("plan: %v", err)
	}
	if len(roots) != 1 {
		t.Fatalf("plan has %d roots", len(roots))
	}
	return roots[0]
}
