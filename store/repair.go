package store

import (
	"context"
	"database/sql"
	"fmt"
	"slices"
)

// LoadIDSequence gives ingest_files.load_id. Each load takes its id in a transaction of its own
// before it starts, so the id of a load that was killed is never given to another.
const LoadIDSequence = "load_ids"

// Why a repair step: DuckDB writes a transaction's WAL records at COMMIT, and when a kill lands
// while they are being written, its WAL replay keeps the records before the torn one (checked
// by cutting a load's WAL at every length: endpoint_addresses come back without the
// audit_events, then audit_events without ingest_files). A load writes its ingest_files row last,
// so a load without that row is exactly one that never committed whole: Open removes its rows.

// loadTables returns the tables of db whose rows belong to a load: those with a load_id column,
// ingest_files excepted.
func (db *DB) loadTables() []string {
	var out []string
	for _, t := range db.Schema {
		if t.Name != ingestFilesTable.Name && slices.Contains(t.ColumnNames(), "load_id") {
			out = append(out, t.Name)
		}
	}
	return out
}

// orphanCondition selects the rows of loads that never committed whole. Loads run one at a time
// (the file's write lock), take increasing ids from the sequence, and every writable Open repairs
// before anything is loaded: such rows can only have an id past the newest load in ingest_files.
// DuckDB checks that one number against each row group's statistics instead of reading the
// column, where a lookup of every row's load id in ingest_files read the whole column of every
// table at every open, ingest's and analyze's alike (0.08 s for audit_events at 10M events,
// growing with the database; BENCHMARKS.md).
const orphanCondition = "load_id > (SELECT coalesce(max(load_id), 0) FROM ingest_files)"

// legacyOrphanCondition selects the rows of loads without an ingest_files row wherever their id
// lies: for a database from before the sequence, whose killed loads left ids anywhere below the
// newest.
const legacyOrphanCondition = "load_id NOT IN (SELECT load_id FROM ingest_files WHERE load_id IS NOT NULL)"

// createLoadIDSequence creates the load id sequence, starting past every load id in use (a
// database from before the sequence has ids already); created says whether it had to.
func (db *DB) createLoadIDSequence(ctx context.Context) (created bool, err error) {
	if exists, err := db.hasLoadIDSequence(ctx); err != nil || exists {
		return false, err
	}
	var maxID int64
	for _, t := range append(db.loadTables(), ingestFilesTable.Name) {
		var m sql.NullInt64
		if err := db.QueryRowContext(ctx, "SELECT max(load_id) FROM "+t).Scan(&m); err != nil {
			return false, fmt.Errorf("reading the load ids of %s: %w", t, err)
		}
		maxID = max(maxID, m.Int64)
	}
	// DDL takes no parameters; maxID is a number read just above.
	if _, err := db.ExecContext(ctx, fmt.Sprintf("CREATE SEQUENCE %s START WITH %d", LoadIDSequence, maxID+1)); err != nil {
		return false, fmt.Errorf("creating the load id sequence in %s: %w", db.Path, err)
	}
	return true, nil
}

// hasLoadIDSequence reports whether the database has the load id sequence.
func (db *DB) hasLoadIDSequence(ctx context.Context) (bool, error) {
	var exists bool
	err := db.QueryRowContext(ctx, "SELECT count(*) > 0 FROM duckdb_sequences() WHERE database_name = current_database() AND sequence_name = $1",
		LoadIDSequence).Scan(&exists)
	return exists, err
}

// orphanRows counts, per table, the rows of loads that never committed whole; condition is
// orphanCondition, or legacyOrphanCondition for a database from before the sequence.
func (db *DB) orphanRows(ctx context.Context, condition string) (map[string]int64, error) {
	out := map[string]int64{}
	for _, t := range db.loadTables() {
		var n int64
		if err := db.QueryRowContext(ctx, "SELECT count(*) FROM "+t+" WHERE "+condition).Scan(&n); err != nil {
			return nil, fmt.Errorf("checking %s for rows of interrupted loads: %w", t, err)
		}
		if n > 0 {
			out[t] = n
		}
	}
	return out, nil
}

// repair deletes, in one transaction, the rows of loads that never committed whole (condition,
// as for orphanRows), and returns how many it deleted per table.
func (db *DB) repair(ctx context.Context, condition string) (map[string]int64, error) {
	orphans, err := db.orphanRows(ctx, condition)
	if err != nil || len(orphans) == 0 {
		return nil, err
	}
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return nil, err
	}
	defer tx.Rollback()
	deleted := map[string]int64{}
	for t := range orphans {
		res, err := tx.ExecContext(ctx, "DELETE FROM "+t+" WHERE "+condition)
		if err != nil {
			return nil, fmt.Errorf("removing the rows of interrupted loads from %s: %w", t, err)
		}
		deleted[t], _ = res.RowsAffected()
	}
	if err := tx.Commit(); err != nil {
		return nil, fmt.Errorf("removing the rows of interrupted loads from %s: %w", db.Path, err)
	}
	return deleted, nil
}
