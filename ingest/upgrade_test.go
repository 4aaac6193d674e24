package ingest

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/kubesift/kubesift/store"
)

// TestOpenAddsColumnsAnOlderVersionLacked: a database whose audit_events predates the cluster,
// apiserver and envelope columns, and whose conntrack and object tables predate cluster, gets them
// on a read-write open, keeping its rows (NULL there).
func TestOpenAddsColumnsAnOlderVersionLacked(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "k.duckdb")
	db, err := store.Open(ctx, path, Schema(), store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	for _, stmt := range []string{
		"ALTER TABLE audit_events DROP COLUMN cluster", "ALTER TABLE audit_events DROP COLUMN apiserver",
		"ALTER TABLE audit_events DROP COLUMN envelope",
		"ALTER TABLE conntrack_entries DROP COLUMN cluster", "ALTER TABLE endpoint_addresses DROP COLUMN cluster",
		"INSERT INTO ingest_files (load_id, source_file) VALUES (1, 'old.log')",
		"INSERT INTO audit_events (audit_id, load_id) VALUES ('old', 1)",
	} {
		if _, err := db.ExecContext(ctx, stmt); err != nil {
			t.Fatalf("%s: %v", stmt, err)
		}
	}
	db.Close()
	if db, err = store.Open(ctx, path, Schema(), store.Options{}); err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.ExecContext(ctx, "INSERT INTO audit_events BY NAME SELECT 'new' AS audit_id, 'prod' AS cluster, 'a-1' AS apiserver, 'json-lines' AS envelope"); err != nil {
		t.Fatalf("loading into the upgraded table: %v", err)
	}
	// the cluster column comes back last, where loads (which insert in column order) put it
	for _, table := range []string{"conntrack_entries", "endpoint_addresses"} {
		var last string
		if err := db.QueryRowContext(ctx, "SELECT column_name FROM duckdb_columns() WHERE table_name = $1 ORDER BY column_index DESC LIMIT 1", table).Scan(&last); err != nil {
			t.Fatal(err)
		}
		if last != "cluster" {
			t.Errorf("%s: last column after the upgrade is %s, want cluster", table, last)
		}
	}
	var old, cluster string
	var oldCluster *string
	if err := db.QueryRowContext(ctx, "SELECT a.audit_id, a.cluster, b.cluster FROM audit_events a, audit_events b WHERE a.audit_id = 'old' AND b.audit_id = 'new'").Scan(&old, &oldCluster, &cluster); err != nil {
		t.Fatal(err)
	}
	if old != "old" || oldCluster != nil || cluster != "prod" {
		t.Errorf("after the upgrade: %q cluster %v, new row's cluster %q", old, oldCluster, cluster)
	}
}
