package rows

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/duckdb/duckdb-go/v2"

	"github.com/kubesift/kubesift/store"
)

const rowBatchSize = 64 << 10

// heldBatchRows is the size of a held batch (Hold), a row group: a held batch goes to a spill file
// as soon as it is full, so its size is only the memory its builders take, and while an audit log
// loads they share the Go heap's soft limit (cli's loadingGoMemoryLimit) with the events in
// flight. In batches of rowBatchSize rows, the endpoint states of 14.3 GB of the recordings (783k
// rows) held about 25 MB of builders, which kept the heap at that limit: the garbage collector ran
// 15-20 times a second instead of about 8, and the load took 4.3-5.3M page faults instead of 3.7M, in
// 132.8-136.7 s against 109.2-113.9 s (BENCHMARKS.md).
const heldBatchRows = store.RowGroupRows

// Writer appends rows to kubesift tables on the load's connection, so the rows belong to
// the file's transaction. Rows are gathered into Arrow batches of 64Ki rows (held ones: a row
// group, heldBatchRows) and each batch is inserted with one statement, which is an order of
// magnitude faster than appending values one by one through database/sql. Inserts run on a
// goroutine of their own, one at a time and in order, while the caller goes on parsing into the
// next batch.
type Writer struct {
	ctx      context.Context
	conn     *sql.Conn
	declared []store.Table
	tables   map[string]*tableBatch
	counts   map[string]int64
	pending  chan pendingBatch
	done     chan error
	held     map[string]*spill // batches kept back on disk while the connection is busy (see hold)
	holding  bool
	spillDir string
}

// spill is a temporary Arrow IPC stream of one table's held batches.
type spill struct {
	file *os.File
	// unlinked: the file was removed from its directory once created and lives on through the
	// open file alone (Unix), so that it goes with the process however the process ends.
	unlinked bool
	w        *ipc.Writer
	r        *ipc.Reader // once rewound
}

// rewind ends the spill file and opens it for reading its batches back.
func (sp *spill) rewind() error {
	if err := sp.w.Close(); err != nil {
		return err
	}
	if _, err := sp.file.Seek(0, io.SeekStart); err != nil {
		return err
	}
	var err error
	sp.r, err = ipc.NewReader(sp.file)
	return err
}

// remove closes and removes the spill file.
func (sp *spill) remove() {
	if sp.r != nil {
		sp.r.Release()
	}
	sp.file.Close()
	if !sp.unlinked {
		os.Remove(sp.file.Name())
	}
}

// pendingBatch is one insert: a batch, or a table's held batches read back from their spill
// file (see replay).
type pendingBatch struct {
	table string
	rec   arrow.RecordBatch
	held  *spill
}

// release frees the batch, or removes the spill file.
func (p pendingBatch) release() {
	if p.held != nil {
		p.held.remove()
		return
	}
	p.rec.Release()
}

type tableBatch struct {
	table store.Table
	b     *array.RecordBuilder
	rows  int
}

// New returns a Writer into tables (a loader's declared tables) on conn.
func New(ctx context.Context, conn *sql.Conn, tables []store.Table) *Writer {
	w := &Writer{ctx: ctx, conn: conn, declared: tables, tables: map[string]*tableBatch{}, counts: map[string]int64{},
		pending: make(chan pendingBatch, 1), done: make(chan error, 1)}
	go w.insertLoop()
	return w
}

// insertLoop inserts batches in order; after the first failure it only releases them.
func (w *Writer) insertLoop() {
	var err error
	for p := range w.pending {
		if err == nil {
			err = w.insertBatch(p)
		}
		p.release()
	}
	w.done <- err
}

