// Package rows appends parsed rows to kubesift tables inside a load's transaction, as Arrow
// batches inserted one statement each on a goroutine of their own; holds batches back on disk
// while the connection is busy; and removes a load's rows that an earlier load already has,
// by each table's DedupeKey.
package rows
