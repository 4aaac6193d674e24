package analyze

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"

	"github.com/kubesift/kubesift/rules"
	"github.com/kubesift/kubesift/store"
)

// ChartRows runs the chart queries (rules.Chart.Query) of the report's findings, sandboxed:
// rows[i][j] holds the rows of chart j of finding i as a JSON list of objects, nil for a chart
// drawn from the evidence.
func ChartRows(ctx context.Context, db *store.DB, rep *Report) ([][]json.RawMessage, error) {
	byID := map[string]rules.Rule{}
	for _, o := range rep.Outcomes {
		byID[o.Rule.ID] = o.Rule
	}
	var conn *store.Sandbox
	defer func() {
		if conn != nil {
			conn.Close()
		}
	}()
	out := make([][]json.RawMessage, len(rep.Findings))
	for i, f := range rep.Findings {
		charts := byID[f.Rule].Charts
		out[i] = make([]json.RawMessage, len(charts))
		for j, c := range charts {
			if c.SQL == "" {
				continue
			}
			if conn == nil {
				var err error
				if conn, err = openSandbox(ctx, db); err != nil {
					return nil, err
				}
			}
			rows, err := chartQuery(ctx, conn, c.SQL, f, rep)
			if err != nil {
				return nil, fmt.Errorf("rule %s chart query charts/%s.sql: %w", f.Rule, c.Query, err)
			}
			out[i][j] = rows
		}
	}
	return out, nil
}

func chartQuery(ctx context.Context, conn *store.Sandbox, query string, f Finding, rep *Report) (json.RawMessage, error) {
	args := append(Args(rules.Rule{}, Options{Since: rep.Since, Until: rep.Until}), // the window
		sql.Named("cluster", f.Cluster), sql.Named("namespace", f.Namespace), sql.Named("name", f.Name), sql.Named("subject", f.Subject),
		sql.Named("first_seen", f.FirstSeen), sql.Named("last_seen", f.LastSeen))
	return queryJSON(ctx, conn, query, args...)
}
