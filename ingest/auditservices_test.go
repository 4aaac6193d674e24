package ingest

import (
	"bytes"
	"compress/gzip"
	"context"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"testing"

	"github.com/kubesift/kubesift/store"
)

// auditServicesDiffer counts the rows in which audit_services and what its Derive makes of all
// of audit_events differ, both ways.
func auditServicesDiffer(t *testing.T, db *store.DB) int64 {
	t.Helper()
	return derivedDiffers(t, db, "audit_services")
}

// derivedDiffers counts the rows in which the derived table name and what its Derive makes of all
// rows differ, both ways.
func derivedDiffers(t *testing.T, db *store.DB, name string) int64 {
	t.Helper()
	table, ok := Schema().Lookup(name)
	if !ok || table.Derive == "" {
		t.Fatalf("no derived table %s in the schema", name)
	}
	return queryInt(t, db, `SELECT (SELECT count(*) FROM (FROM `+name+` EXCEPT ALL (`+table.Derive+`)))
		+ (SELECT count(*) FROM ((`+table.Derive+`) EXCEPT ALL FROM `+name+`))`)
}

// TestEndpointObjectsHoldTheLoadedObservations: an ingest derives endpoint_objects from the
// endpoint states of the snapshots, watch streams and audit bodies it loaded: one row per load and
// object, the objects of the watch streams (kubectl get -w) observed more than once, those of a
// plain snapshot once.
func TestEndpointObjectsHoldTheLoadedObservations(t *testing.T) {
	db := openTestDB(t)
	ingestFiles(t, db, Options{}, filepath.Join("..", "samples", "flapping"))
	if n := derivedDiffers(t, db, "endpoint_objects"); n != 0 {
		t.Errorf("%d rows of endpoint_objects differ from what endpoint_addresses make", n)
	}
	for _, c := range []struct {
		what, query string
		want        int64
	}{
		{"loads and objects of endpoint_addresses, not in endpoint_objects",
			`SELECT count(*) FROM (SELECT DISTINCT load_id, source, kind, namespace, name FROM endpoint_addresses
			 EXCEPT SELECT load_id, source, kind, namespace, name FROM endpoint_objects)`, 0},
		{"objects of the watch streams observed once",
			`SELECT count(*) FROM endpoint_objects WHERE contains(source_file, 'watch') AND NOT repeated`, 0},
		{"objects of the plain snapshots observed more than once",
			`SELECT count(*) FROM endpoint_objects WHERE contains(source_file, 'snapshots') AND repeated`, 0},
	} {
		if got := queryInt(t, db, c.query); got != c.want {
			t.Errorf("%s: %d, want %d", c.what, got, c.want)
		}
	}
	for _, source := range []string{"watch", "snapshots", "audit.log"} {
		if n := queryInt(t, db, `SELECT count(*) FROM endpoint_objects WHERE contains(source_file, '`+source+`')`); n == 0 {
			t.Errorf("no objects of %s in endpoint_objects", source)
		}
	}
}

// TestAuditServicesHoldTheLoadedServiceRequests: each load adds to audit_services the Service
// requests of the events it kept: a second copy of a log with one more Service request (the
// others duplicates, removed) adds that one.
func TestAuditServicesHoldTheLoadedServiceRequests(t *testing.T) {
	dir := t.TempDir()
	first := filepath.Join("..", "samples", "tricky-healthy", "audit.log.gz")
	lines := bytes.SplitAfter(gunzip(t, first), []byte("\n"))
	i := slices.IndexFunc(lines, func(l []byte) bool { return bytes.Contains(l, []byte(`"resource":"services"`)) })
	if i < 0 {
		t.Fatal("no Service request in the sample")
	}
	extra := regexp.MustCompile(`"auditID":"[^"]*"`).ReplaceAll(lines[i], []byte(`"auditID":"one-more"`))
	second := filepath.Join(dir, "again.log")
	// the new request first: a file that begins as the first one did is read on from where it ended
	if err := os.WriteFile(second, slices.Concat(extra, slices.Concat(lines...)), 0o644); err != nil {
		t.Fatal(err)
	}
	db := openTestDB(t)
	res := ingestFiles(t, db, Options{}, first, second)
	if len(res) != 2 || res[1].Duplicates == 0 || res[1].Rows != 1 {
		t.Fatalf("loads %+v, want the second one all duplicates but one", res)
	}
	services := queryInt(t, db, `SELECT count(*) FROM audit_events WHERE resource = 'services'`)
	if got := queryInt(t, db, `SELECT count(*) FROM audit_services`); got != services || services == 0 {
		t.Errorf("audit_services has %d rows, audit_events %d Service requests", got, services)
	}
	if n := auditServicesDiffer(t, db); n != 0 {
		t.Errorf("%d rows of audit_services differ from the Service requests of audit_events", n)
	}
	if n := queryInt(t, db, `SELECT count(*) FROM audit_services WHERE uid IS NOT NULL`); n == 0 {
		t.Error("no Service request in audit_services carries its uid")
	}
}

