package analyze

import (
	"context"
	"database/sql"
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/kubesift/kubesift/ingest"
	"github.com/kubesift/kubesift/queries"
	"github.com/kubesift/kubesift/rules"
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

// TestRulePlans runs EXPLAIN on every built-in rule (its stages, then its query) over the
// scenarios in samples/, with a window set, and fails on plans that do not scale with the
// database: a nested-loop join (or a cross product) over a scan of an event table, an event
// table the rule reads without the window (--since/--until) in the scan's own filters (see
// windowedTables), so that a short window over a long database still reads all of it, and a
// scan of one whose filter on a column is only a zone-map hint (an IN list or an OR of a bare
// column: the scan fetches every column of every row it does not skip whole, for a filter above
// it; the same list over coalesce(column, the empty string) filters in the scan, see
// queries/macros.sql).
func TestRulePlans(t *testing.T) {
	ctx := context.Background()
	// All the recordings, one cluster each: the database TestPiecesGiveTheSameFindings uses too.
	db := scenarioDB(t, "samples", ingest.Options{ClusterPerDir: true})
	conn, err := db.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
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
	since := first.UTC().Truncate(time.Second).Add(time.Second)
	until := last.UTC().Truncate(time.Second)
	for _, r := range builtin(t) {
		t.Run(r.ID, func(t *testing.T) {
			// the plans of the rule's stages (see rules.Stage), each kept for the next, then of its query
			args := pieceArgs(r, Args(r, Options{Since: &since, Until: &until}), 0, 1)
			var plans []planNode
			for _, s := range r.Stages {
				plans = append(plans, explain(t, conn, s.SQL, args))
				if _, err := conn.ExecContext(ctx, "CREATE OR REPLACE TEMP TABLE "+s.Table+" AS "+s.SQL+"\n", args...); err != nil {
					t.Fatal(err)
				}
				defer conn.ExecContext(ctx, "DROP TABLE temp."+s.Table)
			}
			plans = append(plans, explain(t, conn, r.SQL, args))
			windowed := map[string]bool{}
			read := map[string]bool{}
			walk := func(n planNode) {
				// a nested loop against one row (a bound from a scalar subquery) reads each row once
				if slices.Contains(nestedLoops, n.Name) && !slices.ContainsFunc(n.Children, planNode.singleRow) {
					if tables := n.eventTables(); len(tables) > 0 {
						t.Errorf("%s %s over %v", n.Name, n.info("Condition")+n.info("Conditions"), tables)
					}
				}
				tbl := n.table()
				if !slices.Contains(windowedTables, tbl) {
					return
				}
				read[tbl] = true
				if hints := n.hintOnly(); len(hints) > 0 {
					t.Errorf("a scan of %s filters by a zone-map hint only: %q (write it over coalesce(column, ''))", tbl, hints)
				}
				filters := n.info("Filters")
				if strings.Contains(filters, since.Format(time.DateTime)) || strings.Contains(filters, until.Format(time.DateTime)) {
					windowed[tbl] = true
				}
			}
			for _, plan := range plans {
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
