package cli

import (
	"database/sql"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"io"
	"math/big"
	"slices"
	"strings"
	"text/tabwriter"
	"time"
	"unicode/utf8"

	"github.com/duckdb/duckdb-go/v2"
	"github.com/spf13/pflag"
)

// resultSet is a fully read query result.
type resultSet struct {
	columns []string
	json    []bool // column holds JSON text to embed as-is
	rows    [][]any
}

func readRows(rows *sql.Rows) (*resultSet, error) {
	cols, err := rows.Columns()
	if err != nil {
		return nil, err
	}
	types, err := rows.ColumnTypes()
	if err != nil {
		return nil, err
	}
	rs := &resultSet{columns: cols, json: make([]bool, len(cols))}
	for i, t := range types {
		rs.json[i] = t.DatabaseTypeName() == "JSON"
	}
	for rows.Next() {
		vals := make([]any, len(cols))
		ptrs := make([]any, len(cols))
		for i := range vals {
			ptrs[i] = &vals[i]
		}
		if err := rows.Scan(ptrs...); err != nil {
			return nil, err
		}
		rs.rows = append(rs.rows, vals)
	}
	return rs, rows.Err()
}

func (rs *resultSet) isJSON(col int) bool { return col < len(rs.json) && rs.json[col] }

type outputFlag struct {
	format  string
	allowed []string
}

func addOutputFlag(fs *pflag.FlagSet, def string, allowed ...string) *outputFlag {
	o := &outputFlag{allowed: allowed}
	fs.StringVarP(&o.format, "output", "o", def, "output format: "+strings.Join(allowed, ", "))
	return o
}

func (o *outputFlag) validate() error {
	if !slices.Contains(o.allowed, o.format) {
		return usagef("unknown output format %q (want one of %s)", o.format, strings.Join(o.allowed, ", "))
	}
	return nil
}

func (o *outputFlag) write(w io.Writer, rs *resultSet) error {
	switch o.format {
	case "table":
		return writeTable(w, rs)
	case "json":
		return writeJSON(w, rs)
	case "csv":
		return writeCSV(w, rs)
	}
	return usagef("unknown output format %q", o.format)
}

const maxCellWidth = 80

func writeTable(w io.Writer, rs *resultSet) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, strings.Join(rs.columns, "\t"))
	for _, row := range rs.rows {
		cells := make([]string, len(row))
		for i, v := range row {
			s := textValue(v, rs.isJSON(i))
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
	if len(rs.rows) != 1 {
		_, err := fmt.Fprintf(w, "(%d rows)\n", len(rs.rows))
		return err
	}
	_, err := fmt.Fprintln(w, "(1 row)")
	return err
}

func writeCSV(w io.Writer, rs *resultSet) error {
	cw := csv.NewWriter(w)
	if err := cw.Write(rs.columns); err != nil {
		return err
	}
	for _, row := range rs.rows {
		rec := make([]string, len(row))
		for i, v := range row {
			rec[i] = textValue(v, rs.isJSON(i))
		}
		if err := cw.Write(rec); err != nil {
			return err
		}
	}
	cw.Flush()
	return cw.Error()
}

func writeJSON(w io.Writer, rs *resultSet) error {
	out := make([]json.RawMessage, 0, len(rs.rows))
	for _, row := range rs.rows {
		var b strings.Builder
		b.WriteByte('{')
		for i, v := range row {
			if i > 0 {
				b.WriteByte(',')
			}
			k, _ := json.Marshal(rs.columns[i])
			b.Write(k)
			b.WriteByte(':')
			val, err := jsonValue(v, rs.isJSON(i))
			if err != nil {
				return fmt.Errorf("column %s: %w", rs.columns[i], err)
			}
			b.Write(val)
		}
		b.WriteByte('}')
		out = append(out, json.RawMessage(b.String()))
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(out)
}

// plain converts a DuckDB value into plain Go data (times as RFC3339 UTC, maps with string keys).
func plain(v any) any {
	switch x := v.(type) {
	case time.Time:
		return x.UTC().Format(time.RFC3339Nano)
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = plain(e)
		}
		return out
	case map[any]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			out[fmt.Sprint(plain(k))] = plain(e)
		}
		return out
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			out[k] = plain(e)
		}
		return out
	case duckdb.OrderedMap:
		out := make(map[string]any, x.Len())
		for i, k := range x.Keys() {
			out[fmt.Sprint(plain(k))] = plain(x.Values()[i])
		}
		return out
	case *big.Int:
		return x.String()
	case []byte:
		return string(x)
	case fmt.Stringer:
		return x.String()
	}
	return v
}

func jsonValue(v any, isJSON bool) ([]byte, error) {
	if s, ok := v.(string); ok && isJSON && json.Valid([]byte(s)) {
		return []byte(s), nil
	}
	return json.Marshal(plain(v))
}

// textValue renders a value for table and CSV cells: scalars as text, lists and maps as JSON.
func textValue(v any, isJSON bool) string {
	switch p := plain(v).(type) {
	case nil:
		return ""
	case string:
		return p
	case []any, map[string]any:
		b, _ := json.Marshal(p) // map keys come out sorted
		return string(b)
	default:
		return fmt.Sprint(p)
	}
}
