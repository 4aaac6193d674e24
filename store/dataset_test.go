package store

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/kubesift/kubesift/internal/testutil"
)

// The dataset tests' tables: events with a cluster column and the column types a view must
// reproduce, and limits without one.
var (
	datasetEvents = Table{Name: "audit_events", Evidence: "audit", TimeColumn: "stage_at", Columns: []Column{
		{Name: "audit_id", Type: "VARCHAR", Doc: ""}, {Name: "stage", Type: "VARCHAR", Doc: ""}, {Name: "verb", Type: "VARCHAR", Doc: ""}, {Name: "cluster", Type: "VARCHAR", Doc: ""},
		{Name: "stage_at", Type: "TIMESTAMPTZ", Doc: ""}, {Name: "annotations", Type: "MAP(VARCHAR, VARCHAR)", Doc: ""}, {Name: "request_object", Type: "JSON", Doc: ""},
		{Name: "groups", Type: "VARCHAR[]", Doc: ""}, {Name: "load_id", Type: "BIGINT", Doc: ""},
	}}
	datasetLimits = Table{Name: "conntrack_limits", Evidence: "conntrack", TimeColumn: "captured_at", Columns: []Column{
		{Name: "node", Type: "VARCHAR", Doc: ""}, {Name: "captured_at", Type: "TIMESTAMPTZ", Doc: ""}, {Name: "load_id", Type: "BIGINT", Doc: ""},
	}}
	datasetSchema = NewSchema(datasetEvents, datasetLimits)
)

