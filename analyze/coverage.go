package analyze

import (
	"context"
	"database/sql"
	"fmt"
	"slices"
	"strings"

	"github.com/kubesift/kubesift/rules"
	"github.com/kubesift/kubesift/store"
)

// Coverage is what a rule could see of one cluster: rules.Evaluated, rules.Partial (with the
// reasons), rules.Blind (with the reasons) or rules.NotEvaluated (its inputs are empty).
type Coverage struct {
	Cluster string   `json:"cluster"`
	Status  string   `json:"status"`
	Reasons []string `json:"reasons,omitempty"`
}

// String words a coverage: "blind: REASON; REASON", or "evaluated".
func (c Coverage) String() string {
	if len(c.Reasons) == 0 {
		return c.Status
	}
	return c.Status + ": " + strings.Join(c.Reasons, "; ")
}

// Gap is one need of a rule that the data of one cluster lacks.
type Gap struct {
	Rule     string
	Evidence string // the need's evidence
	Cluster  string
	Status   string // rules.Blind or rules.Partial
	Reason   string
}

// evidenceClusters returns the clusters of the evidence loaded (every evidence table's, "" for
// the unknown one), sorted, and per evidence table the clusters its rows in the window of opt
// belong to; one cluster "" when there is no evidence. A table without a cluster column counts in
// every cluster.
func evidenceClusters(ctx context.Context, schema store.Schema, conn *store.Sandbox, inputs []Input, opt Options) ([]string, map[string][]string, error) {
	perTable := map[string][]string{}
	var all []string
	var unclustered []string
	for _, in := range inputs {
		t, _ := schema.Lookup(in.Table)
		if t.Evidence == "" {
			continue
		}
		if !t.HasColumn(store.ClusterColumn.Name) {
			unclustered = append(unclustered, t.Name)
			continue
		}
		cs, err := schema.Clusters(ctx, conn, t.Name, nil, nil)
		if err != nil {
			return nil, nil, err
		}
		all = append(all, cs...)
		if opt.Since != nil || opt.Until != nil {
			if cs, err = schema.Clusters(ctx, conn, t.Name, opt.Since, opt.Until); err != nil {
				return nil, nil, err
			}
		}
		perTable[t.Name] = cs
	}
	slices.Sort(all)
	all = slices.Compact(all)
	if len(all) == 0 {
		all = []string{""}
	}
	for _, t := range unclustered {
		perTable[t] = all
	}
	return all, perTable, nil
}

// notEvaluatedIn returns, per cluster of clusters where rule r did not run on data, why: the
// reason of out when it was not evaluated at all, else "no EVIDENCE data" (in the window, see
// noData) for the clusters where none of r's input tables has rows in the window of opt
// (perTable, see evidenceClusters).
func notEvaluatedIn(schema store.Schema, clusters []string, perTable map[string][]string, r rules.Rule, out Outcome, opt Options, held []string) map[string]string {
	reasons := map[string]string{}
	for _, c := range clusters {
		switch {
		case !out.Evaluated:
			reasons[c] = out.Reason
		case !slices.ContainsFunc(r.Inputs, func(t string) bool { return slices.Contains(perTable[t], c) }):
			reasons[c] = noData(schema, r.Inputs, opt, held)
		}
	}
	return reasons
}

// gaps runs the coverage queries of r's needs with r's params (opt's overrides) and the window of opt.
func gaps(ctx context.Context, conn *store.Sandbox, r rules.Rule, opt Options) ([]Gap, error) {
	var out []Gap
	args := Args(r, opt)
	for _, n := range r.Needs {
		rows, err := conn.QueryContext(ctx, n.SQL, args...)
		if err != nil {
			return nil, fmt.Errorf("coverage query %s: %w", n.Evidence, err)
		}
		cols, err := rows.Columns()
		if err == nil && !slices.Equal(cols, rules.CoverageColumns) {
			err = fmt.Errorf("returns columns %v; the contract is %v", cols, rules.CoverageColumns)
		}
		for err == nil && rows.Next() {
			g := Gap{Rule: r.ID, Evidence: n.Evidence}
			var cluster sql.NullString
			if err = rows.Scan(&cluster, &g.Status, &g.Reason); err == nil && g.Status != rules.Blind && g.Status != rules.Partial {
				err = fmt.Errorf("coverage %q: want %s or %s", g.Status, rules.Blind, rules.Partial)
			}
			g.Cluster = cluster.String
			out = append(out, g)
		}
		if err == nil {
			err = rows.Err()
		}
		rows.Close()
		if err != nil {
			return nil, fmt.Errorf("coverage query %s: %w", n.Evidence, err)
		}
	}
	return out, nil
}

