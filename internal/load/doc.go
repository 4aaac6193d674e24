// Package load is what every evidence loader shares: File, the load of one file inside its
// transaction (settings, results, rejected lines to ingest_errors, duplicate removal), and
// Origin, the node and capture time of evidence from its path.
package load
