// Package store opens kubesift's DuckDB database, creates its documented tables, holds the SQL
// the command line needs over them (runs, row counts, export queries) and turns DuckDB's
// low-level failures (a second writer, a locked file) into errors an SRE can act on.
package store