// TestOpenFillsAuditServicesOfAnOlderDatabase: a database from before audit_services gets the
// table on a read-write open, filled from the audit events it holds.
func TestOpenFillsAuditServicesOfAnOlderDatabase(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "k.duckdb")
	db, err := store.Open(ctx, path, Schema(), store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	ingestFiles(t, db, Options{}, filepath.Join("..", "samples", "tricky-healthy", "audit.log.gz"))
	if _, err := db.ExecContext(ctx, "DROP TABLE audit_services"); err != nil {
		t.Fatal(err)
	}
	db.Close()
	if db, err = store.Open(ctx, path, Schema(), store.Options{}); err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if !slices.Contains(db.Upgraded, "audit_services") {
		t.Errorf("upgraded %v, want audit_services among them", db.Upgraded)
	}
	if n := queryInt(t, db, `SELECT count(*) FROM audit_services`); n == 0 {
		t.Error("audit_services is empty after the upgrade")
	}
	if n := auditServicesDiffer(t, db); n != 0 {
		t.Errorf("%d rows of audit_services differ from the Service requests of audit_events", n)
	}
}

// gunzip returns the decompressed content of the gzip file path.
func gunzip(t *testing.T, path string) []byte {
	t.Helper()
	zr, err := gzip.NewReader(bytes.NewReader(readFile(t, path)))
	if err != nil {
		t.Fatal(err)
	}
	out, err := io.ReadAll(zr)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// TestOpenDerivesTheLoadsOfAnOlderKubesift: the loads an older kubesift made into a database that
// has audit_services (it derives nothing) get their rows on the next open, read-only too.
func TestOpenDerivesTheLoadsOfAnOlderKubesift(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "k.duckdb")
	db, err := store.Open(ctx, path, Schema(), store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	ingestFiles(t, db, Options{}, filepath.Join("..", "samples", "healthy", "audit.log"),
		filepath.Join("..", "samples", "tricky-healthy", "audit.log.gz"))
	// the second load as an older kubesift leaves it: no rows in audit_services
	if _, err := db.ExecContext(ctx, "DELETE FROM audit_services WHERE load_id = (SELECT max(load_id) FROM audit_events)"); err != nil {
		t.Fatal(err)
	}
	if n := auditServicesDiffer(t, db); n == 0 {
		t.Fatal("the older kubesift's load left nothing to derive")
	}
	db.Close()
	// a read-only open (analyze) takes the write lock to derive them, then reads
	if db, err = store.Open(ctx, path, Schema(), store.Options{ReadOnly: true}); err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(db.Derived, "audit_services") || len(db.Upgraded) != 0 {
		t.Errorf("derived %v, upgraded %v; want audit_services derived, nothing upgraded", db.Derived, db.Upgraded)
	}
	if n := auditServicesDiffer(t, db); n != 0 {
		t.Errorf("%d rows of audit_services differ from the Service requests of audit_events", n)
	}
	db.Close()
	if db, err = store.Open(ctx, path, Schema(), store.Options{ReadOnly: true}); err != nil { // nothing left to derive
		t.Fatal(err)
	}
	defer db.Close()
	if len(db.Upgraded) != 0 || len(db.Derived) != 0 {
		t.Errorf("upgraded %v, derived %v on an open with nothing to derive", db.Upgraded, db.Derived)
	}
}
