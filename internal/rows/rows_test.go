package rows

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/kubesift/kubesift/store"
)

// allTypes has a column of every type the Writer maps to Arrow.
var allTypes = store.Table{
	Name:       "all_types",
	Evidence:   "test",
	TimeColumn: "at",
	DedupeKey:  []string{"name", "coalesce(%[1]s.zone, 0)"},
	Columns: []store.Column{
		{Name: "name", Type: "VARCHAR"},
		{Name: "body", Type: "JSON"},
		{Name: "big", Type: "BIGINT"},
		{Name: "small", Type: "INTEGER"},
		{Name: "ratio", Type: "DOUBLE"},
		{Name: "ok", Type: "BOOLEAN"},
		{Name: "at", Type: "TIMESTAMPTZ"},
		{Name: "flags", Type: "VARCHAR[]"},
		{Name: "counts", Type: "MAP(VARCHAR, BIGINT)"},
		{Name: "labels", Type: "MAP(VARCHAR, VARCHAR)"},
		{Name: "zone", Type: "BIGINT"},
		{Name: "load_id", Type: "BIGINT"},
	},
}

// seq is a narrow table for the batching tests.
var seq = store.Table{
	Name:       "seq",
	Evidence:   "test",
	TimeColumn: "at",
	DedupeKey:  []string{"n"},
	Columns:    []store.Column{{Name: "n", Type: "BIGINT"}, {Name: "at", Type: "TIMESTAMPTZ"}, {Name: "load_id", Type: "BIGINT"}},
}