// coverageOf combines a rule's gaps into its coverage per cluster: blind when a need is
// missing altogether, partial when one is missing in part, else evaluated. In a cluster where
// the rule's inputs are empty (notEvaluated: the reason per cluster) it is blind when its needs
// say why, else not evaluated (for that reason).
func coverageOf(clusters []string, notEvaluated map[string]string, gs []Gap) []Coverage {
	out := make([]Coverage, 0, len(clusters))
	for _, c := range clusters {
		cov := Coverage{Cluster: c, Status: rules.Evaluated}
		for _, g := range gs {
			if g.Cluster != c {
				continue
			}
			cov.Reasons = append(cov.Reasons, g.Reason)
			if g.Status == rules.Blind || cov.Status != rules.Blind {
				cov.Status = g.Status
			}
		}
		reason, without := notEvaluated[c]
		switch {
		case !without:
		case len(cov.Reasons) > 0: // the gaps say why the inputs are empty
			cov.Status = rules.Blind
		default:
			cov.Status, cov.Reasons = rules.NotEvaluated, []string{reason}
		}
		out = append(out, cov)
	}
	return out
}

// CoverageGaps lists every rule's coverage in each cluster where it is not evaluated fully, as
// "STATUS: RULE [CLUSTER] (REASONS)" lines: the table footer, the run summary and alerts. A rule
// not evaluated anywhere for lack of data is listed once, whatever the clusters; one evaluated in
// some clusters only is listed once with the others: "not evaluated: RULE [A, B] (REASON)".
func (rep *Report) CoverageGaps(statuses ...string) []string {
	var out []string
	for _, o := range rep.Outcomes {
		var without []string // the clusters of an evaluated rule where it is not evaluated
		var why string
		for _, c := range o.Coverage {
			if c.Status == rules.Evaluated || (len(statuses) > 0 && !slices.Contains(statuses, c.Status)) {
				continue
			}
			if c.Status == rules.NotEvaluated && o.Evaluated {
				name := c.Cluster
				if name == "" {
					name = "unnamed cluster"
				}
				without, why = append(without, name), strings.Join(c.Reasons, "; ")
				continue
			}
			line := c.Status + ": " + o.Rule.ID
			if c.Status != rules.NotEvaluated {
				line += clusterSuffix(c.Cluster)
			}
			line += " (" + strings.Join(c.Reasons, "; ") + ")"
			if !slices.Contains(out, line) {
				out = append(out, line)
			}
		}
		if len(without) > 0 {
			out = append(out, rules.NotEvaluated+": "+o.Rule.ID+" ["+strings.Join(without, ", ")+"] ("+why+")")
		}
	}
	return out
}

// clusterSuffix is " [CLUSTER]" for a named cluster, "" for the unknown one.
func clusterSuffix(c string) string {
	if c == "" {
		return ""
	}
	return " [" + c + "]"
}

// coverageRank orders the coverage statuses, best first.
var coverageRank = []string{rules.Evaluated, rules.Partial, rules.Blind, rules.NotEvaluated}

// CoverageSummary sums up o's coverage over the clusters: the worst status, and the reasons of
// every cluster not evaluated fully (prefixed with the cluster when there are several).
func (o Outcome) CoverageSummary() (status, reason string) {
	if o.Err != nil {
		return "failed", o.Err.Error()
	}
	status = rules.Evaluated
	var reasons []string
	for _, c := range o.Coverage {
		if slices.Index(coverageRank, c.Status) > slices.Index(coverageRank, status) {
			status = c.Status
		}
		if len(c.Reasons) == 0 {
			continue
		}
		r := strings.Join(c.Reasons, "; ")
		if len(o.Coverage) > 1 {
			r = clusterName(c.Cluster) + ": " + r
		}
		if !slices.Contains(reasons, r) {
			reasons = append(reasons, r)
		}
	}
	return status, strings.Join(reasons, "; ")
}

// clusterName names a cluster in text: its name, or "unnamed cluster".
func clusterName(c string) string {
	if c == "" {
		return "unnamed cluster"
	}
	return "cluster " + c
}
