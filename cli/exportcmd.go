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

	"github.com/dustin/go-humanize"
	"github.com/spf13/pflag"

	"github.com/kubesift/kubesift/ingest"
	"github.com/kubesift/kubesift/store"
	"github.com/kubesift/kubesift/tabular"
)

func runExport(ctx context.Context, e *env, args []string) error {
	fs, c := newFlags(e, "export", "-o csv|xlsx|parquet --out DIR|FILE | --dataset DIR",
		"Export the normalized tables for a notebook or a spreadsheet: -o csv and -o parquet write\n"+
			"DIR/<table>.csv|.parquet (DIR is created if missing), -o xlsx one workbook FILE with a sheet\n"+
			"per table. Without --table, every table that has rows. --since/--until keep the rows whose\n"+
			"time is in the window: audit_events.stage_at, ingest_files.finished_at, runs.started_at and\n"+
			"captured_at elsewhere (rows without a time are left out); ingest_errors has no time and is\n"+
			"exported whole.\n\n"+
			"--dataset DIR adds the evidence tables to a dataset for analyze --dataset and distributed SQL\n"+
			"engines: Hive-partitioned Parquet, DIR/<table>/cluster=<cluster>/date=<YYYY-MM-DD>/part-<i>.parquet\n"+
			"(zstd; the cluster is the rows' own, the date the UTC day of their time; audit_events in\n"+
			"files by verb, part-<verb>-<i>.parquet). It writes whole days (--since/--until pick the\n"+
			"days) and each day it writes replaces that day's files atomically (by two renames on NFS,\n"+
			"CephFS and SMB), so a CronJob can export the same day again. See docs/dataset.md.\n\n"+
			"Examples:\n"+
			"  kubesift export --db pm.duckdb -o parquet --out pm/\n"+
			"  kubesift export --db pm.duckdb --table audit_events --since 2026-11-21T05:50:00Z -o xlsx --out audit.xlsx\n"+
			"  kubesift export --db /var/lib/kubesift/kubesift.duckdb --since 24h --dataset /data/kubesift")
	c.addDB(fs, e, "database file to export")
	tables := fs.StringArray("table", nil, "export this table (repeatable; see 'kubesift schema'); default: every table with rows")
	sinceFlag := fs.String("since", "", "keep rows from this time: RFC3339 or a duration before now (2h)")
	untilFlag := fs.String("until", "", "keep rows up to this time: RFC3339 or a duration before now")
	out := addOutputFlag(fs, "csv", "csv", "xlsx", "parquet")
	dataset := fs.String("dataset", "", "add the evidence tables to this dataset directory (Hive-partitioned Parquet by cluster and day) instead of -o/--out")
	if err := parse(fs, args); err != nil {
		return err
	}
	if *dataset != "" {
		return exportDataset(ctx, e, fs, c, *dataset, *tables, *sinceFlag, *untilFlag)
	}
	chosen, since, until, err := checkExport(fs, out, *tables, *sinceFlag, *untilFlag)
	if err != nil {
		return err
	}
	db, err := c.openDB(ctx, c.db, true)
	if err != nil {
		return err
	}
	defer db.Close()
	if len(chosen) == 0 {
		if chosen, err = tablesWithRows(ctx, db); err != nil {
			return err
		}
	}
	queries := make([]string, len(chosen))
	var whole []string
	for i, t := range chosen {
		queries[i] = store.SelectRows(t, since, until)
		if (since != nil || until != nil) && t.TimeColumn == "" {
			whole = append(whole, t.Name)
		}
	}
	log := e.logWriter(c.quiet)
	if log != nil && len(whole) > 0 {
		fmt.Fprintf(log, "no time column, exported whole: %s\n", strings.Join(whole, ", "))
	}
	if out.format == "xlsx" {
		return exportWorkbook(ctx, log, db, out, chosen, queries)
	}
	return exportFiles(ctx, log, db, out, chosen, queries)
}

// checkExport validates export's command line and returns the tables named with --table
// (none: every table with rows) and the window.
func checkExport(fs *pflag.FlagSet, out *outputFlag, tables []string, sinceFlag, untilFlag string) (chosen []store.Table, since, until *time.Time, err error) {
	if fs.NArg() > 0 {
		return nil, nil, nil, usagef("unexpected argument %q", fs.Arg(0))
	}
	if !slices.Contains(out.allowed, out.format) {
		return nil, nil, nil, usagef("unknown output format %q (want one of %s)", out.format, strings.Join(out.allowed, ", "))
	}
	if out.out == "" {
		return nil, nil, nil, usagef("--out is required: a directory for -o %s, a file for -o xlsx", out.format)
	}
	now := time.Now()
	if since, until, err = parseWindow(sinceFlag, untilFlag, now); err != nil {
		return nil, nil, nil, err
	}
	for _, name := range tables {
		t, ok := ingest.Schema().Lookup(name)
		if !ok {
			return nil, nil, nil, usagef("unknown table %q (see kubesift schema)", name)
		}
		chosen = append(chosen, t)
	}
	if out.format == "xlsx" {
		if err := out.validate(); err != nil {
			return nil, nil, nil, err
		}
	}
	return chosen, since, until, nil
}

// tablesWithRows returns the tables of db that hold rows; none is an error.
func tablesWithRows(ctx context.Context, db *store.DB) ([]store.Table, error) {
	var chosen []store.Table
	for _, t := range db.Schema {
		has, err := db.Schema.HasRows(ctx, db.DB, t.Name, nil, nil)
		if err != nil {
			return nil, err
		}
		if has {
			chosen = append(chosen, t)
		}
	}
	if len(chosen) == 0 {
		return nil, fmt.Errorf("%s holds no rows to export", db.Path)
	}
	return chosen, nil
}

