// Package source opens evidence files for ingest: a file or stdin, gzip, bzip2, zstd or xz
// undone (a damaged gzip member is skipped up to the next member and recorded as Damage), with
// its head for format detection and an identity that survives log rotation (Open); cuts a stream into
// chunks of whole lines without copying them (LineReader); and counts what a parser read
// (CountingLines).
package source
