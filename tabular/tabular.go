// Package tabular writes rows (query results, exported tables, findings and their evidence) in
// the formats people open elsewhere: CSV, Markdown tables, XLSX workbooks and Parquet. The
// verbs choose what to write; this package decides how each format represents a value, so
// every verb writes a time, a number or a JSON document the same way.
package tabular

import (
	"bytes"
	"database/sql"
	"encoding/json"
	"fmt"
	"math/big"
	"strconv"
	"strings"
	"time"

	"github.com/duckdb/duckdb-go/v2"
)

// Column is one column of a Table.
type Column struct {
	Name string
	// Type is the DuckDB type (VARCHAR, BIGINT, TIMESTAMPTZ, JSON, ...). Parquet written from
	// Go values needs it; the other formats look at the values.
	Type string
}

// IsJSON reports whether the column holds JSON text (embedded as-is in JSON output).
func (c Column) IsJSON() bool { return c.Type == "JSON" }

// Table is rows with named columns, held in memory (Rows) or streamed (Scan).
type Table struct {
	Name    string
	Columns []Column
	Rows    [][]any
	// Scan, when set, streams the rows instead of Rows: it calls yield once per row, in order,
	// and stops at yield's first error.
	Scan func(yield func(row []any) error) error
}

// Each calls fn for every row.
func (t *Table) Each(fn func(row []any) error) error {
	if t.Scan != nil {
		return t.Scan(fn)
	}
	for _, r := range t.Rows {
		if err := fn(r); err != nil {
			return err
		}
	}
	return nil
}

// ColumnNames returns the names of t's columns.
func (t *Table) ColumnNames() []string {
	out := make([]string, len(t.Columns))
	for i, c := range t.Columns {
		out[i] = c.Name
	}
	return out
}

// Plain converts a DuckDB value into plain Go data: times as RFC3339 UTC text, maps with string
// keys, big integers as text. It is the shape of JSON output.
func Plain(v any) any {
	switch x := v.(type) {
	case time.Time:
		return FormatTime(x)
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = Plain(e)
		}
		return out
	case map[any]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			out[fmt.Sprint(Plain(k))] = Plain(e)
		}
		return out
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			out[k] = Plain(e)
		}
		return out
	case duckdb.OrderedMap:
		out := make(map[string]any, x.Len())
		for i, k := range x.Keys() {
			out[fmt.Sprint(Plain(k))] = Plain(x.Values()[i])
		}
		return out
	case duckdb.Interval:
		return FormatInterval(x)
	case *big.Int:
		return x.String()
	case []byte:
		return string(x)
	case json.RawMessage:
		return x
	case fmt.Stringer:
		return x.String()
	}
	return v
}

// FormatInterval writes an interval as DuckDB prints one: years, months and days in words, then
// the time as [-]HH:MM:SS[.ffffff] ("1 month 2 days 00:00:55.169476"; "00:00:00" for none), not as
// the Go struct the driver scans it into.
func FormatInterval(iv duckdb.Interval) string {
	var parts []string
	unit := func(n int64, one string) {
		switch {
		case n == 1 || n == -1:
			parts = append(parts, fmt.Sprintf("%d %s", n, one))
		case n != 0:
			parts = append(parts, fmt.Sprintf("%d %ss", n, one))
		}
	}
	unit(int64(iv.Months/12), "year")
	unit(int64(iv.Months%12), "month")
	unit(int64(iv.Days), "day")
	if iv.Micros != 0 || len(parts) == 0 {
		sign, us := "", iv.Micros
		if us < 0 {
			sign, us = "-", -us
		}
		t := fmt.Sprintf("%s%02d:%02d:%02d", sign, us/3_600_000_000, us/60_000_000%60, us/1_000_000%60)
		if frac := us % 1_000_000; frac != 0 {
			t += "." + strings.TrimRight(fmt.Sprintf("%06d", frac), "0")
		}
		parts = append(parts, t)
	}
	return strings.Join(parts, " ")
}

// FormatTime is how every text format writes a time: RFC3339 in UTC, with the fraction kept.
func FormatTime(t time.Time) string { return t.UTC().Format(time.RFC3339Nano) }

// Text renders a value as cell text: NULL as "", times as RFC3339 UTC, floats without exponent,
// lists, maps and JSON as compact JSON (map keys sorted).
func Text(v any) string {
	switch p := Plain(v).(type) {
	case nil:
		return ""
	case string:
		return p
	case json.RawMessage:
		return compactJSON(p)
	case float64:
		return strconv.FormatFloat(p, 'f', -1, 64)
	case float32:
		return strconv.FormatFloat(float64(p), 'f', -1, 32)
	case []any, map[string]any:
		b, _ := json.Marshal(p)
		return string(b)
	default:
		return fmt.Sprint(p)
	}
}

func compactJSON(raw []byte) string {
	var b bytes.Buffer
	if err := json.Compact(&b, raw); err != nil {
		return string(raw)
	}
	return b.String()
}

// JSONValue renders a value as JSON; text of a JSON column is embedded as-is when valid.
func JSONValue(v any, isJSON bool) ([]byte, error) {
	if s, ok := v.(string); ok && isJSON && json.Valid([]byte(s)) {
		return []byte(s), nil
	}
	return json.Marshal(Plain(v))
}

// FromRows wraps a query result as a table that is read while it is written (Scan); the
// values passed to yield are reused between rows.
func FromRows(rows *sql.Rows) (*Table, error) {
	types, err := rows.ColumnTypes()
	if err != nil {
		return nil, err
	}
	t := &Table{}
	for _, c := range types {
		t.Columns = append(t.Columns, Column{Name: c.Name(), Type: c.DatabaseTypeName()})
	}
	t.Scan = func(yield func([]any) error) error {
		vals := make([]any, len(types))
		ptrs := make([]any, len(types))
		for i := range vals {
			ptrs[i] = &vals[i]
		}
		for rows.Next() {
			if err := rows.Scan(ptrs...); err != nil {
				return err
			}
			if err := yield(vals); err != nil {
				return err
			}
		}
		return rows.Err()
	}
	return t, nil
}
