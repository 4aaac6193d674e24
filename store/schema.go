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
	switch {
	case table == "audit_events":
		return "stage_at"
	case table == "ingest_files":
		return "finished_at"
	case table == "runs":
		return "started_at"
	case table == "ingest_errors":
		return ""
	}
	if t, ok := Lookup(table); ok && slices.Contains(t.ColumnNames(), "captured_at") {
		return "captured_at"
	}
	return ""
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
