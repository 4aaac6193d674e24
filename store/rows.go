package store

import (
	"context"
	"database/sql"
	"fmt"
	"strings"
	"time"
)

// RowQuerier is what the row functions need: a *sql.DB, *sql.Conn or *sql.Tx.
type RowQuerier interface {
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
}

// TableRows is the number of rows of one table.
type TableRows struct {
	Table string
	Rows  int64
}

// CountRows returns the number of rows of every table of s, in schema order, but for the tables
// derived from another (Table.Derive), whose rows are that table's again: the counts say what was
// loaded.
func (s Schema) CountRows(ctx context.Context, q RowQuerier) ([]TableRows, error) {
	out := make([]TableRows, 0, len(s))
	for _, t := range s {
		if t.Derive != "" {
			continue
		}
		n, err := s.RowCount(ctx, q, t.Name)
		if err != nil {
			return nil, err
		}
		out = append(out, TableRows{t.Name, n})
	}
	return out, nil
}

// RowCount returns the number of rows of the table of s named table.
func (s Schema) RowCount(ctx context.Context, q RowQuerier, table string) (int64, error) {
	return s.RowCountIn(ctx, q, table, nil, nil)
}

// RowCountIn returns the number of rows of the table of s named table observed in [since, until]
// (see SelectRows; nil is unbounded, and a table without a time column is counted whole).
func (s Schema) RowCountIn(ctx context.Context, q RowQuerier, table string, since, until *time.Time) (int64, error) {
	t, ok := s.Lookup(table)
	if !ok {
		return 0, fmt.Errorf("%q is not a kubesift table (see kubesift schema)", table)
	}
	var n int64
	if err := q.QueryRowContext(ctx, "SELECT count(*) FROM ("+SelectRows(t, since, until)+")").Scan(&n); err != nil {
		return 0, fmt.Errorf("counting %s: %w", table, err)
	}
	return n, nil
}

// HasRows reports whether the table of s named table holds a row of the window [since, until], by
// the time the rules keep its rows by (Table.WindowTime).
func (s Schema) HasRows(ctx context.Context, q RowQuerier, table string, since, until *time.Time) (bool, error) {
	t, ok := s.Lookup(table)
	if !ok {
		return false, fmt.Errorf("%q is not a kubesift table (see kubesift schema)", table)
	}
	var has bool
	if err := q.QueryRowContext(ctx, "SELECT EXISTS ("+selectWindow(t, since, until)+")").Scan(&has); err != nil {
		return false, fmt.Errorf("reading %s: %w", table, err)
	}
	return has, nil
}

// Clusters returns the clusters the rows of the table of s named table in the window [since,
// until] belong to ("" for the unknown cluster), sorted (see HasRows); none when it has no such
// rows or no cluster column.
func (s Schema) Clusters(ctx context.Context, q RowQuerier, table string, since, until *time.Time) ([]string, error) {
	t, ok := s.Lookup(table)
	if !ok {
		return nil, fmt.Errorf("%q is not a kubesift table (see kubesift schema)", table)
	}
	if !t.HasColumn(ClusterColumn.Name) {
		return nil, nil
	}
	var list any
	if err := q.QueryRowContext(ctx, "SELECT list(DISTINCT coalesce(cluster, '') ORDER BY coalesce(cluster, '')) FROM ("+selectWindow(t, since, until)+")").Scan(&list); err != nil {
		return nil, fmt.Errorf("listing the clusters of %s: %w", table, err)
	}
	items, _ := list.([]any)
	out := make([]string, 0, len(items))
	for _, c := range items {
		out = append(out, c.(string))
	}
	return out, nil
}

// SelectRows returns the query of t's rows observed in [since, until] (by TimeColumn; nil is
// unbounded), all of them when t has no time column. The times are formatted into the SQL, as
// COPY takes no parameters; they are times, not text.
func SelectRows(t Table, since, until *time.Time) string {
	if t.TimeColumn == "" {
		return selectBetween(t, "", since, until)
	}
	return selectBetween(t, `"`+t.TimeColumn+`"`, since, until)
}

// selectWindow is SelectRows by the time the rules keep a row by in a window (Table.WindowTime).
func selectWindow(t Table, since, until *time.Time) string {
	if t.TimeColumn == "" {
		return SelectRows(t, since, until)
	}
	return selectBetween(t, t.WindowTime(), since, until)
}

// selectBetween returns the query of t's rows whose time (an expression; "" for none) lies in
// [since, until].
func selectBetween(t Table, at string, since, until *time.Time) string {
	q := "SELECT * FROM " + t.Name
	if at == "" || (since == nil && until == nil) {
		return q
	}
	var conds []string
	if since != nil {
		conds = append(conds, fmt.Sprintf(`%s >= '%s'::TIMESTAMPTZ`, at, since.UTC().Format(time.RFC3339Nano)))
	}
	if until != nil {
		conds = append(conds, fmt.Sprintf(`%s <= '%s'::TIMESTAMPTZ`, at, until.UTC().Format(time.RFC3339Nano)))
	}
	return q + " WHERE " + strings.Join(conds, " AND ")
}

// DuckDBVersion returns the version of the linked DuckDB library ("unknown" if it cannot say).
func DuckDBVersion(ctx context.Context) string {
	db, err := sql.Open("duckdb", "")
	if err != nil {
		return "unknown"
	}
	defer db.Close()
	var v string
	if err := db.QueryRowContext(ctx, "SELECT version()").Scan(&v); err != nil {
		return "unknown"
	}
	return v
}