// Append adds one row; values must cover every column of table in order.
func (w *Writer) Append(table string, values ...any) error {
	tb, ok := w.tables[table]
	if !ok {
		i := slices.IndexFunc(w.declared, func(t store.Table) bool { return t.Name == table })
		if i < 0 {
			return fmt.Errorf("appending to %s: not a table of this load", table)
		}
		t := w.declared[i]
		schema, err := arrowSchema(t)
		if err != nil {
			return err
		}
		tb = &tableBatch{table: t, b: array.NewRecordBuilder(memory.DefaultAllocator, schema)}
		w.tables[table] = tb
	}
	if len(values) != len(tb.table.Columns) {
		return fmt.Errorf("appending to %s: %d values for %d columns", table, len(values), len(tb.table.Columns))
	}
	for i, v := range values {
		if err := appendValue(tb.b.Field(i), v); err != nil {
			return fmt.Errorf("appending to %s.%s: %w", table, tb.table.Columns[i].Name, err)
		}
	}
	tb.rows++
	w.counts[table]++
	if tb.rows >= rowBatchSize || (w.holding && tb.rows >= heldBatchRows) {
		return w.flush(tb)
	}
	return nil
}

// Hold keeps batches back instead of inserting them, for rows produced while the connection
// runs another statement; Close inserts them. Held batches go to a temporary file in dir
// (the system's when empty), so their number does not weigh on memory.
func (w *Writer) Hold(dir string) { w.holding, w.spillDir = true, dir }

// keep writes a held batch to its table's spill file.
func (w *Writer) keep(table string, rec arrow.RecordBatch) error {
	defer rec.Release()
	if w.held == nil {
		w.held = map[string]*spill{}
	}
	sp, ok := w.held[table]
	if !ok {
		if w.spillDir != "" {
			if err := os.MkdirAll(w.spillDir, 0o700); err != nil {
				return fmt.Errorf("holding %s rows: %w", table, err)
			}
		}
		f, err := os.CreateTemp(w.spillDir, store.HeldFilePrefix+table+"-*.arrow")
		if err != nil {
			return fmt.Errorf("holding %s rows: %w", table, err)
		}
		// Removed from the directory at once where the system lets an open file be (not
		// Windows): a load killed halfway (an evicted or OOM-killed CronJob pod) left its held
		// rows on disk for good, 258 MB of them 40 s into 10 GB of audit log (BENCHMARKS.md).
		// Where it cannot be, the next open for writing removes what a killed load left.
		unlinked := os.Remove(f.Name()) == nil
		sp = &spill{file: f, unlinked: unlinked, w: ipc.NewWriter(f, ipc.WithSchema(rec.Schema()))}
		w.held[table] = sp
	}
	if err := sp.w.Write(rec); err != nil {
		return fmt.Errorf("holding %s rows in %s: %w", table, sp.file.Name(), err)
	}
	return nil
}

// release inserts the held batches, each table's with one statement, and stops holding.
func (w *Writer) release() error {
	w.holding = false
	var errs []error
	for table, sp := range w.held {
		errs = append(errs, w.replay(table, sp))
	}
	w.held = nil
	return errors.Join(errs...)
}

// replay hands a table's held batches to the insert goroutine as one stream read from their
// spill file, which the goroutine removes after the insert. One statement over all of them
// lets DuckDB convert and insert them on every thread; one statement per batch kept the
// insert of the endpoint states of 1 GB of audit log on one thread (BENCHMARKS.md).
func (w *Writer) replay(table string, sp *spill) error {
	if err := sp.rewind(); err != nil {
		sp.remove()
		return fmt.Errorf("reading held %s rows: %w", table, err)
	}
	return w.send(pendingBatch{table: table, held: sp})
}

// flush hands the gathered rows of one table to the insert goroutine.
func (w *Writer) flush(tb *tableBatch) error {
	if tb.rows == 0 {
		return nil
	}
	tb.rows = 0
	rec := tb.b.NewRecordBatch()
	if w.holding {
		return w.keep(tb.table.Name, rec)
	}
	return w.send(pendingBatch{table: tb.table.Name, rec: rec})
}

func (w *Writer) send(p pendingBatch) error {
	select {
	case w.pending <- p:
		return nil
	case <-w.ctx.Done():
		p.release()
		return w.ctx.Err()
	}
}

