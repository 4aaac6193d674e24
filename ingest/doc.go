// Package ingest loads evidence files (audit logs, conntrack dumps, Kubernetes object snapshots)
// into kubesift's DuckDB tables: one transaction per file, bad lines recorded in ingest_errors
// with their file and line, and no duplicate rows when the same data is loaded twice.
//
// Each kind of evidence is a Loader in a package of its own (ingest/audit, ingest/k8sobj,
// ingest/conntrack), registered in the loaders list: the Loader detects its files, declares its
// tables and loads them. This package expands the command line's paths, picks the loader of
// each file, resumes growing audit logs, runs the load in a transaction and records it in
// ingest_files. docs/development.md shows how to add a kind.
package ingest
