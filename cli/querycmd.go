package cli

import (
	"context"
	"fmt"
	"io"
	"strings"

	"github.com/apache/arrow-go/v18/arrow/array"

	"github.com/kubesift/kubesift/tabular"
)

func runQuery(ctx context.Context, e *env, args []string) error {
	fs, c := newFlags(e, "query", "SQL",
		"Run SQL over the loaded tables (see 'kubesift schema'). The SQL runs sandboxed: it cannot read\n"+
			"or write files, attach databases or reach the network. Use - to read the SQL from stdin.\n\n"+
			"Examples:\n"+
			"  kubesift query \"SELECT verb, count(*) FROM audit_events GROUP BY ALL ORDER BY 2 DESC\"\n"+
			"  kubesift query -o csv \"SELECT * FROM ingest_errors\" > rejected.csv\n"+
			"  kubesift query -o parquet --out watches.parquet \"SELECT * FROM audit_events WHERE verb = 'watch'\"\n\n"+
			"-o parquet keeps DuckDB's column types (JSON too) and streams the rows into the file with\n"+
			"COPY ... (FORMAT parquet) inside the sandbox, into its private directory, so that a large result\n"+
			"is never held in memory; where the sandbox has no directory of its own (no --db, or a database\n"+
			"on a read-only volume) the whole result goes, as Arrow, to a separate in-memory DuckDB that\n"+
			"writes it, and JSON columns become VARCHAR.")
	c.addDB(fs, e, "database file to query")
	out := addOutputFlag(fs, "table", tableFormats...)
	if err := parse(fs, args); err != nil {
		return err
	}
	if err := out.validate(); err != nil {
		return err
	}
	if err := out.checkTerminal(e.stdout); err != nil {
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
	sandbox, err := db.Sandboxed(ctx)
	if err != nil {
		return err
	}
	defer sandbox.Close()
	if out.format == "parquet" {
		err := out.emit(e.stdout, func(w io.Writer) error {
			if ok, err := sandbox.CopyParquet(ctx, query, w); ok {
				return err
			}
			// A sandbox without a directory of its own cannot COPY to a file: its rows go, as Arrow, to a
			// scratch DuckDB that can.
			return sandbox.QueryArrow(ctx, query, func(r array.RecordReader) error { return tabular.ParquetFromArrow(ctx, w, r) })
		})
		if err != nil {
			return fmt.Errorf("query failed: %w", err)
		}
		return nil
	}
	rows, err := sandbox.QueryContext(ctx, query)
	if err != nil {
		return fmt.Errorf("query failed: %w", err)
	}
	defer rows.Close()
	rs, err := readRows(rows)
	if err != nil {
		return fmt.Errorf("query failed: %w", err)
	}
	return out.emit(e.stdout, func(w io.Writer) error { return renderTable(w, rs.table("query"), out.format) })
}