// insertBatch inserts one pending batch.
func (w *Writer) insertBatch(p pendingBatch) error {
	if p.held != nil {
		return w.insert(p.table, p.held.r)
	}
	reader, err := array.NewRecordReader(p.rec.Schema(), []arrow.RecordBatch{p.rec})
	if err != nil {
		return err
	}
	defer reader.Release()
	return w.insert(p.table, reader)
}

// insert inserts the batches of reader with one statement.
func (w *Writer) insert(table string, reader array.RecordReader) error {
	view := fmt.Sprintf("kubesift_rows_%s_%d", table, viewSeq.Add(1))
	var release func()
	err := w.conn.Raw(func(dc any) error {
		a, err := duckdb.NewArrowFromConn(dc.(driver.Conn))
		if err != nil {
			return err
		}
		release, err = a.RegisterView(reader, view)
		return err
	})
	if err != nil {
		return fmt.Errorf("handing %s rows to DuckDB: %w", table, err)
	}
	defer release()
	// SELECT * uses every column, as DuckDB's arrow stream scan requires (see ingest/audit streamSchema).
	_, err = w.conn.ExecContext(w.ctx, fmt.Sprintf("INSERT INTO %s SELECT * FROM %s", table, view))
	if _, dropErr := w.conn.ExecContext(context.WithoutCancel(w.ctx), "DROP VIEW IF EXISTS "+view); err == nil {
		err = dropErr
	}
	if err != nil {
		return fmt.Errorf("inserting into %s: %w", table, err)
	}
	return nil
}

var viewSeq atomic.Int64

// Close inserts what is left, waits for every insert and frees the builders. It must be
// called once, before the connection is used for anything else.
func (w *Writer) Close() error {
	var errs []error
	for _, tb := range w.tables {
		errs = append(errs, w.flush(tb))
	}
	errs = append(errs, w.release())
	close(w.pending)
	errs = append(errs, <-w.done)
	for _, tb := range w.tables {
		tb.b.Release()
	}
	return errors.Join(errs...)
}

// Total returns the number of rows appended.
func (w *Writer) Total() int64 {
	var n int64
	for _, c := range w.counts {
		n += c
	}
	return n
}

// arrowSchema maps a table's DuckDB column types to Arrow types.
func arrowSchema(t store.Table) (*arrow.Schema, error) {
	fields := make([]arrow.Field, len(t.Columns))
	for i, c := range t.Columns {
		var typ arrow.DataType
		switch c.Type {
		case "VARCHAR", "JSON":
			typ = arrow.BinaryTypes.String
		case "BIGINT":
			typ = arrow.PrimitiveTypes.Int64
		case "INTEGER":
			typ = arrow.PrimitiveTypes.Int32
		case "DOUBLE":
			typ = arrow.PrimitiveTypes.Float64
		case "BOOLEAN":
			typ = arrow.FixedWidthTypes.Boolean
		case "TIMESTAMPTZ":
			typ = &arrow.TimestampType{Unit: arrow.Microsecond, TimeZone: "UTC"}
		case "VARCHAR[]":
			typ = arrow.ListOf(arrow.BinaryTypes.String)
		case "MAP(VARCHAR, BIGINT)":
			typ = arrow.MapOf(arrow.BinaryTypes.String, arrow.PrimitiveTypes.Int64)
		case "MAP(VARCHAR, VARCHAR)":
			typ = arrow.MapOf(arrow.BinaryTypes.String, arrow.BinaryTypes.String)
		default:
			return nil, fmt.Errorf("table %s column %s: no Arrow mapping for %s", t.Name, c.Name, c.Type)
		}
		fields[i] = arrow.Field{Name: c.Name, Type: typ, Nullable: true}
	}
	return arrow.NewSchema(fields, nil), nil
}

