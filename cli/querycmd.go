package cli

import (
	"context"
	"fmt"
	"strings"
)

func runQuery(ctx context.Context, e *env, args []string) error {
	fs, c := newFlags(e, "query", "SQL",
		"Run SQL over the loaded tables (see 'kubesift schema'). The SQL runs sandboxed: it cannot read\n"+
			"or write files, attach databases or reach the network. Use - to read the SQL from stdin.\n\n"+
			"Examples:\n"+
			"  kubesift query \"SELECT verb, count(*) FROM audit_events GROUP BY ALL ORDER BY 2 DESC\"\n"+
			"  kubesift query -o csv \"SELECT * FROM ingest_errors\" > rejected.csv")
	c.addDB(fs, e, "database file to query")
	out := addOutputFlag(fs, "table", "table", "json", "csv")
	if err := parse(fs, args); err != nil {
		return err
	}
	if err := out.validate(); err != nil {
		return err
	}
	if fs.NArg() != 1 {
		return usagef("want exactly one SQL argument, got %d (quote the statement)", fs.NArg())
	}
	query := fs.Arg(0)
	if query == "-" {
		b, err := readAllLimited(e.stdin, 16<<20)
		if err != nil {
			return fmt.Errorf("reading SQL from stdin: %w", err)
		}
		query = string(b)
	}
	if strings.TrimSpace(query) == "" {
		return usagef("empty SQL")
	}
	db, err := c.openDB(ctx, c.db, true)
	if err != nil {
		return err
	}
	defer db.Close()
	conn, err := db.Sandboxed(ctx)
	if err != nil {
		return err
	}
	defer conn.Close()
	rows, err := conn.QueryContext(ctx, query)
	if err != nil {
		return fmt.Errorf("query failed: %w", err)
	}
	defer rows.Close()
	rs, err := readRows(rows)
	if err != nil {
		return fmt.Errorf("query failed: %w", err)
	}
	return out.write(e.stdout, rs)
}
