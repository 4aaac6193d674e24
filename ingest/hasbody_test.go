package ingest

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/kubesift/kubesift/store"
)

// TestHasBodySaysWhetherTheEventHasABody: audit_events.has_body, which rules test instead of
// reading the bodies, is true exactly where request_object or response_object holds one, in every
// recording of samples/ (Secrets' bodies dropped, so false there) and with --keep-secrets (kept,
// so true).
func TestHasBodySaysWhetherTheEventHasABody(t *testing.T) {
	for _, keep := range []bool{false, true} {
		db := openTestDB(t)
		ingestFiles(t, db, Options{KeepSecrets: keep, ClusterPerDir: true}, "../samples/", "testdata/secrets-outside-bodies.good.log")
		q := `SELECT count(*) FILTER (WHERE has_body), count(*) FILTER (WHERE NOT has_body),
			count(*) FILTER (WHERE has_body IS DISTINCT FROM (request_object IS NOT NULL OR response_object IS NOT NULL)),
			count(*) FILTER (WHERE redacted AND has_body) FROM audit_events`
		var with, without, wrong, redacted int64
		if err := db.QueryRowContext(context.Background(), q).Scan(&with, &without, &wrong, &redacted); err != nil {
			t.Fatal(err)
		}
		if with == 0 || without == 0 || wrong != 0 || redacted != 0 {
			t.Errorf("--keep-secrets=%v: %d events with a body, %d without, %d where has_body is wrong, %d redacted with a body",
				keep, with, without, wrong, redacted)
		}
	}
}

// TestOpenBackfillsHasBody: a database an older kubesift wrote gains has_body on a read-write
// open, filled from the bodies of the rows it holds.
func TestOpenBackfillsHasBody(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "k.duckdb")
	db, err := store.Open(ctx, path, Schema(), store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	for _, stmt := range []string{
		"ALTER TABLE audit_events DROP COLUMN has_body",
		"INSERT INTO ingest_files (load_id, source_file) VALUES (1, 'old.log')",
		`INSERT INTO audit_events (audit_id, request_object, response_object, load_id) VALUES
			('none', NULL, NULL, 1), ('request', '{"kind":"Pod"}', NULL, 1), ('response', NULL, '{"kind":"Pod"}', 1)`,
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
	got := queryStrings(t, db, "SELECT audit_id || ' ' || has_body FROM audit_events ORDER BY audit_id")
	if len(got) != 3 || got[0] != "none false" || got[1] != "request true" || got[2] != "response true" {
		t.Errorf("after the upgrade: %q, want none false, request true, response true", got)
	}
}
