package store

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"
)

func openMemory(t *testing.T) *DB {
	t.Helper()
	db, err := Open(context.Background(), InMemory, testSchema, Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

func TestRunsRoundTrip(t *testing.T) {
	ctx := context.Background()
	db := openMemory(t)
	t1 := time.Date(2026, 11, 21, 5, 0, 0, 0, time.UTC)
	t2 := t1.Add(time.Hour)
	for _, r := range []Run{{Started: t1, ExitCode: 0, Critical: 2}, {Started: t2, Since: &t1, ExitCode: 1}} {
		if err := db.RecordRun(ctx, r); err != nil {
			t.Fatal(err)
		}
	}
	var critical int
	if err := db.QueryRowContext(ctx, "SELECT critical FROM runs WHERE started_at = $1", t1).Scan(&critical); err != nil || critical != 2 {
		t.Errorf("critical %d, %v", critical, err)
	}
	ok, err := db.LastRunFinishedWithout(ctx, 1)
	if err != nil || ok == nil {
		t.Fatalf("last run without exit 1: %v, %v", ok, err)
	}
	if none, err := db.LastRunFinishedWithout(ctx, 0); err != nil || none == nil {
		t.Errorf("last run without exit 0: %v, %v", none, err)
	}
}

func TestCountAndSelectRows(t *testing.T) {
	ctx := context.Background()
	db := openMemory(t)
	for _, at := range []string{"2026-11-21T05:00:00Z", "2026-11-21T06:00:00Z", "2026-11-21T07:00:00Z"} {
		if _, err := db.ExecContext(ctx, "INSERT INTO runs (started_at) VALUES ($1::TIMESTAMPTZ)", at); err != nil {
			t.Fatal(err)
		}
	}
	counts, err := testSchema.CountRows(ctx, db.DB)
	if err != nil || len(counts) != len(testSchema) {
		t.Fatalf("%d counts, %v", len(counts), err)
	}
	for _, c := range counts {
		if want := map[bool]int64{true: 3, false: 0}[c.Table == "runs"]; c.Rows != want {
			t.Errorf("%s: %d rows, want %d", c.Table, c.Rows, want)
		}
	}
	if has, err := testSchema.HasRows(ctx, db.DB, "runs", nil, nil); err != nil || !has {
		t.Errorf("runs has rows: %v, %v", has, err)
	}
	if has, err := testSchema.HasRows(ctx, db.DB, "observations", nil, nil); err != nil || has {
		t.Errorf("observations has rows: %v, %v", has, err)
	}
	if _, err := testSchema.HasRows(ctx, db.DB, "runs; DROP TABLE runs", nil, nil); err == nil || !strings.Contains(err.Error(), "not a kubesift table") {
		t.Errorf("an unknown table: %v", err)
	}
	runs, _ := testSchema.Lookup("runs")
	since, until := time.Date(2026, 11, 21, 5, 30, 0, 0, time.UTC), time.Date(2026, 11, 21, 7, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		since, until *time.Time
		want         int
	}{{nil, nil, 3}, {&since, nil, 2}, {nil, &since, 1}, {&since, &until, 2}} {
		var n int
		if err := db.QueryRowContext(ctx, "SELECT count(*) FROM ("+SelectRows(runs, tc.since, tc.until)+")").Scan(&n); err != nil || n != tc.want {
			t.Errorf("since %v until %v: %d rows, %v; want %d", tc.since, tc.until, n, err, tc.want)
		}
		if n, err := testSchema.RowCountIn(ctx, db.DB, "runs", tc.since, tc.until); err != nil || n != int64(tc.want) {
			t.Errorf("RowCountIn since %v until %v: %d, %v; want %d", tc.since, tc.until, n, err, tc.want)
		}
	}
	before := time.Date(2026, 11, 21, 4, 0, 0, 0, time.UTC)
	if has, err := testSchema.HasRows(ctx, db.DB, "runs", &since, &until); err != nil || !has {
		t.Errorf("runs has rows in the window: %v, %v", has, err)
	}
	if has, err := testSchema.HasRows(ctx, db.DB, "runs", nil, &before); err != nil || has {
		t.Errorf("runs has rows before the first: %v, %v", has, err)
	}
	if _, err := testSchema.RowCountIn(ctx, db.DB, "runs; DROP TABLE runs", &since, nil); err == nil || !strings.Contains(err.Error(), "not a kubesift table") {
		t.Errorf("RowCountIn of an unknown table: %v", err)
	}
	errs, _ := testSchema.Lookup("ingest_errors")
	if q := SelectRows(errs, &since, &until); q != "SELECT * FROM ingest_errors" {
		t.Errorf("a table without time column: %s", q)
	}
}

// TestClusters: the clusters a table's rows name, "" for the unknown one; none for a table
// without a cluster column.
func TestClusters(t *testing.T) {
	ctx := context.Background()
	db := datasetDB(t)
	if got, err := datasetSchema.Clusters(ctx, db.DB, "audit_events", nil, nil); err != nil || !slices.Equal(got, []string{"", "prod/eu 1"}) {
		t.Errorf("audit_events: %q, %v", got, err)
	}
	long := time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC)
	ago := long.Add(time.Hour)
	if got, err := datasetSchema.Clusters(ctx, db.DB, "audit_events", &long, &ago); err != nil || len(got) != 0 {
		t.Errorf("audit_events in a window before its rows: %q, %v", got, err)
	}
	if got, err := datasetSchema.Clusters(ctx, db.DB, "conntrack_limits", nil, nil); err != nil || len(got) != 0 {
		t.Errorf("a table without a cluster column: %q, %v", got, err)
	}
	if _, err := db.ExecContext(ctx, "DELETE FROM audit_events"); err != nil {
		t.Fatal(err)
	}
	if got, err := datasetSchema.Clusters(ctx, db.DB, "audit_events", nil, nil); err != nil || len(got) != 0 {
		t.Errorf("an empty table: %q, %v", got, err)
	}
}
