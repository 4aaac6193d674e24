package store

import (
	"context"
	"path/filepath"
	"testing"
)

// TestOpenAddsColumnsAnOlderVersionLacked: a database whose observations table predates the
// zone column gets it on a read-write open, keeping its rows (NULL there).
func TestOpenAddsColumnsAnOlderVersionLacked(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "k.duckdb")
	older := observationsTable
	older.Columns = []Column{observationsTable.Columns[0], observationsTable.Columns[1], observationsTable.Columns[3]}
	db, err := Open(ctx, path, NewSchema(older), Options{})
	if err != nil {
		t.Fatal(err)
	}
	for _, stmt := range []string{
		"INSERT INTO ingest_files (load_id, source_file) VALUES (1, 'old.log')",
		"INSERT INTO observations (id, load_id) VALUES ('old', 1)",
	} {
		if _, err := db.ExecContext(ctx, stmt); err != nil {
			t.Fatalf("%s: %v", stmt, err)
		}
	}
	db.Close()
	if db, err = Open(ctx, path, testSchema, Options{}); err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.ExecContext(ctx, "INSERT INTO observations BY NAME SELECT 'new' AS id, 3 AS zone"); err != nil {
		t.Fatalf("loading into the upgraded table: %v", err)
	}
	var old string
	var oldZone *int64
	var zone int64
	if err := db.QueryRowContext(ctx, "SELECT a.id, a.zone, b.zone FROM observations a, observations b WHERE a.id = 'old' AND b.id = 'new'").Scan(&old, &oldZone, &zone); err != nil {
		t.Fatal(err)
	}
	if old != "old" || oldZone != nil || zone != 3 {
		t.Errorf("after the upgrade: %q zone %v, new row's zone %d", old, oldZone, zone)
	}
}
