package store

import (
	"context"
	"database/sql"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"time"
)

// Column is one documented column of a kubesift table.
type Column struct {
	Name string
	Type string // DuckDB type, e.g. VARCHAR, BIGINT, TIMESTAMPTZ, JSON, MAP(VARCHAR, VARCHAR)
	Doc  string
	// Backfill is the value, a SQL expression over the table's older columns, of this column in
	// the rows an older kubesift wrote before the column existed, where NULL would say something
	// else: Open fills them with it when it upgrades the table. "" leaves them NULL.
	Backfill string
	// Generated is the value, a SQL expression over the table's other columns, of a column
	// that is computed when it is read (DuckDB's VIRTUAL generated column) instead of stored: a
	// load neither writes nor pays for it. A database whose table stores it is rewritten once
	// when Open upgrades it.
	Generated string
	// Compression is how every segment of the column is stored (USING COMPRESSION): Vocabulary
	// or Documents, where "" lets DuckDB choose per segment by size. A table Open created before
	// the column had one keeps what it had until an upgrade rewrites it.
	Compression string
}

// The compressions a Column may name, each DuckDB's method in the storage format Open creates files
// in (StorageVersion). A file in an older format (every file an older kubesift created) may lack
// them, and its tables are declared with what olderFormats says instead.
const (
	// Vocabulary is for a column whose values come from a few distinct ones: a dictionary (its
	// strings FSST-compressed), whose scan hands DuckDB's operators each distinct value once with an
	// index per row.
	Vocabulary = "dict_fsst"
	// Documents is for a column of long JSON documents that a fraction of the rows hold (request and
	// response bodies): zstd. Left to choose, DuckDB stores such a column uncompressed: its average
	// length over all rows, NULLs counted, stays under the 4,096 bytes at which it takes zstd.
	Documents = "zstd"
)

// olderFormats says, for each compression a Column may name, the first storage format that has it
// and what a file of an earlier format declares instead: dict_fsst came with v1.3.0's format and
// replaced the dictionary, which that format no longer writes; zstd came with v1.2.0's, and before
// it DuckDB chooses (a declared method the format lacks stores the column uncompressed).
var olderFormats = map[string]struct{ since, before string }{
	Vocabulary: {"v1.3.0", "dictionary"},
	Documents:  {"v1.2.0", ""},
}

// ClusterColumn is the last column of every conntrack and object table: the cluster the evidence
// belongs to. It comes last so that a database an older kubesift created gains it on open (Open
// adds missing columns at the end) and loads, which insert in column order, still line up.
var ClusterColumn = Column{Name: "cluster", Type: "VARCHAR", Doc: "cluster the evidence belongs to: --cluster, or the first directory under the argument with --cluster-per-dir; else, for a kubesift snapshot file, the cluster it records; for rows derived from audit events, the event's cluster; \"\" when unknown"}

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
	// ChangeTime is a column that times a row before its TimeColumn, when set (a watch stream's
	// events by their change, in a file saved later): the rules keep the row in a window by it
	// (WindowTime), and a dataset reads the days of the week after a window whose files hold such
	// rows of it.
	ChangeTime string
	// DedupeKey identifies a row across loads: a load keeps no row whose key (NULLs equal) an
	// earlier load already has. An item is a column name, or an expression with %[1]s standing for
	// the table alias, e.g. "coalesce(%[1]s.zone, 0)". Nil for tables that are not deduplicated.
	DedupeKey []string
	// Obsolete are columns an older kubesift had in the table: Open drops them when it upgrades a
	// database.
	Obsolete []string
	// Derive makes the table's rows from another table's (a SELECT whose columns are named as the
	// table's, load_id among them): a narrow copy of what a rule would otherwise scan the whole
	// other table for. An ingest, once its files are loaded, and a write Open add what Derive makes
	// of the loads newer than the table's newest, or of all rows when it has none (DeriveNewerLoads:
	// Open finds the loads of an ingest that stopped before, a table it just added to an older
	// database, or loads of an older kubesift, which derives nothing); a dataset, which holds no
	// files of it, reads it as a view of Derive; and `kubesift rules test` derives it from the rows
	// of a test case.
	Derive string
	// DatasetFiles, when set, writes a dataset's day of the table in files by the value of a
	// column (see FileSplit), so that a scan for some of its values skips the other files by their
	// statistics.
	DatasetFiles *FileSplit
}

// FileSplit splits a dataset's day of a table into files by the value of Column: the rows of
// each of Values in files of their own, part-<value>-<i>.parquet, and the rest, NULL among them,
// in part-<i>.parquet. Values are parts of file names: lowercase letters (ingest's
// TestTableMetadata checks them).
type FileSplit struct {
	Column string
	Values []string
}

// Execer runs a statement: a *sql.DB, *sql.Conn or *sql.Tx.
type Execer interface {
	ExecContext(context.Context, string, ...any) (sql.Result, error)
}

