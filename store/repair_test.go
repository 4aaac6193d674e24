package store

import (
	"context"
	"maps"
	"path/filepath"
	"testing"
)

// TestRepairRemovesInterruptedLoads: rows whose load has no ingest_files row are removed when
// the database is opened, read-write or read-only; committed loads are kept.
func TestRepairRemovesInterruptedLoads(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "k.duckdb")
	for _, readOnly := range []bool{false, true} {
		writeDatabase(t, path,
			"DELETE FROM ingest_files", "DELETE FROM observations", "DELETE FROM ingest_errors",
			"INSERT INTO ingest_files (load_id, source_file) VALUES (1, 'a.log')",
			"INSERT INTO observations (id, load_id) VALUES ('a', 1), ('b', 1)",
			"INSERT INTO observations (id, load_id) VALUES ('c', 2), ('d', 2), ('e', 2)",
			"INSERT INTO ingest_errors (line, load_id) VALUES (3, 2)")
		db, err := Open(ctx, path, testSchema, Options{ReadOnly: readOnly})
		if err != nil {
			t.Fatal(err)
		}
		want := map[string]int64{"observations": 3, "ingest_errors": 1}
		if !maps.Equal(db.Repaired, want) {
			t.Errorf("read-only %v: repaired %v, want %v", readOnly, db.Repaired, want)
		}
		var kept, orphans, loads int
		db.QueryRowContext(ctx, "SELECT (SELECT count(*) FROM observations WHERE load_id = 1), (SELECT count(*) FROM observations WHERE load_id = 2), (SELECT count(*) FROM ingest_files)").Scan(&kept, &orphans, &loads)
		if kept != 2 || orphans != 0 || loads != 1 {
			t.Errorf("read-only %v: after the repair %d observations of load 1, %d of load 2, %d loads", readOnly, kept, orphans, loads)
		}
		db.Close()
	}
}

// TestLoadIDSequenceStartsPastExistingIDs: a database from before the sequence (ids up to 7,
// some only in rows of an interrupted load) gets ids from 8 on.
func TestLoadIDSequenceStartsPastExistingIDs(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "k.duckdb")
	writeDatabase(t, path,
		"DROP SEQUENCE "+LoadIDSequence,
		"INSERT INTO ingest_files (load_id) VALUES (5)",
		"INSERT INTO observations (id, load_id) VALUES ('n', 7)")
	db, err := Open(ctx, path, testSchema, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var id int64
	if err := db.QueryRowContext(ctx, "SELECT nextval('"+LoadIDSequence+"')").Scan(&id); err != nil || id != 8 {
		t.Errorf("next load id %d (%v), want 8", id, err)
	}
}

// TestRepairOfADatabaseFromBeforeTheSequence: in a database from before the load id sequence, a
// killed load's id may lie below a committed one's; its rows are found wherever their id is, by
// a read-write and a read-only open alike.
func TestRepairOfADatabaseFromBeforeTheSequence(t *testing.T) {
	ctx := context.Background()
	for _, readOnly := range []bool{false, true} {
		path := filepath.Join(t.TempDir(), "k.duckdb")
		writeDatabase(t, path,
			"DROP SEQUENCE "+LoadIDSequence,
			"INSERT INTO ingest_files (load_id, source_file) VALUES (1, 'a.log'), (3, 'c.log')",
			"INSERT INTO observations (id, load_id) VALUES ('a', 1), ('b', 2), ('c', 3)")
		db, err := Open(ctx, path, testSchema, Options{ReadOnly: readOnly})
		if err != nil {
			t.Fatal(err)
		}
		if want := map[string]int64{"observations": 1}; !maps.Equal(db.Repaired, want) {
			t.Errorf("read-only %v: repaired %v, want %v", readOnly, db.Repaired, want)
		}
		var left string
		db.QueryRowContext(ctx, "SELECT string_agg(id, ',' ORDER BY id) FROM observations").Scan(&left)
		if left != "a,c" {
			t.Errorf("read-only %v: observations %q after the repair, want a,c", readOnly, left)
		}
		db.Close()
	}
}

// writeDatabase opens the database at path for writing (making it if need be), runs statements
// on it and closes it.
func writeDatabase(t *testing.T, path string, statements ...string) {
	t.Helper()
	ctx := context.Background()
	db, err := Open(ctx, path, testSchema, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	for _, stmt := range statements {
		if _, err := db.ExecContext(ctx, stmt); err != nil {
			t.Fatalf("%s: %v", stmt, err)
		}
	}
}
