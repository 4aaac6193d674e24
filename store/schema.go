package store

import (
	"fmt"
	"slices"
	"strings"
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
var Tables = slices.Concat([]Table{auditEventsTable}, ConntrackTables(), K8sObjectTables, []Table{ingestErrorsTable, ingestFilesTable})

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
