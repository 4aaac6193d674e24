package cli

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"slices"
	"strings"
	"text/tabwriter"
	"unicode/utf8"

	"github.com/spf13/pflag"

	"github.com/kubesift/kubesift/analyze"
	"github.com/kubesift/kubesift/analyze/htmlreport"
	"github.com/kubesift/kubesift/store"
	"github.com/kubesift/kubesift/tabular"
)

// reportFormats are the formats of analyze and run: analyze's and html.
var reportFormats = append(slices.Clip(analyze.Formats), "html")

// writeReport renders rep in format: html here (htmlreport builds on analyze; its charts may
// query db; the first chartsPerRule findings of each rule get charts), the others in analyze.
func writeReport(ctx context.Context, w io.Writer, db *store.DB, rep *analyze.Report, format string, chartsPerRule int) error {
	if format == "html" {
		charts := analyze.NewCharts(ctx, db, rep)
		defer charts.Close()
		return htmlreport.WriteReport(w, rep, charts.Rows, chartsPerRule)
	}
	return analyze.WriteContext(ctx, w, rep, format)
}

// resultSet is a fully read query result.
type resultSet struct {
	columns []string
	types   []string // DuckDB types
	rows    [][]any
}

func readRows(rows *sql.Rows) (*resultSet, error) {
	t, err := tabular.FromRows(rows)
	if err != nil {
		return nil, err
	}
	rs := &resultSet{columns: t.ColumnNames()}
	for _, c := range t.Columns {
		rs.types = append(rs.types, c.Type)
	}
	err = t.Scan(func(row []any) error {
		rs.rows = append(rs.rows, append([]any(nil), row...))
		return nil
	})
	return rs, err
}

// table returns the rows as a table named name.
func (rs *resultSet) table(name string) *tabular.Table {
	t := &tabular.Table{Name: name, Rows: rs.rows}
	for i, c := range rs.columns {
		typ := ""
		if i < len(rs.types) {
			typ = rs.types[i]
		}
		t.Columns = append(t.Columns, tabular.Column{Name: c, Type: typ})
	}
	return t
}

// binaryFormats are refused on a terminal.
var binaryFormats = []string{"xlsx", "parquet"}

// outputFlag is -o FORMAT, --out FILE and --force: what a verb writes and where.
type outputFlag struct {
	format  string
	allowed []string
	out     string
	force   bool
}

// outputUsage starts the help of -o, followed by the formats (completion reads them from it).
const outputUsage = "output format: "

func addOutputFlag(fs *pflag.FlagSet, def string, allowed ...string) *outputFlag {
	o := &outputFlag{allowed: allowed}
	fs.StringVarP(&o.format, "output", "o", def, outputUsage+strings.Join(allowed, ", "))
	fs.StringVar(&o.out, "out", "", "write to this file instead of stdout (written whole, then renamed into place)")
	fs.BoolVar(&o.force, "force", false, "overwrite the --out file if it exists")
	return o
}

// validate checks the format and that --out does not exist (without --force), before any work.
func (o *outputFlag) validate() error {
	if !slices.Contains(o.allowed, o.format) {
		return usagef("unknown output format %q (want one of %s)", o.format, strings.Join(o.allowed, ", "))
	}
	if o.out != "" && !o.force {
		if _, err := os.Lstat(o.out); err == nil {
			return existsError(o.out)
		}
	}
	return nil
}

func existsError(path string) error {
	return fmt.Errorf("%s already exists; use --force to overwrite it", path)
}

// terminal marks a stdout that is a terminal (set by Run with the env's isTerminal).
type terminal struct{ io.Writer }

// checkTerminal refuses a binary format bound for a terminal.
func (o *outputFlag) checkTerminal(stdout io.Writer) error {
	if _, tty := stdout.(terminal); tty && o.out == "" && slices.Contains(binaryFormats, o.format) {
		return usagef("-o %s writes a binary file and stdout is a terminal: give --out FILE or redirect stdout", o.format)
	}
	return nil
}

// emit sends what render writes to stdout, or to --out.
func (o *outputFlag) emit(stdout io.Writer, render func(w io.Writer) error) error {
	if o.out == "" {
		if err := o.checkTerminal(stdout); err != nil {
			return err
		}
		return render(stdout)
	}
	return writeFile(o.out, o.format, o.force, render)
}