// DeriveAll replaces the rows of every table of s with a Derive by what it makes of all rows.
func (s Schema) DeriveAll(ctx context.Context, conn Execer) error {
	for _, t := range s {
		if t.Derive == "" {
			continue
		}
		for _, stmt := range []string{"DELETE FROM " + t.Name, t.deriveInsert("")} {
			if _, err := conn.ExecContext(ctx, stmt); err != nil {
				return fmt.Errorf("deriving %s: %w", t.Name, err)
			}
		}
	}
	return nil
}

// deriveInsert is the statement that inserts into t what its Derive makes of the rows that where (""
// or " WHERE …" over Derive's columns) keeps.
func (t Table) deriveInsert(where string) string {
	return fmt.Sprintf("INSERT INTO %s BY NAME SELECT * FROM (%s)%s", t.Name, t.Derive, where)
}

// Schema is every table of a kubesift database, in documentation order: the evidence tables the
// kinds of evidence declare (ingest.Schema gathers them from its loaders) grouped by evidence,
// then kubesift's own (ingest_errors, ingest_files, runs). Open creates its tables; the DDL, `kubesift schema`,
// retention, export and the analysis all read it.
type Schema []Table

// NewSchema returns the schema of the evidence tables, grouped by their Evidence (audit,
// conntrack, snapshot, ...: the words of "no ... data") and in the order given within a group,
// then kubesift's own tables. A table given twice (two loaders write it) is kept once; two
// different tables of one name, or a column compression other than Vocabulary and Documents, are
// programming errors and panic.
func NewSchema(evidence ...Table) Schema {
	evidence = slices.Clone(evidence)
	slices.SortStableFunc(evidence, func(a, b Table) int { return strings.Compare(a.Evidence, b.Evidence) })
	var s Schema
	for _, t := range slices.Concat(evidence, []Table{ingestErrorsTable, ingestFilesTable, runsTable}) {
		for _, c := range t.Columns {
			if _, known := olderFormats[c.Compression]; !known && c.Compression != "" {
				panic(fmt.Sprintf("column %s.%s: compression %q is neither Vocabulary nor Documents", t.Name, c.Name, c.Compression))
			}
		}
		if have, ok := s.Lookup(t.Name); ok {
			if !reflect.DeepEqual(have, t) {
				panic(fmt.Sprintf("two different tables are named %s", t.Name))
			}
			continue
		}
		s = append(s, t)
	}
	return s
}

// WindowTime returns the time (an expression over t's columns) by which the rules keep a row of t
// in a window: its ChangeTime, else its TimeColumn. Whether a window holds any rows of the table
// (Schema.HasRows, Schema.Clusters) asks it.
func (t Table) WindowTime() string {
	if t.ChangeTime != "" {
		return fmt.Sprintf(`coalesce("%s", "%s")`, t.ChangeTime, t.TimeColumn)
	}
	return `"` + t.TimeColumn + `"`
}

// DDL returns the CREATE TABLE IF NOT EXISTS statement of t in a file Open creates.
func (t Table) DDL() string { return t.ddl(t.Name, StorageVersion) }

// ddl returns the CREATE TABLE IF NOT EXISTS statement of t as table name (t.Name, or qualified
// with a database) in a file of storage format (DuckDB's name for it, e.g. "v1.0.0+"; see
// olderFormats).
func (t Table) ddl(name, format string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "CREATE TABLE IF NOT EXISTS %s (\n", name)
	for i, c := range t.Columns {
		sep := ","
		if i == len(t.Columns)-1 {
			sep = ""
		}
		if c.Generated != "" {
			fmt.Fprintf(&b, "  \"%s\" %s GENERATED ALWAYS AS (%s) VIRTUAL%s\n", c.Name, c.Type, c.Generated, sep)
			continue
		}
		compression := c.Compression
		if older, ok := olderFormats[compression]; ok && storageVersionBefore(format, older.since) {
			compression = older.before
		}
		if compression != "" {
			compression = " USING COMPRESSION " + compression
		}
		fmt.Fprintf(&b, "  \"%s\" %s%s%s\n", c.Name, c.Type, compression, sep)
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
func (s Schema) Lookup(name string) (Table, bool) {
	i := slices.IndexFunc(s, func(t Table) bool { return t.Name == name })
	if i < 0 {
		return Table{}, false
	}
	return s[i], true
}

// Prune deletes rows observed before cutoff from every table with a time column, and the
// ingest_errors of loads that finished before it. ingest_files keeps its rows: they remember
// how far each file was read. It returns the number of rows deleted per table.
func (db *DB) Prune(ctx context.Context, cutoff time.Time) (map[string]int64, error) {
	deleted := map[string]int64{}
	for _, t := range db.Schema {
		col := t.TimeColumn
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
