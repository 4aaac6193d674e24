package cli

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/kubesift/kubesift/store"
	"github.com/kubesift/kubesift/tabular"
)

func runExport(ctx context.Context, e *env, args []string) error {
	fs, c := newFlags(e, "export", "-o csv|xlsx|parquet --out DIR|FILE",
		"Export the normalized tables for a notebook or a spreadsheet: -o csv and -o parquet write\n"+
			"DIR/<table>.csv|.parquet (DIR is created if missing), -o xlsx one workbook FILE with a sheet\n"+
			"per table. Without --table, every table that has rows. --since/--until keep the rows whose\n"+
			"time is in the window: audit_events.stage_at, ingest_files.finished_at, runs.started_at and\n"+
			"captured_at elsewhere (rows without a time are left out); ingest_errors has no time and is\n"+
			"exported whole.\n\n"+
			"Examples:\n"+
			"  kubesift export --db pm.duckdb -o parquet --out pm/\n"+
			"  kubesift export --db pm.duckdb --table audit_events --since 2026-11-21T05:50:00Z -o xlsx --out audit.xlsx")
	c.addDB(fs, e, "database file to export")
	tables := fs.StringArray("table", nil, "export this table (repeatable; see 'kubesift schema'); default: every table with rows")
	sinceFlag := fs.String("since", "", "keep rows from this time: RFC3339 or a duration before now (2h)")
	untilFlag := fs.String("until", "", "keep rows up to this time: RFC3339 or a duration before now")
	out := addOutputFlag(fs, "csv", "csv", "xlsx", "parquet")
	if err := parse(fs, args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return usagef("unexpected argument %q", fs.Arg(0))
	}
	if !slices.Contains(out.allowed, out.format) {
		return usagef("unknown output format %q (want one of %s)", out.format, strings.Join(out.allowed, ", "))
	}
	if out.out == "" {
		return usagef("--out is required: a directory for -o %s, a file for -o xlsx", out.format)
	}
	now := time.Now()
	since, err := parseTime("since", *sinceFlag, now)
	if err != nil {
		return err
	}
	until, err := parseTime("until", *untilFlag, now)
	if err != nil {
		return err
	}
	var chosen []store.Table
	for _, name := range *tables {
		t, ok := store.Lookup(name)
		if !ok {
			return usagef("unknown table %q (see kubesift schema)", name)
		}
		chosen = append(chosen, t)
	}
	db, err := c.openDB(ctx, c.db, true)
	if err != nil {
		return err
	}
	defer db.Close()
	if len(chosen) == 0 {
		for _, t := range store.Tables {
			var has bool
			if err := db.QueryRowContext(ctx, "SELECT EXISTS (SELECT 1 FROM "+t.Name+")").Scan(&has); err != nil {
				return err
			}
			if has {
				chosen = append(chosen, t)
			}
		}
		if len(chosen) == 0 {
			return fmt.Errorf("%s holds no rows to export", c.db)
		}
	}
	queries := make([]string, len(chosen))
	var whole []string
	for i, t := range chosen {
		queries[i] = "SELECT * FROM " + t.Name + windowWhere(store.TimeColumn(t.Name), since, until)
		if (since != nil || until != nil) && store.TimeColumn(t.Name) == "" {
			whole = append(whole, t.Name)
		}
	}
	log := e.logWriter(c.quiet)
	if log != nil && len(whole) > 0 {
		fmt.Fprintf(log, "no time column, exported whole: %s\n", strings.Join(whole, ", "))
	}

	if out.format == "xlsx" {
		if err := out.validate(); err != nil {
			return err
		}
		return writeFile(out.out, "xlsx", out.force, func(w io.Writer) error {
			wb, err := tabular.NewWorkbook()
			if err != nil {
				return err
			}
			defer wb.Close()
			for i, t := range chosen {
				n, err := exportSheet(ctx, db, wb, t.Name, queries[i])
				if err != nil {
					return fmt.Errorf("%s: %w", t.Name, err)
				}
				if log != nil {
					fmt.Fprintf(log, "%s: %s\n", t.Name, plural(n, "row"))
				}
			}
			return wb.Write(w)
		})
	}

	if err := os.MkdirAll(out.out, 0o755); err != nil {
		return err
	}
	paths := make([]string, len(chosen))
	for i, t := range chosen {
		paths[i] = filepath.Join(out.out, t.Name+"."+out.format)
		if _, err := os.Lstat(paths[i]); err == nil && !out.force {
			return existsError(paths[i]) // before writing any, so an export is not left half done
		}
	}
	for i, t := range chosen {
		err := writeFile(paths[i], out.format, out.force, func(w io.Writer) error {
			if out.format == "parquet" {
				return tabular.ViaFile(w, func(path string) error { return tabular.CopyParquet(ctx, db, queries[i], path) })
			}
			rows, err := db.QueryContext(ctx, queries[i])
			if err != nil {
				return err
			}
			defer rows.Close()
			tt, err := streamRows(rows)
			if err != nil {
				return err
			}
			return tabular.CSV(w, tt)
		})
		if err != nil {
			return fmt.Errorf("%s: %w", t.Name, err)
		}
		if log != nil {
			fmt.Fprintf(log, "%s: %s\n", t.Name, paths[i])
		}
	}
	return nil
}

// windowWhere filters on col to [since, until]; the times are kubesift's own, formatted, not user text.
func windowWhere(col string, since, until *time.Time) string {
	if col == "" || (since == nil && until == nil) {
		return ""
	}
	var conds []string
	if since != nil {
		conds = append(conds, fmt.Sprintf("%s >= '%s'::TIMESTAMPTZ", tabular.QuoteIdent(col), since.UTC().Format(time.RFC3339Nano)))
	}
	if until != nil {
		conds = append(conds, fmt.Sprintf("%s <= '%s'::TIMESTAMPTZ", tabular.QuoteIdent(col), until.UTC().Format(time.RFC3339Nano)))
	}
	return " WHERE " + strings.Join(conds, " AND ")
}

// exportSheet streams the rows of query onto a sheet named after the table and returns their number.
func exportSheet(ctx context.Context, db *store.DB, wb *tabular.Workbook, name, query string) (int, error) {
	rows, err := db.QueryContext(ctx, query)
	if err != nil {
		return 0, err
	}
	defer rows.Close()
	t, err := streamRows(rows)
	if err != nil {
		return 0, err
	}
	t.Name = name
	n := 0
	scan := t.Scan
	t.Scan = func(yield func([]any) error) error {
		return scan(func(r []any) error { n++; return yield(r) })
	}
	_, err = wb.AddSheet(tabular.Sheet{Name: name, Table: t})
	return n, err
}
