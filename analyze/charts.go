package analyze

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"

	"github.com/kubesift/kubesift/rules"
	"github.com/kubesift/kubesift/store"
)

// Charts runs the chart queries of a report's findings one finding at a time (Rows), for a
// report written a finding at a time; Close it when done.
type Charts struct {
	ctx  context.Context
	db   *store.DB
	rep  *Report
	byID map[string]rules.Rule
	conn *store.Sandbox // opened by the first chart query
}

// NewCharts prepares the chart queries of rep's findings over db.
func NewCharts(ctx context.Context, db *store.DB, rep *Report) *Charts {
	byID := map[string]rules.Rule{}
	for _, o := range rep.Outcomes {
		byID[o.Rule.ID] = o.Rule
	}
	return &Charts{ctx: ctx, db: db, rep: rep, byID: byID}
}

// Rows returns the rows of each chart of f's rule as JSON lists of objects: nil for a chart
// drawn from the evidence. Charts that name the same query share one run of it.
func (c *Charts) Rows(f Finding) ([]json.RawMessage, error) {
	charts := c.byID[f.Rule].Charts
	out := make([]json.RawMessage, len(charts))
	ran := map[string]json.RawMessage{} // by query name
	for j, chart := range charts {
		if chart.SQL == "" {
			continue
		}
		if rows, ok := ran[chart.Query]; ok {
			out[j] = rows
			continue
		}
		if c.conn == nil {
			var err error
			if c.conn, err = openSandbox(c.ctx, c.db); err != nil {
				return nil, err
			}
		}
		rows, err := chartQuery(c.ctx, c.conn, chart.SQL, f, c.rep)
		if err != nil {
			return nil, fmt.Errorf("rule %s chart query charts/%s.sql: %w", f.Rule, chart.Query, err)
		}
		out[j], ran[chart.Query] = rows, rows
	}
	return out, nil
}

// Close closes the connection of the chart queries.
func (c *Charts) Close() error {
	if c.conn == nil {
		return nil
	}
	return c.conn.Close()
}

func chartQuery(ctx context.Context, conn *store.Sandbox, query string, f Finding, rep *Report) (json.RawMessage, error) {
	args := append(Args(rules.Rule{}, Options{Since: rep.Since, Until: rep.Until}), // the window
		sql.Named("cluster", f.Cluster), sql.Named("namespace", f.Namespace), sql.Named("name", f.Name), sql.Named("subject", f.Subject),
		sql.Named("first_seen", f.FirstSeen), sql.Named("last_seen", f.LastSeen))
	return queryJSON(ctx, conn, query, args...)
}