// writeFile writes path atomically: into a temporary file beside it, renamed (or, without
// force, hard-linked so that a file created meanwhile is not clobbered) into place when
// complete. A CSV file starts with a UTF-8 byte-order mark, for Excel.
func writeFile(path, format string, force bool, render func(w io.Writer) error) (err error) {
	if !force {
		if _, err := os.Lstat(path); err == nil {
			return existsError(path)
		}
	}
	tmp, err := createTempBeside(path)
	if err != nil {
		return err
	}
	defer func() {
		tmp.Close()
		os.Remove(tmp.Name())
	}()
	if format == "csv" {
		if _, err := io.WriteString(tmp, tabular.UTF8BOM); err != nil {
			return err
		}
	}
	if err := render(tmp); err != nil {
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	if err := syncFile(tmp.Name()); err != nil { // by name: a writer such as DuckDB's COPY may have replaced the file
		return err
	}
	if force {
		return os.Rename(tmp.Name(), path)
	}
	if err := os.Link(tmp.Name(), path); err != nil {
		if errors.Is(err, fs.ErrExist) {
			return existsError(path)
		}
		return os.Rename(tmp.Name(), path) // a file system without hard links
	}
	return nil
}

// syncFile makes path readable by its owner only (reports and exports hold audit data; DuckDB's
// COPY creates its files by the umask) and flushes it to disk.
func syncFile(path string) error {
	if err := os.Chmod(path, 0o600); err != nil {
		return err
	}
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	return f.Sync()
}

// tableFormats are the formats of query results.
var tableFormats = []string{"table", "json", "ndjson", "csv", "xlsx", "parquet", "markdown"}

// renderTable writes t in format; not parquet, which query writes from Arrow (see runQuery).
func renderTable(w io.Writer, t *tabular.Table, format string) error {
	switch format {
	case "table":
		return writeTable(w, t)
	case "json":
		return writeJSON(w, t, true)
	case "ndjson":
		return writeJSON(w, t, false)
	case "csv":
		return tabular.CSV(w, t)
	case "markdown":
		if err := tabular.Markdown(w, t, 0); err != nil {
			return err
		}
		_, err := fmt.Fprintf(w, "\n(%s)\n", plural(len(t.Rows), "row"))
		return err
	case "xlsx":
		return writeWorkbook(w, t)
	}
	return usagef("unknown output format %q", format)
}

// writeWorkbook writes tables as an XLSX workbook, a sheet each (more for a table past a sheet's rows).
func writeWorkbook(w io.Writer, tables ...*tabular.Table) error {
	wb, err := tabular.NewWorkbook()
	if err != nil {
		return err
	}
	defer wb.Close()
	for _, t := range tables {
		if _, err := wb.AddSheet(tabular.Sheet{Name: t.Name, Table: t}); err != nil {
			return fmt.Errorf("%s: %w", t.Name, err)
		}
	}
	return wb.Write(w)
}

func plural(n int, what string) string {
	if n == 1 {
		return "1 " + what
	}
	return fmt.Sprintf("%d %ss", n, what)
}

const maxCellWidth = 80

func writeTable(w io.Writer, t *tabular.Table) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, strings.Join(t.ColumnNames(), "\t"))
	for _, row := range t.Rows {
		cells := make([]string, len(row))
		for i, v := range row {
			s := tabular.Text(v)
			if v == nil {
				s = "NULL"
			}
			s = strings.NewReplacer("\n", `\n`, "\t", " ").Replace(s)
			if utf8.RuneCountInString(s) > maxCellWidth {
				s = string([]rune(s)[:maxCellWidth-1]) + "…"
			}
			cells[i] = s
		}
		fmt.Fprintln(tw, strings.Join(cells, "\t"))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	_, err := fmt.Fprintf(w, "(%s)\n", plural(len(t.Rows), "row"))
	return err
}

// writeJSON writes the rows as objects: one indented array, or one object per line (ndjson).
func writeJSON(w io.Writer, t *tabular.Table, array bool) error {
	out := make([]json.RawMessage, 0, len(t.Rows))
	for _, row := range t.Rows {
		var b strings.Builder
		b.WriteByte('{')
		for i, v := range row {
			if i > 0 {
				b.WriteByte(',')
			}
			k, _ := json.Marshal(t.Columns[i].Name)
			b.Write(k)
			b.WriteByte(':')
			val, err := tabular.JSONValue(v, t.Columns[i].IsJSON())
			if err != nil {
				return fmt.Errorf("column %s: %w", t.Columns[i].Name, err)
			}
			b.Write(val)
		}
		b.WriteByte('}')
		out = append(out, json.RawMessage(b.String()))
	}
	if !array {
		for _, o := range out {
			if _, err := fmt.Fprintf(w, "%s\n", o); err != nil {
				return err
			}
		}
		return nil
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(out)
}
