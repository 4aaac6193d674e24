// Package ingest loads evidence files (audit logs, conntrack dumps, Kubernetes object snapshots)
// into kubesift's DuckDB tables: one transaction per file, bad lines recorded in ingest_errors
// with their file and line, and no duplicate rows when the same data is loaded twice.
//
// Audit logs take a fast path: Go splits the (possibly gzipped) stream into lines without
// copying them, parses each request URI's query, and hands Arrow batches to DuckDB, whose
// json_transform decodes the events in parallel.
package ingest
