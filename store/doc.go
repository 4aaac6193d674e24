// Package store opens kubesift's DuckDB database, creates the tables of the Schema it is given
// (the kinds of evidence declare theirs; kubesift's own bookkeeping tables are here) in DuckDB 1.5's
// storage format, rewriting a file of an older format in it, removes the rows of loads a kill
// interrupted, runs user SQL in a read-only sandbox, holds the SQL the command line needs over the
// tables (runs, row counts, export queries) and turns DuckDB's low-level failures (a second writer,
// a locked file) into errors an SRE can act on.
package store