// datasetDB returns a database file with audit events of clusters "prod/eu 1" and "" (unknown) and
// conntrack limits (a table without a cluster column) over two days.
func datasetDB(t *testing.T) *DB {
	t.Helper()
	ctx := context.Background()
	db, err := Open(ctx, filepath.Join(t.TempDir(), "k.duckdb"), datasetSchema, Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	for _, stmt := range []string{
		`INSERT INTO audit_events (audit_id, stage, verb, cluster, stage_at, annotations, request_object, groups)
		 SELECT 'id-' || i, 'ResponseComplete', 'get', CASE WHEN i % 2 = 0 THEN 'prod/eu 1' ELSE '' END,
		        TIMESTAMPTZ '2026-11-21 20:00:00+00' + i * INTERVAL 1 hour, MAP {'k': 'v'}, '{"kind":"Pod"}', ['system:masters']
		 FROM range(10) r(i)`,
		`INSERT INTO conntrack_limits (node, captured_at) VALUES ('n1', TIMESTAMPTZ '2026-11-21 23:00:00+00')`,
	} {
		if _, err := db.ExecContext(ctx, stmt); err != nil {
			t.Fatal(err)
		}
	}
	return db
}

func datasetFiles(t *testing.T, dir string) []string {
	t.Helper()
	var files []string
	err := filepath.WalkDir(dir, func(path string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			rel, _ := filepath.Rel(dir, path)
			files = append(files, rel)
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return files
}

func count(t *testing.T, db *DB, query string) int64 {
	t.Helper()
	var n int64
	if err := db.QueryRowContext(context.Background(), query).Scan(&n); err != nil {
		t.Fatalf("%s: %v", query, err)
	}
	return n
}

func TestExportDatasetLayoutAndReplace(t *testing.T) {
	ctx := context.Background()
	db := datasetDB(t)
	dir := t.TempDir()
	tables := []Table{datasetEvents, datasetLimits}
	parts, _, err := db.ExportDataset(ctx, dir, tables, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		"audit_events/cluster=/date=2026-11-21/part-0.parquet",
		"audit_events/cluster=/date=2026-11-22/part-0.parquet",
		"audit_events/cluster=prod%2Feu%201/date=2026-11-21/part-0.parquet",
		"audit_events/cluster=prod%2Feu%201/date=2026-11-22/part-0.parquet",
		"conntrack_limits/cluster=/date=2026-11-21/part-0.parquet",
	}
	if got := datasetFiles(t, dir); strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("files:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if len(parts) != 5 || parts[0] != (DatasetPartition{Table: "audit_events", Cluster: "", Date: "2026-11-21"}) {
		t.Fatalf("partitions %+v", parts)
	}

	// Exporting one day again replaces that day (with all of its rows, whatever the window's
	// hours) and leaves the other day alone.
	if _, err := db.ExecContext(ctx, "DELETE FROM audit_events WHERE audit_id IN ('id-0', 'id-8')"); err != nil {
		t.Fatal(err)
	}
	since := time.Date(2026, 11, 21, 23, 30, 0, 0, time.UTC)
	until := since.Add(10 * time.Minute)
	parts, _, err = db.ExportDataset(ctx, dir, tables, &since, &until)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range parts {
		if !p.Replaced || p.Date != "2026-11-21" {
			t.Errorf("re-export wrote %+v, want the replaced day 2026-11-21", p)
		}
	}
	if got := datasetFiles(t, dir); len(got) != len(want) {
		t.Fatalf("after re-export: %v", got)
	}
	ds, err := OpenDataset(ctx, dir, datasetSchema, "prod/eu 1", nil, nil, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer ds.Close()
	// prod/eu 1: ids 0,2 on the 21st (0 deleted and replaced), 4,6,8 on the 22nd (8 deleted, not re-exported)
	if n := count(t, ds, "SELECT count(*) FROM audit_events"); n != 4 {
		t.Errorf("cluster prod/eu 1 has %d events after re-exporting 2026-11-21, want 4", n)
	}
}

func TestOpenDatasetViewsPruneAndSandbox(t *testing.T) {
	ctx := context.Background()
	db, dir := exportedDataset(t)
	// another cluster of the fleet, whose files the views must not open, not even for their schema
	other := filepath.Join(dir, "audit_events", "cluster=other", "date=2026-11-22")
	if err := os.MkdirAll(other, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(other, "part-0.parquet"), []byte("not parquet"), 0o600); err != nil {
		t.Fatal(err)
	}
	day := time.Date(2026, 11, 22, 0, 0, 0, 0, time.UTC)
	ds, err := OpenDataset(ctx, dir, datasetSchema, "", &day, &day, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer ds.Close()
	// the same rows, columns and types as the database, restricted to the unknown cluster's 2026-11-22
	if n := count(t, ds, "SELECT count(*) FROM audit_events WHERE cluster = '' AND (request_object->>'kind') = 'Pod' AND annotations['k'] = 'v' AND groups[1] = 'system:masters'"); n != 3 {
		t.Errorf("%d events of the unknown cluster on 2026-11-22, want 3", n)
	}
	if n := count(t, ds, "SELECT count(*) FROM conntrack_limits"); n != 0 {
		t.Errorf("conntrack_limits of 2026-11-21 seen in 2026-11-22: %d", n)
	}
	for _, table := range datasetSchema {
		if got, want := columnTypes(t, ds, table.Name), columnTypes(t, db, table.Name); got != want {
			t.Errorf("view %s:\n%s\nwant (as in the database)\n%s", table.Name, got, want)
		}
	}
	var view string
	if err := ds.QueryRowContext(ctx, "SELECT sql FROM duckdb_views() WHERE view_name = 'audit_events'").Scan(&view); err != nil {
		t.Fatal(err)
	}
	if got := regexp.MustCompile(`cluster=[^/']*/date=[^/']*`).FindAllString(view, -1); !slices.Equal(got, []string{"cluster=/date=2026-11-22"}) {
		t.Errorf("the view of the unknown cluster's 2026-11-22 reads the files of %v", got)
	}
	var cached bool
	if err := ds.QueryRowContext(ctx, "SELECT current_setting('parquet_metadata_cache')").Scan(&cached); err != nil || !cached {
		t.Errorf("the files' metadata is read again by every query: parquet_metadata_cache %v, %v", cached, err)
	}

	os.WriteFile(filepath.Join(t.TempDir(), "secret.csv"), []byte("a\n1\n"), 0o600)
	sb, err := ds.Sandboxed(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer sb.Close()
	var n int64
	if err := sb.QueryRowContext(ctx, "SELECT count(*) FROM audit_events").Scan(&n); err != nil || n != 3 {
		t.Errorf("sandboxed view: %d rows, %v", n, err)
	}
	outside, _ := filepath.Abs("dataset_test.go")
	for _, q := range []string{
		"SELECT count(*) FROM read_text(" + quote(outside) + ")",
		"SELECT count(*) FROM read_text(" + quote(dir+"/../") + " || '*')",
	} {
		if err := sb.QueryRowContext(ctx, q).Scan(&n); err == nil {
			t.Errorf("%s ran in the dataset's sandbox", q)
		}
	}
}

func TestDatasetClusters(t *testing.T) {
	_, dir := exportedDataset(t)
	got, err := DatasetClusters(dir, datasetSchema)
	if err != nil || strings.Join(got, ",") != ",prod/eu 1" {
		t.Fatalf("clusters %q, %v", got, err)
	}
	if _, err := DatasetClusters(filepath.Join(dir, "missing"), datasetSchema); err == nil {
		t.Error("a missing dataset has no error")
	}
}

// TestDatasetDayBehindASymlink: a day directory moved to another volume and linked back is read
// like any other; a link to nothing is an error naming it, not a day left out.
func TestDatasetDayBehindASymlink(t *testing.T) {
	ctx := context.Background()
	_, dir := exportedDataset(t)
	day := filepath.Join(dir, "audit_events", "cluster=", "date=2026-11-22")
	moved := filepath.Join(t.TempDir(), "date=2026-11-22")
	if err := os.Rename(day, moved); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(moved, day); err != nil {
		t.Fatal(err)
	}
	at := time.Date(2026, 11, 22, 0, 0, 0, 0, time.UTC)
	ds, err := OpenDataset(ctx, dir, datasetSchema, "", &at, &at, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if n := count(t, ds, "SELECT count(*) FROM audit_events"); n != 3 {
		t.Errorf("%d events of the linked day, want 3", n)
	}
	if want := []string{"audit_events", "conntrack_limits"}; !slices.Equal(ds.OutsideWindow, want) {
		t.Errorf("tables with days outside the window %v, want %v (the 21st's)", ds.OutsideWindow, want)
	}
	sb, err := ds.Sandboxed(ctx) // where the rules read it: only dir is allowed
	if err != nil {
		t.Fatal(err)
	}
	var n int64
	if err := sb.QueryRowContext(ctx, "SELECT count(*) FROM audit_events WHERE audit_id IS NOT NULL").Scan(&n); err != nil || n != 3 {
		t.Errorf("sandboxed: %d events of the linked day, %v", n, err)
	}
	sb.Close()
	ds.Close()
	if err := os.RemoveAll(moved); err != nil {
		t.Fatal(err)
	}
	if ds, err := OpenDataset(ctx, dir, datasetSchema, "", &at, &at, Options{}); err == nil || !strings.Contains(err.Error(), day) {
		if err == nil {
			ds.Close()
		}
		t.Errorf("a day linked to nothing: %v", err)
	}
	// a window of another day does not read it: the dataset opens, and the day is not counted as
	// one outside the window
	other := at.Add(-24 * time.Hour)
	ds, err = OpenDataset(ctx, dir, datasetSchema, "", &other, &other, Options{})
	if err != nil {
		t.Fatalf("a window of 2026-11-21, the link to nothing outside it: %v", err)
	}
	defer ds.Close()
	if len(ds.OutsideWindow) != 0 {
		t.Errorf("tables with days outside the window %v, want none: the only other day links to nothing", ds.OutsideWindow)
	}
}

// TestPartitionPath: a partition's path escapes its cluster as DuckDB's partitioned write does,
// and DuckDB's Hive reader gives the cluster back.
func TestPartitionPath(t *testing.T) {
	ctx := context.Background()
	db, err := Open(ctx, InMemory, datasetSchema, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	dir := t.TempDir()
	const cluster = "prod/eu 1=a:b@c+d&ü~h.i_j-k"
	if _, err := db.ExecContext(ctx, fmt.Sprintf(`COPY (SELECT %s AS cluster, DATE '2026-11-21' AS date, 1 AS v)
		TO %s (FORMAT parquet, PARTITION_BY (cluster, date))`, quote(cluster), quote(filepath.Join(dir, "duckdb")))); err != nil {
		t.Fatal(err)
	}
	written, err := filepath.Glob(filepath.Join(dir, "duckdb", "cluster=*", "date=*"))
	if err != nil || len(written) != 1 {
		t.Fatalf("DuckDB wrote %v, %v", written, err)
	}
	path := PartitionPath(cluster, "2026-11-21")
	if want, _ := filepath.Rel(filepath.Join(dir, "duckdb"), written[0]); path != want {
		t.Errorf("PartitionPath %q; DuckDB writes %q", path, want)
	}
	file := filepath.Join(dir, "ours", path, "findings.parquet")
	if err := os.MkdirAll(filepath.Dir(file), 0o755); err != nil {
		t.Fatal(err)
	}
	if _, err := db.ExecContext(ctx, fmt.Sprintf("COPY (SELECT 1 AS v) TO %s (FORMAT parquet)", quote(file))); err != nil {
		t.Fatal(err)
	}
	var got string
	if err := db.QueryRowContext(ctx, fmt.Sprintf("SELECT cluster FROM read_parquet(%s, hive_partitioning = true)",
		quote(filepath.Join(dir, "ours", "*", "*", "*.parquet")))).Scan(&got); err != nil || got != cluster {
		t.Errorf("read back as %q, %v", got, err)
	}
}

// exportedDataset exports the rows of datasetDB whole into a new dataset directory, and returns the
// database and the directory.
func exportedDataset(t *testing.T) (*DB, string) {
	t.Helper()
	db := datasetDB(t)
	dir := t.TempDir()
	if _, _, err := db.ExportDataset(context.Background(), dir, datasetSchema.DatasetTables(), nil, nil); err != nil {
		t.Fatal(err)
	}
	return db, dir
}

// columnTypes lists the columns and types of table in db.
func columnTypes(t *testing.T, db *DB, table string) string {
	t.Helper()
	var s string
	err := db.QueryRowContext(context.Background(), `SELECT string_agg(column_name || ' ' || data_type, ', ' ORDER BY column_index)
		FROM duckdb_columns() WHERE table_name = $1 AND database_name = current_database()`, table).Scan(&s)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestDatasetDays(t *testing.T) {
	_, dir := exportedDataset(t)
	days, err := DatasetDays(dir, datasetSchema)
	if err != nil {
		t.Fatal(err)
	}
	want := []DatasetPartition{{Cluster: "", Date: "2026-11-21"}, {Cluster: "", Date: "2026-11-22"},
		{Cluster: "prod/eu 1", Date: "2026-11-21"}, {Cluster: "prod/eu 1", Date: "2026-11-22"}}
	if !slices.Equal(days, want) {
		t.Fatalf("days %+v, want %+v", days, want)
	}
}

// TestDatasetBlockPool: datasetTableDays sums the Parquet files of one cluster's days, which decides
// whether a dataset's instance takes DuckDB's block pool (Options.BlockPool), as a large
// database file's sandbox does.
func TestDatasetBlockPool(t *testing.T) {
	ctx := context.Background()
	_, dir := exportedDataset(t)
	sizeOf := func(pattern string) uint64 {
		files, err := filepath.Glob(filepath.Join(dir, "*", pattern, "*.parquet"))
		if err != nil || len(files) == 0 {
			t.Fatalf("%s: %v, %v", pattern, files, err)
		}
		var n uint64
		for _, f := range files {
			info, err := os.Stat(f)
			if err != nil {
				t.Fatal(err)
			}
			n += uint64(info.Size())
		}
		return n
	}
	day := time.Date(2026, 11, 22, 0, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		cluster  string
		from, to *time.Time
		want     uint64
	}{
		{"prod/eu 1", nil, nil, sizeOf("cluster=prod%2Feu%201/date=*")},
		{"prod/eu 1", &day, nil, sizeOf("cluster=prod%2Feu%201/date=2026-11-22")},
		{"", nil, &day, sizeOf("cluster=/date=*")},
		{"", nil, &time.Time{}, 0},
	} {
		if _, got, _, err := datasetTableDays(dir, datasetSchema, tc.cluster, tc.from, tc.to); err != nil || got != tc.want {
			t.Errorf("cluster %q from %v to %v: %d bytes, %v; want %d", tc.cluster, tc.from, tc.to, got, err, tc.want)
		}
	}
	for _, pool := range []bool{false, true} {
		mem, err := Open(ctx, InMemory, datasetSchema, Options{ReadOnly: true, MemoryLimit: "64MB", BlockPool: pool})
		if err != nil {
			t.Fatal(err)
		}
		var setting string
		err = mem.QueryRowContext(ctx, "SELECT current_setting('block_allocator_memory')").Scan(&setting)
		mem.Close()
		if want := map[bool]string{false: "0 bytes", true: "61.0 MiB"}[pool]; err != nil || setting != want {
			t.Errorf("BlockPool %v: block_allocator_memory %q, %v; want %q", pool, setting, err, want)
		}
	}
}

// TestDatasetLaterDaysOfTheWindow: a table with a ChangeTime keeps its rows in a window by that
// time, and the export puts them in the day they were captured: a watch stream saved days after
// its events. A window's view reads the later days, up to a week after, whose files' statistics
// hold rows of the window, and no other later day.
func TestDatasetLaterDaysOfTheWindow(t *testing.T) {
	ctx := context.Background()
	addresses := Table{Name: "endpoint_addresses", Evidence: "snapshot", TimeColumn: "captured_at", ChangeTime: "change_time", Columns: []Column{
		{Name: "captured_at", Type: "TIMESTAMPTZ", Doc: ""}, {Name: "change_time", Type: "TIMESTAMPTZ", Doc: ""},
		{Name: "ip", Type: "VARCHAR", Doc: ""}, {Name: "cluster", Type: "VARCHAR", Doc: ""},
	}}
	schema := NewSchema(addresses)
	db, err := Open(ctx, filepath.Join(t.TempDir(), "k.duckdb"), schema, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.ExecContext(ctx, `INSERT INTO endpoint_addresses VALUES
		('2026-11-22 12:00:00+00', '2026-11-22 11:00:00+00', 'captured that day', 'c'),
		('2026-11-23 12:00:00+00', '2026-11-23 11:00:00+00', 'of the next day', 'c'),
		('2026-11-24 12:00:00+00', NULL, 'without a change time', 'c'),
		('2026-11-25 00:30:00+00', '2026-11-22 23:59:59.999999+00', 'saved three days later', 'c'),
		('2026-11-25 00:30:00+00', '2026-11-24 23:00:00+00', 'saved three days later', 'c'),
		('2026-11-26 00:30:00+00', '2026-11-22 23:00:00+00', 'of another cluster', 'd'),
		('2026-11-30 00:30:00+00', '2026-11-22 22:00:00+00', 'saved a week and a day later', 'c')`); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if _, _, err := db.ExportDataset(ctx, dir, schema.DatasetTables(), nil, nil); err != nil {
		t.Fatal(err)
	}
	day := time.Date(2026, 11, 22, 0, 0, 0, 0, time.UTC)
	ds, err := OpenDataset(ctx, dir, schema, "c", &day, &day, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer ds.Close()
	var view string
	if err := ds.QueryRowContext(ctx, "SELECT sql FROM duckdb_views() WHERE view_name = 'endpoint_addresses'").Scan(&view); err != nil {
		t.Fatal(err)
	}
	if got := regexp.MustCompile(`date=[^/']*`).FindAllString(view, -1); !slices.Equal(got, []string{"date=2026-11-22", "date=2026-11-25"}) {
		t.Errorf("the view of 2026-11-22 reads the days %v, want 2026-11-22 and 2026-11-25", got)
	}
	until := day.Add(24*time.Hour - time.Nanosecond)
	var in string
	if err := ds.QueryRowContext(ctx, "SELECT string_agg(ip, ', ' ORDER BY ip) FROM ("+selectWindow(addresses, &day, &until)+")").Scan(&in); err != nil {
		t.Fatal(err)
	}
	if in != "captured that day, saved three days later" {
		t.Errorf("the window's rows: %s", in)
	}
	// the last day is read whole: nothing after it to look at
	last := time.Date(2026, 11, 25, 0, 0, 0, 0, time.UTC)
	if ds, err = OpenDataset(ctx, dir, schema, "c", &last, nil, Options{}); err != nil {
		t.Fatal(err)
	}
	defer ds.Close()
	if n := count(t, ds, "SELECT count(*) FROM endpoint_addresses"); n != 3 {
		t.Errorf("%d rows from 2026-11-25 on, want 3", n)
	}
}

// TestRemoveStaleStaging: the staging directory of an export killed before it finished is removed
// once nothing was written in it for StaleStagingAge; one an export is writing into (a file written
// lately, whatever the directories' times) is kept.
func TestRemoveStaleStaging(t *testing.T) {
	dir := t.TempDir()
	now := time.Now()
	old := now.Add(-StaleStagingAge - time.Minute)
	write := func(path string, at time.Time) {
		t.Helper()
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte("partial"), 0o644); err != nil {
			t.Fatal(err)
		}
		for p := path; p != dir; p = filepath.Dir(p) {
			if err := os.Chtimes(p, at, at); err != nil {
				t.Fatal(err)
			}
		}
	}
	write(filepath.Join(dir, ".staging-killed", "audit_events", "cluster=c", "date=2026-11-22", "data_0.parquet"), old)
	write(filepath.Join(dir, ".staging-running", "audit_events", "cluster=c", "date=2026-11-22", "data_0.parquet"), old)
	write(filepath.Join(dir, ".staging-running", "audit_events", "cluster=c", "date=2026-11-23", "data_0.parquet"), now.Add(-time.Minute))
	if err := os.Chtimes(filepath.Join(dir, ".staging-running"), old, old); err != nil {
		t.Fatal(err)
	}
	write(filepath.Join(dir, "audit_events", "cluster=c", "date=2026-11-21", "part-0.parquet"), old) // a day of the dataset
	removed, err := RemoveStaleStaging(dir, now)
	if err != nil {
		t.Fatal(err)
	}
	if len(removed) != 1 || removed[0].Dir != filepath.Join(dir, ".staging-killed") || removed[0].Bytes != int64(len("partial")) {
		t.Errorf("removed %+v, want .staging-killed and its 7 bytes", removed)
	}
	for _, kept := range []string{".staging-running", "audit_events/cluster=c/date=2026-11-21/part-0.parquet"} {
		if _, err := os.Stat(filepath.Join(dir, kept)); err != nil {
			t.Errorf("%s: %v", kept, err)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, ".staging-killed")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf(".staging-killed is still there: %v", err)
	}
	if removed, err := RemoveStaleStaging(filepath.Join(dir, "missing"), now); err != nil || len(removed) > 0 {
		t.Errorf("a dataset not made yet: %v, %v", removed, err)
	}
}

// TestDatasetFilesSplit exports a table whose days are split into files by verb: each value's rows
// in files of their own, the other verbs and NULL in part-<i>.parquet, and the views read them all.
func TestDatasetFilesSplit(t *testing.T) {
	ctx := context.Background()
	split := datasetEvents
	split.DatasetFiles = &FileSplit{Column: "verb", Values: []string{"get", "watch"}}
	schema := NewSchema(split, datasetLimits)
	db, err := Open(ctx, filepath.Join(t.TempDir(), "k.duckdb"), schema, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.ExecContext(ctx, `INSERT INTO audit_events (audit_id, stage, verb, cluster, stage_at)
		SELECT 'id-' || i, 'ResponseComplete', ['get', 'watch', 'delete', NULL, 'get'][i % 5 + 1], 'c',
		       TIMESTAMPTZ '2026-11-21 22:00:00+00' + i * INTERVAL 1 hour
		FROM range(10) r(i)`); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if _, _, err := db.ExportDataset(ctx, dir, schema.DatasetTables(), nil, nil); err != nil {
		t.Fatal(err)
	}
	want := []string{
		"audit_events/cluster=c/date=2026-11-21/part-get-0.parquet",
		"audit_events/cluster=c/date=2026-11-21/part-watch-0.parquet",
		"audit_events/cluster=c/date=2026-11-22/part-0.parquet",
		"audit_events/cluster=c/date=2026-11-22/part-get-0.parquet",
		"audit_events/cluster=c/date=2026-11-22/part-watch-0.parquet",
	}
	if got := datasetFiles(t, dir); strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("files:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	ds, err := OpenDataset(ctx, dir, schema, "c", nil, nil, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer ds.Close()
	var verbs string
	if err := ds.QueryRowContext(ctx, `SELECT string_agg(coalesce(verb, 'NULL'), ' ' ORDER BY audit_id) FROM audit_events`).Scan(&verbs); err != nil {
		t.Fatal(err)
	}
	// id-0 … id-9 in text order: id-0, id-1, id-2, … (i % 5 picks the verb)
	if want := "get watch delete NULL get get watch delete NULL get"; verbs != want {
		t.Errorf("the dataset's events have the verbs %q, want %q", verbs, want)
	}
	for _, f := range []string{"part-get-0.parquet", "part-watch-0.parquet"} {
		var others int64
		q := fmt.Sprintf(`SELECT count(*) FROM read_parquet(%s) WHERE verb IS DISTINCT FROM %s`,
			quote(filepath.Join(dir, "audit_events", "cluster=c", "date=2026-11-22", f)), quote(strings.Split(f, "-")[1]))
		if err := db.QueryRowContext(ctx, q).Scan(&others); err != nil || others != 0 {
			t.Errorf("%s holds %d events of other verbs (%v)", f, others, err)
		}
	}
}

// TestExportDatasetWithoutExchange exports into a FUSE mount (bindfs) that answers renameat2's
// RENAME_EXCHANGE with EINVAL, as NFS, CephFS and SMB do: the first export of a day renames it
// into place, and exporting it again replaces it by two renames instead of failing.
func TestExportDatasetWithoutExchange(t *testing.T) {
	dir := bindfsMount(t)
	if err := exchange(t.TempDir(), t.TempDir()); err != nil {
		t.Fatalf("exchanging two directories outside the mount: %v", err)
	}
	a, b := filepath.Join(dir, "a"), filepath.Join(dir, "b")
	for _, d := range []string{a, b} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := exchange(a, b); !errors.Is(err, errNoExchange) {
		t.Fatalf("exchanging two directories in the mount: %v, want errNoExchange", err)
	}

	exportAgain(t, dir)
	if staging, _ := filepath.Glob(filepath.Join(dir, stagingPrefix+"*")); len(staging) != 0 {
		t.Errorf("staging left: %v", staging)
	}
}

// bindfsMount mounts a temporary directory with bindfs (FUSE) and options, and returns the mount:
// like NFS, CephFS and SMB, it cannot exchange two directories in one rename.
func bindfsMount(t *testing.T, options ...string) string {
	bindfs := testutil.NeedProgram(t, "apt-get install bindfs", "bindfs")
	backing, dir := t.TempDir(), t.TempDir()
	if out, err := exec.Command(bindfs, append(options, backing, dir)...).CombinedOutput(); err != nil {
		testutil.Missing(t, fmt.Sprintf("bindfs cannot mount (FUSE: /dev/fuse and the right to mount): %v: %s", err, out))
	}
	t.Cleanup(func() { // fusermount for a user's mount, umount for root's
		var errs []string
		for _, unmount := range [][]string{{"fusermount3", "-u"}, {"fusermount", "-u"}, {"umount"}} {
			out, err := exec.Command(unmount[0], append(unmount[1:], dir)...).CombinedOutput()
			if err == nil {
				return
			}
			errs = append(errs, fmt.Sprintf("%s: %v: %s", unmount[0], err, out))
		}
		t.Errorf("unmounting %s: %s", dir, strings.Join(errs, "; "))
	})
	return dir
}

// TestExportDatasetWhereTheOldDayStays exports a day again where the replaced day cannot be
// removed, as on NFS while a reader on the same node holds its files open (here a bindfs mount
// that denies every removal): the day is replaced all the same and the export succeeds, the
// staging directories it could not remove listed; RemoveStaleStaging later reports that it cannot
// remove them either, without failing, and the next export goes on.
func TestExportDatasetWhereTheOldDayStays(t *testing.T) {
	ctx := context.Background()
	dir := bindfsMount(t, "--delete-deny")
	db, left := exportAgain(t, dir)
	if len(left) != 2 {
		t.Fatalf("staging directories left %+v, want one per table", left)
	}
	for _, l := range left {
		if !strings.HasPrefix(filepath.Base(l.Dir), stagingPrefix) || filepath.Dir(l.Dir) != dir || !errors.Is(l.Err, os.ErrPermission) {
			t.Errorf("left %s (%v), want a staging directory of %s that could not be removed", l.Dir, l.Err, dir)
		}
	}
	stale, err := RemoveStaleStaging(dir, time.Now().Add(StaleStagingAge+time.Hour))
	if err != nil {
		t.Fatalf("removing stale staging: %v", err)
	}
	if len(stale) < len(left) || slices.ContainsFunc(stale, func(s StaleStaging) bool { return s.Err == nil }) {
		t.Errorf("stale staging %+v, want the %d left, none removed, each with why", stale, len(left))
	}
	if _, _, err := db.ExportDataset(ctx, dir, []Table{datasetEvents, datasetLimits}, nil, nil); err != nil {
		t.Errorf("exporting beside staging that cannot be removed: %v", err)
	}
}

// exportAgain exports two tables of datasetDB into dir, deletes an event and exports them again;
// it checks that every day was replaced and that the event is gone from the dataset, and returns
// the database and the staging directories the second export left.
func exportAgain(t *testing.T, dir string) (*DB, []LeftStaging) {
	t.Helper()
	ctx := context.Background()
	db := datasetDB(t)
	tables := []Table{datasetEvents, datasetLimits}
	if _, _, err := db.ExportDataset(ctx, dir, tables, nil, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := db.ExecContext(ctx, "DELETE FROM audit_events WHERE audit_id = 'id-0'"); err != nil {
		t.Fatal(err)
	}
	parts, left, err := db.ExportDataset(ctx, dir, tables, nil, nil)
	if err != nil {
		t.Fatalf("exporting the days again: %v", err)
	}
	if len(parts) == 0 || slices.ContainsFunc(parts, func(p DatasetPartition) bool { return !p.Replaced }) {
		t.Errorf("partitions %+v, want all replaced", parts)
	}
	ds, err := OpenDataset(ctx, dir, datasetSchema, "prod/eu 1", nil, nil, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer ds.Close()
	if n := count(t, ds, "SELECT count(*) FROM audit_events"); n != 4 {
		t.Errorf("cluster prod/eu 1 has %d events after the days were exported again without id-0, want 4", n)
	}
	return db, left
}
