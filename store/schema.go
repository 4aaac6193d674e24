package store

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"
)

// Column is one documented column of a kubesift table.
type Column struct {
	Name string
	Type string // DuckDB type, e.g. VARCHAR, BIGINT, TIMESTAMPTZ, JSON, MAP(VARCHAR, VARCHAR)
	Doc  string
}

// Table is one documented kubesift table. The DDL and `kubesift schema` are both generated from it,
// so the documentation cannot drift from the database.
type Table struct {
	Name    string
	Doc     string
	Columns []Column
	// Evidence names the evidence that fills the table, in the words of "no <Evidence> data":
	// audit, conntrack or snapshot; "" for kubesift's own bookkeeping.
	Evidence string
	// TimeColumn says when a row was observed, for time windows and retention; "" for tables
	// whose rows have no time.
	TimeColumn string
	// DedupeKey identifies a row across loads: a load keeps no row whose key (NULLs equal) an
	// earlier load already has. An item is a column name, or an expression with %[1]s standing for
	// the table alias, e.g. "coalesce(%[1]s.zone, 0)". Nil for tables that are not deduplicated.
	DedupeKey []string
}

// Tables lists every table kubesift creates, in documentation order.
var Tables = slices.Concat([]Table{auditEventsTable}, ConntrackTables(), K8sObjectTables, []Table{ingestErrorsTable, ingestFilesTable, runsTable})

// DDL returns the CREATE TABLE IF NOT EXISTS statement of t.
func (t Table) DDL() string {
	var b strings.Builder
	fmt.Fprintf(&b, "CREATE TABLE IF NOT EXISTS %s (\n", t.Name)
	for i, c := range t.Columns {
		sep := ","
		if i == len(t.Columns)-1 {
			sep = ""
		}
		fmt.Fprintf(&b, "  \"%s\" %s%s\n", c.Name, c.Type, sep)
	}
	b.WriteString(")")
	return b.String()
}

// ColumnNames returns the names of t's columns in order.
func (t Table) ColumnNames() []string {
	names := make([]string, len(t.Columns))
	for i, c := range t.Columns {
		names[i] = c.Name
	}
	return names
}

// Lookup returns the table named name.
func Lookup(name string) (Table, bool) {
	for _, t := range Tables {
		if t.Name == name {
			return t, true
		}
	}
	return Table{}, false
}

// TimeColumn returns the column that says when a row of table was observed, for time windows
// and retention; "" for tables without one.
func TimeColumn(table string) string {
	t, _ := Lookup(table)
	return t.TimeColumn
}

// Prune deletes rows observed before cutoff from every table with a time column, and the
// ingest_errors of loads that finished before it. ingest_files keeps its rows: they remember
// how far each file was read. It returns the number of rows deleted per table.
func (db *DB) Prune(ctx context.Context, cutoff time.Time) (map[string]int64, error) {
	deleted := map[string]int64{}
	for _, t := range Tables {
		col := TimeColumn(t.Name)
		if col == "" || t.Name == "ingest_files" || t.Name == "runs" {
			continue
		}
		res, err := db.ExecContext(ctx, fmt.Sprintf(`DELETE FROM %s WHERE "%s" < $1`, t.Name, col), cutoff)
		if err != nil {
			return nil, fmt.Errorf("pruning %s: %w", t.Name, err)
		}
		deleted[t.Name], _ = res.RowsAffected()
	}
	res, err := db.ExecContext(ctx, `DELETE FROM ingest_errors WHERE load_id IN (SELECT load_id FROM ingest_files WHERE finished_at < $1)`, cutoff)
	if err != nil {
		return nil, fmt.Errorf("pruning ingest_errors: %w", err)
	}
	deleted["ingest_errors"], _ = res.RowsAffected()
	return deleted, nil
}