func openConn(t *testing.T, tables ...store.Table) (*store.DB, *sql.Conn) {
	t.Helper()
	ctx := context.Background()
	db, err := store.Open(ctx, store.InMemory, store.NewSchema(tables...), store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	conn, err := db.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	return db, conn
}

// TestWriterTypesAndNulls: every column type round-trips through Arrow into DuckDB, and nil is
// NULL in each of them.
func TestWriterTypesAndNulls(t *testing.T) {
	ctx := context.Background()
	db, conn := openConn(t, allTypes)
	at := time.Date(2026, 11, 21, 5, 56, 35, 319229000, time.UTC)
	w := New(ctx, conn, []store.Table{allTypes})
	full := []any{"a", `{"k":[1,2]}`, int64(1) << 40, int32(-7), 0.25, true, at,
		[]string{"ASSURED", "UNREPLIED"}, map[any]any{"x": int64(3), "b": int64(1), "m": int64(2)},
		map[string]string{"app": "web", "zone": "a", "tier": "db"}, int32(5), int64(1)}
	nulls := make([]any, len(allTypes.Columns))
	nulls[0] = "b"
	for _, row := range [][]any{full, nulls} {
		if err := w.Append("all_types", row...); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if w.Total() != 2 || !slices.Equal(w.Tables(), []string{"all_types"}) {
		t.Errorf("Total %d, Tables %v", w.Total(), w.Tables())
	}
	var got string
	err := db.QueryRowContext(ctx, `SELECT to_json(list(t ORDER BY name))::VARCHAR FROM (
		SELECT "name", "body", "big", "small", "ratio", "ok", strftime("at", '%Y-%m-%dT%H:%M:%S.%fZ') AS "at", "flags",
			"counts", "labels", "zone", "load_id" FROM all_types) t`).Scan(&got)
	if err != nil {
		t.Fatal(err)
	}
	want := `[{"name":"a","body":{"k":[1,2]},"big":1099511627776,"small":-7,"ratio":0.25,"ok":true,` +
		`"at":"2026-11-21T05:56:35.319229Z","flags":["ASSURED","UNREPLIED"],"counts":{"x":3,"b":1,"m":2},"labels":{"app":"web","zone":"a","tier":"db"},"zone":5,"load_id":1},` +
		`{"name":"b","body":null,"big":null,"small":null,"ratio":null,"ok":null,"at":null,"flags":null,"counts":null,"labels":null,"zone":null,"load_id":null}]`
	if !jsonEqual(t, got, want) {
		t.Errorf("rows\n got %s\nwant %s", got, want)
	}
	// maps in key order, whatever Go's
	if err := db.QueryRowContext(ctx, `SELECT map_keys(counts)::VARCHAR || map_keys(labels)::VARCHAR FROM all_types WHERE name = 'a'`).Scan(&got); err != nil {
		t.Fatal(err)
	}
	if got != "[b, m, x][app, tier, zone]" {
		t.Errorf("map keys %s, want them in order", got)
	}
}

func jsonEqual(t *testing.T, a, b string) bool {
	t.Helper()
	var x, y any
	if err := json.Unmarshal([]byte(a), &x); err != nil {
		t.Fatalf("%s: %v", a, err)
	}
	if err := json.Unmarshal([]byte(b), &y); err != nil {
		t.Fatalf("%s: %v", b, err)
	}
	xs, _ := json.Marshal(x)
	ys, _ := json.Marshal(y)
	return string(xs) == string(ys)
}

// TestWriterRejectsWrongRows: a row for a table the load did not declare, a row of the wrong
// width, a value of the wrong Go type and an int64 too big for an INTEGER are errors naming the
// table and column; a column type without an Arrow mapping is an error naming it.
func TestWriterRejectsWrongRows(t *testing.T) {
	ctx := context.Background()
	_, conn := openConn(t, allTypes)
	w := New(ctx, conn, []store.Table{allTypes})
	defer w.Close()
	row := func(i int, v any) []any {
		r := make([]any, len(allTypes.Columns))
		r[i] = v
		return r
	}
	for _, tc := range []struct {
		table  string
		values []any
		want   string
	}{
		{"audit_events", row(0, "a"), "appending to audit_events: not a table of this load"},
		{"all_types", []any{"a"}, "appending to all_types: 1 values for 12 columns"},
		{"all_types", row(2, "12"), "appending to all_types.big: unexpected Go value string for int64"},
		{"all_types", row(3, int64(1)<<31), "appending to all_types.small: 2147483648 does not fit an INTEGER"},
		{"all_types", row(6, "2026-11-21"), "appending to all_types.at: unexpected Go value string"},
		{"all_types", row(9, map[string]int{"a": 1}), "appending to all_types.labels: unexpected Go value map[string]int for a MAP"},
	} {
		if err := w.Append(tc.table, tc.values...); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Append(%s, %v) = %v, want %q", tc.table, tc.values, err, tc.want)
		}
	}
	odd := store.Table{Name: "odd", Columns: []store.Column{{Name: "d", Type: "DATE"}}}
	w2 := New(ctx, conn, []store.Table{odd})
	defer w2.Close()
	if err := w2.Append("odd", nil); err == nil || !strings.Contains(err.Error(), "table odd column d: no Arrow mapping for DATE") {
		t.Errorf("a DATE column: %v", err)
	}
}

// appendSeq appends rows first..first+n-1 of seq.
func appendSeq(t *testing.T, w *Writer, first, n int, loadID int64) {
	t.Helper()
	at := time.Date(2026, 11, 21, 0, 0, 0, 0, time.UTC)
	for i := first; i < first+n; i++ {
		if err := w.Append("seq", int64(i), at, loadID); err != nil {
			t.Fatal(err)
		}
	}
}

// checkSeq checks that seq holds rows 0..n-1 of load loadID once each, in the order appended.
func checkSeq(t *testing.T, db *store.DB, n int, loadID int64) {
	t.Helper()
	var count, distinct, inOrder int
	var lo, hi int64
	err := db.QueryRowContext(context.Background(), `SELECT count(*), count(DISTINCT n), coalesce(min(n), 0), coalesce(max(n), 0),
		count(*) FILTER (WHERE n = rowid - (SELECT min(rowid) FROM seq WHERE load_id = $1)) FROM seq WHERE load_id = $1`, loadID).
		Scan(&count, &distinct, &lo, &hi, &inOrder)
	if err != nil {
		t.Fatal(err)
	}
	if count != n || distinct != n || (n > 0 && (lo != 0 || hi != int64(n-1))) || inOrder != n {
		t.Errorf("%d rows appended: %d in the table, %d distinct, from %d to %d, %d in order", n, count, distinct, lo, hi, inOrder)
	}
}

// TestWriterBatchBoundaries: rows are inserted whole and once, in order, whether they fill no
// batch, exactly one, or spill over into the next.
func TestWriterBatchBoundaries(t *testing.T) {
	for i, n := range []int{0, 1, rowBatchSize - 1, rowBatchSize, rowBatchSize + 1, 2*rowBatchSize + 3} {
		t.Run(fmt.Sprint(n), func(t *testing.T) {
			db, conn := openConn(t, seq)
			w := New(context.Background(), conn, []store.Table{seq})
			appendSeq(t, w, 0, n, int64(i))
			if err := w.Close(); err != nil {
				t.Fatal(err)
			}
			if w.Total() != int64(n) {
				t.Errorf("Total %d, want %d", w.Total(), n)
			}
			checkSeq(t, db, n, int64(i))
		})
	}
}

// TestWriterHoldSpillsToDisk: while held, full batches go to a spill file in the given
// directory, not to the table; Close inserts them in order and removes the file. Where the system
// lets an open file be removed (not Windows), the directory lists no spill file even while it is
// written: a process killed then leaves none behind.
func TestWriterHoldSpillsToDisk(t *testing.T) {
	ctx := context.Background()
	db, conn := openConn(t, seq, allTypes)
	dir := filepath.Join(t.TempDir(), "spill")
	w := New(ctx, conn, []store.Table{seq, allTypes})
	w.Hold(dir)
	n := 2*rowBatchSize + 5
	appendSeq(t, w, 0, n, 7)
	if err := w.Append("all_types", append([]any{"held"}, make([]any, len(allTypes.Columns)-1)...)...); err != nil {
		t.Fatal(err)
	}
	if heldBytes(t, w, "seq") == 0 {
		t.Fatal("nothing spilled for seq while held")
	}
	sp := w.held["seq"]
	if filepath.Dir(sp.file.Name()) != dir || !strings.HasPrefix(filepath.Base(sp.file.Name()), store.HeldFilePrefix+"seq-") {
		t.Errorf("spill file %s, want one in %s named for seq", sp.file.Name(), dir)
	}
	if w.held["all_types"] != nil {
		t.Error("a spill file for all_types before its first batch is full")
	}
	listed, _ := os.ReadDir(dir)
	if runtime.GOOS != "windows" && (len(listed) != 0 || !sp.unlinked) {
		t.Errorf("spill files listed while held: %v (unlinked %v)", listed, sp.unlinked)
	}
	var inserted int
	if err := db.QueryRowContext(ctx, "SELECT count(*) FROM seq").Scan(&inserted); err != nil || inserted != 0 {
		t.Errorf("%d rows inserted while held (%v)", inserted, err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	checkSeq(t, db, n, 7)
	var held int
	if err := db.QueryRowContext(ctx, "SELECT count(*) FROM all_types WHERE name = 'held'").Scan(&held); err != nil || held != 1 {
		t.Errorf("the partial batch of all_types: %d rows (%v)", held, err)
	}
	if left, _ := os.ReadDir(dir); len(left) != 0 {
		t.Errorf("spill files left after Close: %v", left)
	}
}

// TestWriterHoldsBatchesOfARowGroup: a held batch goes to its spill file once it holds a row
// group, not rowBatchSize rows, so that the builders of rows produced beside an audit log's load
// stay small on the Go heap.
func TestWriterHoldsBatchesOfARowGroup(t *testing.T) {
	ctx := context.Background()
	db, conn := openConn(t, seq)
	dir := filepath.Join(t.TempDir(), "spill")
	w := New(ctx, conn, []store.Table{seq})
	w.Hold(dir)
	appendSeq(t, w, 0, store.RowGroupRows-1, 3)
	if size := heldBytes(t, w, "seq"); size != 0 {
		t.Errorf("%d bytes spilled before a row group was held", size)
	}
	appendSeq(t, w, store.RowGroupRows-1, 1, 3)
	if size := heldBytes(t, w, "seq"); size == 0 {
		t.Errorf("nothing spilled once a row group was held")
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	checkSeq(t, db, store.RowGroupRows, 3)
}

// heldBytes is the size of the spill file of table's held batches, 0 when it has none.
func heldBytes(t *testing.T, w *Writer, table string) int64 {
	t.Helper()
	sp := w.held[table]
	if sp == nil {
		return 0
	}
	info, err := sp.file.Stat()
	if err != nil {
		t.Fatal(err)
	}
	return info.Size()
}

// loadDeduped appends rows (each made a row of table by values) as load id, and returns the
// duplicates RemoveDuplicates took out again.
func loadDeduped(t *testing.T, conn *sql.Conn, table store.Table, id int64, rows [][]any, values func([]any) []any) int64 {
	t.Helper()
	ctx := context.Background()
	w := New(ctx, conn, []store.Table{table})
	for _, r := range rows {
		if err := w.Append(table.Name, values(r)...); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	dups, err := w.RemoveDuplicates(ctx, id, id)
	if err != nil {
		t.Fatal(err)
	}
	return dups
}

// TestRemoveDuplicates: a load's rows that repeat an earlier load's on the dedupe key go, NULLs
// comparing equal and an expression item (coalesce(zone, 0)) applied to both sides; rows new to
// this load, and the earlier load's rows, stay.
func TestRemoveDuplicates(t *testing.T) {
	ctx := context.Background()
	db, conn := openConn(t, allTypes)
	load := func(id int64, rows ...[]any) int64 {
		return loadDeduped(t, conn, allTypes, id, rows, func(r []any) []any {
			v := make([]any, len(allTypes.Columns))
			v[0], v[10], v[11] = r[0], r[1], id
			return v
		})
	}
	if dups := load(1, []any{"a", nil}, []any{"b", int64(2)}, []any{nil, int64(1)}); dups != 0 {
		t.Errorf("first load: %d duplicates", dups)
	}
	// a with zone 0 = a with no zone; b in another zone is new; the NULL name repeats.
	if dups := load(2, []any{"a", int64(0)}, []any{"b", int64(3)}, []any{nil, int64(1)}, []any{"c", nil}); dups != 2 {
		t.Errorf("second load: %d duplicates, want 2", dups)
	}
	var got string
	if err := db.QueryRowContext(ctx, `SELECT string_agg(coalesce(name, 'NULL') || '/' || coalesce(zone::VARCHAR, '-') || '@' || load_id, ' ' ORDER BY load_id, name NULLS FIRST, zone)
		FROM all_types`).Scan(&got); err != nil {
		t.Fatal(err)
	}
	if want := "NULL/1@1 a/-@1 b/2@1 b/3@2 c/-@2"; got != want {
		t.Errorf("rows %q, want %q", got, want)
	}
}

// observedAt is deduplicated on its name and time, like the object tables (their key is every
// column but the provenance ones, captured_at among them).
var observedAt = store.Table{
	Name:       "observed_at",
	Evidence:   "test",
	TimeColumn: "at",
	DedupeKey:  []string{"name", "at"},
	Columns: []store.Column{
		{Name: "name", Type: "VARCHAR"},
		{Name: "at", Type: "TIMESTAMPTZ"},
		{Name: "load_id", Type: "BIGINT"},
	},
}

// observedEvent's key holds a time that is not its TimeColumn, like conntrack_events' event_time.
var observedEvent = store.Table{
	Name:       "observed_event",
	Evidence:   "test",
	TimeColumn: "loaded_at",
	DedupeKey:  []string{"name", "at"},
	Columns: []store.Column{
		{Name: "name", Type: "VARCHAR"},
		{Name: "at", Type: "TIMESTAMPTZ"},
		{Name: "load_id", Type: "BIGINT"},
		{Name: "loaded_at", Type: "TIMESTAMPTZ"},
	},
}

// TestKeyTime: the dedupe is bounded by the table's time column when its key holds it, else by
// another time of the key, and not at all without one.
func TestKeyTime(t *testing.T) {
	for table, want := range map[*store.Table]string{&observedAt: "at", &observedEvent: "at", &allTypes: ""} {
		if got := keyTime(*table); got != want {
			t.Errorf("%s: keyTime %q, want %q", table.Name, got, want)
		}
	}
}

// TestRemoveDuplicatesAtTheLoadsTimes: where the dedupe key holds a time, earlier rows are
// read from the load's time range only, and rows without a time still meet the earlier rows without
// one; rows at a time of the load but another name, at a time outside the range, and a load with
// no times at all behave as with the whole table read.
func TestRemoveDuplicatesAtTheLoadsTimes(t *testing.T) {
	for _, table := range []store.Table{observedAt, observedEvent} {
		t.Run(table.Name, func(t *testing.T) { testRemoveDuplicatesAtTheLoadsTimes(t, table) })
	}
}

func testRemoveDuplicatesAtTheLoadsTimes(t *testing.T, table store.Table) {
	ctx := context.Background()
	db, conn := openConn(t, table)
	day := time.Date(2026, 11, 20, 0, 0, 0, 0, time.UTC)
	at := func(h int) any { return day.Add(time.Duration(h) * time.Hour) }
	load := func(id int64, rows ...[]any) int64 {
		return loadDeduped(t, conn, table, id, rows, func(r []any) []any { return []any{r[0], r[1], id, nil}[:len(table.Columns)] })
	}
	if dups := load(1, []any{"a", at(1)}, []any{"b", at(5)}, []any{"c", nil}, []any{"d", at(30)}); dups != 0 {
		t.Errorf("first load: %d duplicates", dups)
	}
	// a at 1 and b at 5 repeat (the first and last time of the load); c without a time repeats;
	// b at 3 and e at 1 are new; d at 30 lies outside this load's range and is not in it.
	if dups := load(2, []any{"a", at(1)}, []any{"b", at(3)}, []any{"b", at(5)}, []any{"e", at(1)}, []any{"c", nil}); dups != 3 {
		t.Errorf("second load: %d duplicates, want 3", dups)
	}
	// only rows without a time: c repeats, f is new
	if dups := load(3, []any{"c", nil}, []any{"f", nil}); dups != 1 {
		t.Errorf("third load: %d duplicates, want 1", dups)
	}
	// only rows with a time, one of them an earlier load's: d at 30
	if dups := load(4, []any{"d", at(30)}, []any{"d", at(31)}); dups != 1 {
		t.Errorf("fourth load: %d duplicates, want 1", dups)
	}
	var got string
	if err := db.QueryRowContext(ctx, `SELECT string_agg(name || '/' || coalesce(date_part('hour', "at")::VARCHAR, '-') || '@' || load_id, ' '
		ORDER BY load_id, name, "at") FROM `+table.Name).Scan(&got); err != nil {
		t.Fatal(err)
	}
	if want := "a/1@1 b/5@1 c/-@1 d/6@1 b/3@2 e/1@2 f/-@3 d/7@4"; got != want {
		t.Errorf("rows %q, want %q", got, want)
	}
}