// exportWorkbook writes the rows of queries, one sheet per table, into the workbook out.out.
func exportWorkbook(ctx context.Context, log io.Writer, db *store.DB, out *outputFlag, tables []store.Table, queries []string) error {
	return writeFile(out.out, "xlsx", out.force, func(w io.Writer) error {
		wb, err := tabular.NewWorkbook()
		if err != nil {
			return err
		}
		defer wb.Close()
		for i, t := range tables {
			n, err := exportSheet(ctx, db, wb, t.Name, queries[i])
			if err != nil {
				return fmt.Errorf("%s, sheet %s: %w", out.out, t.Name, err)
			}
			if log != nil {
				fmt.Fprintf(log, "%s: %s\n", t.Name, plural(n, "row"))
			}
		}
		return wb.Write(w)
	})
}

// exportFiles writes the rows of queries into out.out/<table>.csv|parquet.
func exportFiles(ctx context.Context, log io.Writer, db *store.DB, out *outputFlag, tables []store.Table, queries []string) error {
	if err := os.MkdirAll(out.out, 0o755); err != nil {
		return err
	}
	paths := make([]string, len(tables))
	for i, t := range tables {
		paths[i] = filepath.Join(out.out, t.Name+"."+out.format)
		if _, err := os.Lstat(paths[i]); err == nil && !out.force {
			return existsError(paths[i]) // before writing any, so an export is not left half done
		}
	}
	for i, t := range tables {
		err := writeFile(paths[i], out.format, out.force, func(w io.Writer) error {
			if out.format == "parquet" {
				return tabular.ViaFile(w, func(path string) error { return tabular.CopyParquet(ctx, db, queries[i], path) })
			}
			rows, err := db.QueryContext(ctx, queries[i])
			if err != nil {
				return err
			}
			defer rows.Close()
			tt, err := tabular.FromRows(rows)
			if err != nil {
				return err
			}
			return tabular.CSV(w, tt)
		})
		if err != nil {
			return fmt.Errorf("%s: %w", paths[i], err)
		}
		if log != nil {
			fmt.Fprintf(log, "%s: %s\n", t.Name, paths[i])
		}
	}
	return nil
}

// exportSheet streams the rows of query onto a sheet named after the table and returns their number.
func exportSheet(ctx context.Context, db *store.DB, wb *tabular.Workbook, name, query string) (int, error) {
	rows, err := db.QueryContext(ctx, query)
	if err != nil {
		return 0, err
	}
	defer rows.Close()
	t, err := tabular.FromRows(rows)
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

// exportDataset runs export --dataset.
func exportDataset(ctx context.Context, e *env, fs *pflag.FlagSet, c *commonFlags, dir string, tables []string, sinceFlag, untilFlag string) error {
	for _, name := range []string{"output", "out", "force"} {
		if fs.Changed(name) {
			return usagef("--%s does not go with --dataset (a dataset is Parquet files in its directory)", name)
		}
	}
	if fs.NArg() > 0 {
		return usagef("unexpected argument %q", fs.Arg(0))
	}
	now := time.Now()
	since, until, err := parseWindow(sinceFlag, untilFlag, now)
	if err != nil {
		return err
	}
	chosen := ingest.Schema().DatasetTables()
	if len(tables) > 0 {
		chosen = nil
		for _, name := range tables {
			t, ok := ingest.Schema().Lookup(name)
			if !ok || t.Evidence == "" {
				return usagef("table %q is not one a dataset holds (%s)", name, strings.Join(tableNames(ingest.Schema().DatasetTables()), ", "))
			}
			chosen = append(chosen, t)
		}
	}
	db, err := c.openDB(ctx, c.db, true)
	if err != nil {
		return err
	}
	defer db.Close()
	stale, err := store.RemoveStaleStaging(dir, time.Now())
	for _, s := range stale {
		if s.Err != nil {
			fmt.Fprintf(c.stderr, "kubesift: warning: could not remove %s, left by an export that stopped: %v; it holds no day of the dataset, and the export goes on\n",
				s.Dir, s.Err)
			continue
		}
		fmt.Fprintf(c.stderr, "kubesift: removed %s (%s), left by an export that stopped; nothing was written in it for %s\n",
			s.Dir, humanize.IBytes(uint64(s.Bytes)), time.Since(s.LastWrite).Round(time.Minute))
	}
	if err != nil {
		return err
	}
	parts, left, err := db.ExportDataset(ctx, dir, chosen, since, until)
	for _, l := range left {
		fmt.Fprintf(c.stderr, "kubesift: warning: could not remove the staging directory %s: %v; it holds no day of the dataset, and an export removes it once nothing was written in it for %d hours\n",
			l.Dir, l.Err, int(store.StaleStagingAge.Hours()))
	}
	if log := e.logWriter(c.quiet); log != nil {
		for _, p := range parts {
			verb := "written"
			if p.Replaced {
				verb = "replaced"
			}
			fmt.Fprintf(log, "%s: cluster %q, %s %s\n", p.Table, p.Cluster, p.Date, verb)
		}
		if err == nil && len(parts) == 0 {
			fmt.Fprintf(log, "%s holds no evidence rows in the window: nothing written to %s\n", db.Path, dir)
		}
	}
	return err
}

func tableNames(tables []store.Table) []string {
	names := make([]string, len(tables))
	for i, t := range tables {
		names[i] = t.Name
	}
	return names
}