// appendValue appends one Go value (as the parsers produce them) to a column builder.
func appendValue(b array.Builder, v any) error {
	if v == nil {
		b.AppendNull()
		return nil
	}
	switch b := b.(type) {
	case *array.StringBuilder:
		if s, ok := v.(string); ok {
			b.Append(s)
			return nil
		}
	case *array.Int64Builder:
		switch n := v.(type) {
		case int64:
			b.Append(n)
			return nil
		case int32:
			b.Append(int64(n))
			return nil
		}
	case *array.Int32Builder:
		switch n := v.(type) {
		case int32:
			b.Append(n)
			return nil
		case int64:
			if n == int64(int32(n)) {
				b.Append(int32(n))
				return nil
			}
			return fmt.Errorf("%d does not fit an INTEGER", n)
		}
	case *array.Float64Builder:
		if f, ok := v.(float64); ok {
			b.Append(f)
			return nil
		}
	case *array.BooleanBuilder:
		if x, ok := v.(bool); ok {
			b.Append(x)
			return nil
		}
	case *array.TimestampBuilder:
		if t, ok := v.(time.Time); ok {
			b.Append(arrow.Timestamp(t.UnixMicro()))
			return nil
		}
	case *array.ListBuilder:
		if list, ok := v.([]string); ok {
			b.Append(true)
			sb := b.ValueBuilder().(*array.StringBuilder)
			for _, s := range list {
				sb.Append(s)
			}
			return nil
		}
	case *array.MapBuilder:
		return appendMap(b, v)
	}
	return fmt.Errorf("unexpected Go value %T for %s", v, b.Type())
}

// appendMap appends a map with its entries in key order: the same input gives the same value
// (Go's map order is random).
func appendMap(b *array.MapBuilder, v any) error {
	b.Append(true)
	kb := b.KeyBuilder().(*array.StringBuilder)
	switch m := v.(type) {
	case map[string]string:
		for _, k := range slices.Sorted(maps.Keys(m)) {
			kb.Append(k)
			b.ItemBuilder().(*array.StringBuilder).Append(m[k])
		}
		return nil
	case map[any]any:
		keys := make(map[string]any, len(m))
		for k, x := range m {
			ks, ok := k.(string)
			if !ok {
				return fmt.Errorf("map key %T", k)
			}
			keys[ks] = x
		}
		for _, k := range slices.Sorted(maps.Keys(keys)) {
			kb.Append(k)
			if err := appendValue(b.ItemBuilder(), keys[k]); err != nil {
				return err
			}
		}
		return nil
	}
	return fmt.Errorf("unexpected Go value %T for a MAP", v)
}

// Tables returns the names of the tables rows were appended to.
func (w *Writer) Tables() []string {
	return slices.Sorted(maps.Keys(w.counts))
}

// RemoveDuplicates deletes the rows of the loads firstLoadID to lastLoadID (files loaded in
// one pass, in the order of their ids), in every table w wrote, that repeat a row of an earlier
// load on the table's DedupeKey, and returns how many it deleted. A row of one of these loads
// repeats a row of any load with a lower id, the earlier ones among them included, as when each
// file was loaded after the one before it. It runs after Close.
func (w *Writer) RemoveDuplicates(ctx context.Context, firstLoadID, lastLoadID int64) (int64, error) {
	var dups int64
	for _, tb := range w.tables {
		d, err := removeDuplicateRows(ctx, w.conn, tb.table, firstLoadID, lastLoadID)
		if err != nil {
			return 0, err
		}
		dups += d
	}
	return dups, nil
}

// RowsOfLoads counts the rows of each of the loads first to last in the tables w wrote. It runs
// after Close.
func (w *Writer) RowsOfLoads(ctx context.Context, first, last int64) (map[int64]int64, error) {
	return CountRowsOfLoads(ctx, w.conn, first, last, w.Tables()...)
}

