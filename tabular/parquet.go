package tabular

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"io"
	"os"
	"strings"

	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/duckdb/duckdb-go/v2"
)

// Parquet files of rows that are in DuckDB come from DuckDB's own writer: COPY (query) TO 'file'
// (FORMAT parquet, COMPRESSION zstd), from the database itself (export), from the sandbox into its
// own directory (sandboxed user SQL, store.Sandbox.CopyParquet) or, where the sandbox has none,
// from a scratch DuckDB that sees the rows as Arrow (ParquetFromArrow). Tables of
// Go values (the findings) are written by arrow-go's Parquet writer a row group at a time
// (Parquet, parquet_table.go): loading them into a scratch DuckDB first held every row in memory,
// and DuckDB's COPY ran out of memory when that scratch database was bounded.

// Execer runs a statement: a *sql.DB, *sql.Conn or *sql.Tx.
type Execer interface {
	ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error)
}

// CopyParquet writes the rows of query (a SELECT, or a table name) to the Parquet file path.
func CopyParquet(ctx context.Context, db Execer, query, path string) error {
	_, err := db.ExecContext(ctx, copySQL(query, path))
	return err
}

func copySQL(query, path string) string {
	return "COPY (" + query + ") TO " + Quote(path) + " (FORMAT parquet, COMPRESSION zstd)"
}

// Quote makes s a SQL string literal.
func Quote(s string) string { return "'" + strings.ReplaceAll(s, "'", "''") + "'" }

// ViaFile runs write with the name of a file and makes what it wrote land in w: for writers
// such as DuckDB's COPY that need a file name. When w is itself a regular file, empty, with a
// name that leads to it, write gets that name; otherwise a temporary file is copied to w.
func ViaFile(w io.Writer, write func(path string) error) error {
	if f, ok := w.(*os.File); ok {
		st, err1 := f.Stat()
		named, err2 := os.Stat(f.Name())
		if err1 == nil && err2 == nil && st.Mode().IsRegular() && st.Size() == 0 && os.SameFile(st, named) {
			return write(f.Name())
		}
	}
	f, err := os.CreateTemp("", "kubesift-*.parquet")
	if err != nil {
		return err
	}
	name := f.Name()
	f.Close()
	defer os.Remove(name)
	if err := write(name); err != nil {
		return err
	}
	// Opened again by name: the writer may have replaced the file rather than written into it.
	f, err = os.Open(name)
	if err != nil {
		return err
	}
	defer f.Close()
	_, err = io.Copy(w, f)
	return err
}

// scratch opens a private in-memory DuckDB with external access (for COPY ... TO).
func scratch(ctx context.Context) (*sql.DB, *sql.Conn, error) {
	db, err := sql.Open("duckdb", "")
	if err != nil {
		return nil, nil, err
	}
	conn, err := db.Conn(ctx)
	if err != nil {
		db.Close()
		return nil, nil, err
	}
	return db, conn, nil
}

// ParquetFromArrow writes the rows of reader to w as Parquet, through a scratch DuckDB that
// sees them as a view: the query that produced them may have run on a sandboxed connection,
// which cannot COPY to a file itself.
func ParquetFromArrow(ctx context.Context, w io.Writer, reader array.RecordReader) error {
	db, conn, err := scratch(ctx)
	if err != nil {
		return err
	}
	defer db.Close()
	defer conn.Close()
	return conn.Raw(func(dc any) error {
		ar, err := duckdb.NewArrowFromConn(dc.(driver.Conn))
		if err != nil {
			return err
		}
		release, err := ar.RegisterView(reader, "result")
		if err != nil {
			return err
		}
		defer release()
		return ViaFile(w, func(path string) error {
			_, err := dc.(driver.ExecerContext).ExecContext(ctx, copySQL("SELECT * FROM result", path), nil)
			return err
		})
	})
}
