// Package jemalloc sets and reads the options of the allocator that DuckDB's Linux builds link in
// (jemalloc, under the prefix duckdb_je_), through its mallctl interface, while the process runs.
// Elsewhere, or in a build of DuckDB without it, there is nothing to set (ErrNotLinked).
package jemalloc
