package ingest

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"strings"

	"github.com/duckdb/duckdb-go/v2"
)

// rowWriter appends rows to kubesift tables through DuckDB appenders on the load's
// connection, so the rows belong to the file's transaction.
type rowWriter struct {
	conn   *sql.Conn
	apps   map[string]*duckdb.Appender
	counts map[string]int64
}

func newRowWriter(conn *sql.Conn) *rowWriter {
	return &rowWriter{conn: conn, apps: map[string]*duckdb.Appender{}, counts: map[string]int64{}}
}

// append adds one row; values must cover every column of table in order.
func (w *rowWriter) append(table string, values ...any) error {
	app, ok := w.apps[table]
	if !ok {
		err := w.conn.Raw(func(dc any) error {
			var err error
			app, err = duckdb.NewAppenderFromConn(dc.(driver.Conn), "", table)
			return err
		})
		if err != nil {
			return fmt.Errorf("appending to %s: %w", table, err)
		}
		w.apps[table] = app
	}
	for i, v := range values {
		if m, ok := v.(map[any]any); ok {
			values[i] = duckdb.Map(m)
		}
	}
	dv := make([]driver.Value, len(values))
	for i, v := range values {
		dv[i] = v
	}
	if err := app.AppendRow(dv...); err != nil {
		return fmt.Errorf("appending to %s: %w", table, err)
	}
	w.counts[table]++
	return nil
}

// close flushes and closes every appender.
func (w *rowWriter) close() error {
	var errs []error
	for table, app := range w.apps {
		if err := app.Close(); err != nil {
			errs = append(errs, fmt.Errorf("writing %s: %w", table, err))
		}
	}
	return errors.Join(errs...)
}

func (w *rowWriter) total() int64 {
	var n int64
	for _, c := range w.counts {
		n += c
	}
	return n
}

// removeDuplicateRows deletes rows of this load that repeat a row of an earlier load on the
// key (NULLs compare equal), and returns how many it deleted. A key item is a column name, or
// an expression with %[1]s standing for the table alias, e.g. "coalesce(%[1]s.zone, 0)".
func removeDuplicateRows(ctx context.Context, conn *sql.Conn, table string, loadID int64, key ...string) (int64, error) {
	on := make([]string, len(key))
	for i, k := range key {
		if !strings.Contains(k, "%[1]s") {
			k = "%[1]s." + k
		}
		on[i] = fmt.Sprintf(k, "n") + " IS NOT DISTINCT FROM " + fmt.Sprintf(k, "o")
	}
	q := fmt.Sprintf(`DELETE FROM %s WHERE rowid IN (
		SELECT n.rowid FROM %s n SEMI JOIN %s o ON o.load_id <> $1 AND %s
		WHERE n.load_id = $1)`, table, table, table, strings.Join(on, " AND "))
	res, err := conn.ExecContext(ctx, q, loadID)
	if err != nil {
		return 0, fmt.Errorf("removing duplicate %s rows: %w", table, err)
	}
	return res.RowsAffected()
}