// CountRowsOfLoads counts the rows of each of the loads first to last in tables, together.
func CountRowsOfLoads(ctx context.Context, conn *sql.Conn, first, last int64, tables ...string) (map[int64]int64, error) {
	counts := map[int64]int64{}
	for _, table := range tables {
		rows, err := conn.QueryContext(ctx, fmt.Sprintf("SELECT load_id, count(*) FROM %s WHERE load_id BETWEEN $1 AND $2 GROUP BY load_id", table), first, last)
		if err != nil {
			return nil, fmt.Errorf("counting the rows of %s: %w", table, err)
		}
		for rows.Next() {
			var id, n int64
			if err := rows.Scan(&id, &n); err != nil {
				rows.Close()
				return nil, fmt.Errorf("counting the rows of %s: %w", table, err)
			}
			counts[id] += n
		}
		if err := errors.Join(rows.Err(), rows.Close()); err != nil {
			return nil, fmt.Errorf("counting the rows of %s: %w", table, err)
		}
	}
	return counts, nil
}

// removeDuplicateRows deletes rows of the loads first to last that repeat a row of a load with a
// lower id on the table's DedupeKey (NULLs compare equal), and returns how many it deleted. Load
// ids are taken in order, so the lower ids are the earlier loads. When the key holds a time
// (keyTime), an earlier row can repeat one of these loads' only at one of their times (or where
// both have none): the earlier rows are read from their time range alone, which the column's
// zone maps narrow to the row groups of those times instead of the whole table.
func removeDuplicateRows(ctx context.Context, conn *sql.Conn, table store.Table, first, last int64) (int64, error) {
	on := make([]string, len(table.DedupeKey))
	for i, k := range table.DedupeKey {
		if !strings.Contains(k, "%[1]s") {
			k = "%[1]s." + k
		}
		on[i] = fmt.Sprintf(k, "n") + " IS NOT DISTINCT FROM " + fmt.Sprintf(k, "o")
	}
	on = append(on, "o.load_id < n.load_id")
	earlier := "o.load_id < $2"
	args := []any{first, last}
	if kt := keyTime(table); kt != "" {
		tc := `"` + kt + `"` // a schema's column name, quoted: it may be a keyword (at)
		var lo, hi sql.NullTime
		var loaded, undated int64
		err := conn.QueryRowContext(ctx, fmt.Sprintf("SELECT min(%[2]s), max(%[2]s), count(*), count(*) - count(%[2]s) FROM %[1]s WHERE load_id BETWEEN $1 AND $2", table.Name, tc),
			first, last).Scan(&lo, &hi, &loaded, &undated)
		if err != nil {
			return 0, fmt.Errorf("removing duplicate %s rows: reading the load's times: %w", table.Name, err)
		}
		if loaded == 0 {
			return 0, nil
		}
		var times []string
		if lo.Valid {
			times = append(times, "o."+tc+" BETWEEN $3 AND $4")
			args = append(args, lo.Time, hi.Time)
		}
		if undated > 0 {
			times = append(times, "o."+tc+" IS NULL")
		}
		earlier += " AND (" + strings.Join(times, " OR ") + ")"
	}
	q := fmt.Sprintf(`DELETE FROM %[1]s WHERE rowid IN (
		SELECT n.rowid FROM %[1]s n SEMI JOIN (SELECT * FROM %[1]s o WHERE %[3]s) o ON %[2]s
		WHERE n.load_id BETWEEN $1 AND $2)`, table.Name, strings.Join(on, " AND "), earlier)
	res, err := conn.ExecContext(ctx, q, args...)
	if err != nil {
		return 0, fmt.Errorf("removing duplicate %s rows: %w", table.Name, err)
	}
	return res.RowsAffected()
}

// keyTime returns the time column of table's dedupe key: its TimeColumn when the key holds it, else
// the first other TIMESTAMPTZ column the key names (conntrack_events: event_time); "" when none.
func keyTime(table store.Table) string {
	if table.TimeColumn != "" && slices.Contains(table.DedupeKey, table.TimeColumn) {
		return table.TimeColumn
	}
	for _, k := range table.DedupeKey {
		if i := slices.IndexFunc(table.Columns, func(c store.Column) bool { return c.Name == k }); i >= 0 && table.Columns[i].Type == "TIMESTAMPTZ" {
			return k
		}
	}
	return ""
}
