package tabular

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"
)

// parquetColumns are the types Parquet writes, with the NULLs, text and times that could go wrong.
var parquetColumns = []Column{{Name: "text", Type: "VARCHAR"}, {Name: "doc", Type: "JSON"}, {Name: "n", Type: "BIGINT"}, {Name: "at", Type: "TIMESTAMPTZ"}}

func parquetRows() [][]any {
	cet := time.FixedZone("CET", 3600)
	rows := [][]any{
		{"plain", `{"kept": [1, 2],  "as": "written"}`, int64(5), time.Date(2026, 11, 21, 5, 31, 8, 123456789, cet)},
		{"", json.RawMessage(`[]`), -7, time.Date(1970, 1, 1, 0, 0, 0, 0, time.UTC)},
		{nil, nil, nil, nil},
		{"é ünï\n\"quoted\", 'single'", []byte(`{"k":"v\u00e9"}`), int64(math.MaxInt64), time.Date(2262, 4, 11, 23, 47, 16, 854775000, time.UTC)},
		{"-", json.RawMessage(`"a string"`), int64(math.MinInt64 + 1), time.Date(1, 1, 1, 0, 0, 0, 1000, time.UTC)},
	}
	for i := range 9 {
		rows = append(rows, []any{fmt.Sprint("row ", i), fmt.Sprintf(`[%d, {"i": %d}]`, i, i), i, time.Unix(int64(i)*3600, int64(i)*1000).UTC()})
	}
	return rows
}

// TestParquetReadsBackAsDuckDBWroteIt: DuckDB reads the file Parquet writes with the same column
// types and the same rows in the same order as the file DuckDB's own COPY writes from the same
// values, across row groups, compressed with zstd.
func TestParquetReadsBackAsDuckDBWroteIt(t *testing.T) {
	defer func(n int) { parquetRowGroupRows = n }(parquetRowGroupRows)
	parquetRowGroupRows = 3
	ctx := context.Background()
	dir := t.TempDir()
	ours, theirs := filepath.Join(dir, "ours.parquet"), filepath.Join(dir, "duckdb.parquet")
	rows := parquetRows()
	var buf bytes.Buffer
	if err := Parquet(ctx, &buf, &Table{Columns: parquetColumns, Rows: rows}); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(ours, buf.Bytes(), 0o600); err != nil {
		t.Fatal(err)
	}

	db, err := sql.Open("duckdb", "")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.ExecContext(ctx, `CREATE TABLE r ("text" VARCHAR, doc JSON, n BIGINT, "at" TIMESTAMPTZ)`); err != nil {
		t.Fatal(err)
	}
	for _, r := range rows {
		args := make([]any, len(r))
		for i, v := range r {
			switch x := v.(type) {
			case []byte:
				args[i] = string(x)
			case json.RawMessage:
				args[i] = string(x)
			default:
				args[i] = v
			}
		}
		if _, err := db.ExecContext(ctx, "INSERT INTO r VALUES (?, ?, ?, ?)", args...); err != nil {
			t.Fatal(err)
		}
	}
	if err := CopyParquet(ctx, db, "SELECT * FROM r", theirs); err != nil {
		t.Fatal(err)
	}

	want, got := readBack(t, db, theirs), readBack(t, db, ours)
	if got != want {
		t.Errorf("read back:\n%s\nwant (DuckDB's COPY of the same rows)\n%s", got, want)
	}
	if !strings.Contains(want, `"{\"kept\": [1, 2],  \"as\": \"written\"}"`) || !strings.Contains(want, "2026-11-21T04:31:08.123456Z") {
		t.Errorf("DuckDB's own file does not hold the values as written:\n%s", want)
	}
	var groups, codecs int
	var codec string
	err = db.QueryRowContext(ctx, "SELECT count(DISTINCT row_group_id), count(DISTINCT compression), any_value(compression) FROM parquet_metadata("+Quote(ours)+")").Scan(&groups, &codecs, &codec)
	if err != nil {
		t.Fatal(err)
	}
	if groups != (len(rows)+2)/3 || codecs != 1 || codec != "ZSTD" {
		t.Errorf("%d row groups compressed with %d codecs (%s), want %d row groups of 3 rows, all ZSTD", groups, codecs, codec, (len(rows)+2)/3)
	}
}

// readBack returns the column names and types DuckDB reads from a Parquet file of
// parquetColumns, then its rows as text, in the order read_parquet returns them, with the JSON
// column also as the text it holds.
func readBack(t *testing.T, db *sql.DB, path string) string {
	t.Helper()
	rows, err := db.QueryContext(context.Background(), "SELECT *, doc::VARCHAR AS doc_text FROM read_parquet("+Quote(path)+")")
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	table, err := FromRows(rows)
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	for _, c := range table.Columns {
		fmt.Fprintf(&b, "%s %s | ", c.Name, c.Type)
	}
	err = table.Each(func(row []any) error {
		b.WriteString("\n")
		for _, v := range row {
			fmt.Fprintf(&b, "%q (%T) | ", Text(v), v)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return b.String()
}

// TestParquetMemoryStaysBounded writes 128 MiB of rows with row groups of 1 MiB and samples the
// Go heap (where arrow-go's Parquet writer keeps its buffers) while the rows are handed over: it
// stays a small multiple of a row group, and every row is in the file, in order.
func TestParquetMemoryStaysBounded(t *testing.T) {
	defer func(n int) { parquetRowGroupBytes = n }(parquetRowGroupBytes)
	parquetRowGroupBytes = 1 << 20
	const rows, rowBytes = 2048, 64 << 10
	const heapBound = 16 << 20
	path := filepath.Join(t.TempDir(), "big.parquet")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var peak uint64
	table := &Table{Columns: []Column{{Name: "n", Type: "BIGINT"}, {Name: "evidence", Type: "JSON"}}, Scan: func(yield func([]any) error) error {
		var ms runtime.MemStats
		for i := range rows {
			if i%32 == 0 {
				// Twice: the first GC moves idle zstd encoders (about 16 MiB each, a fixed cost
				// per encoder, not per row) to sync.Pool's victim cache, the second frees them.
				runtime.GC()
				runtime.GC()
				runtime.ReadMemStats(&ms)
				peak = max(peak, ms.HeapAlloc)
			}
			// Distinct, incompressible-enough text: a dictionary or zstd does not make it small.
			doc := make([]byte, 0, rowBytes)
			doc = fmt.Appendf(doc, `["row %d`, i)
			for x := uint64(i) + 1; len(doc) < rowBytes-2; x = x*6364136223846793005 + 1442695040888963407 {
				doc = fmt.Appendf(doc, "%016x", x)
			}
			if err := yield([]any{i, json.RawMessage(append(doc, `"]`...))}); err != nil {
				return err
			}
		}
		return nil
	}}
	if err := Parquet(context.Background(), f, table); err != nil {
		t.Fatal(err)
	}
	t.Logf("peak heap %.1f MiB", float64(peak)/(1<<20))
	if peak > heapBound {
		t.Errorf("Go heap reached %d MiB while writing %d MiB in row groups of 1 MiB, want at most %d MiB", peak>>20, rows*rowBytes>>20, heapBound>>20)
	}

	db, err := sql.Open("duckdb", "")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	r, err := db.Query("SELECT n, length(evidence::VARCHAR) FROM read_parquet(" + Quote(path) + ")")
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	next := int64(0)
	for r.Next() {
		var n, length int64
		if err := r.Scan(&n, &length); err != nil {
			t.Fatal(err)
		}
		if n != next || length < rowBytes-16 {
			t.Fatalf("row %d read back as row %d of %d bytes", next, n, length)
		}
		next++
	}
	if err := r.Err(); err != nil {
		t.Fatal(err)
	}
	var groups int
	if err := db.QueryRow("SELECT count(DISTINCT row_group_id) FROM parquet_metadata(" + Quote(path) + ")").Scan(&groups); err != nil {
		t.Fatal(err)
	}
	if next != rows || groups < rows*rowBytes/parquetRowGroupBytes {
		t.Errorf("%d rows in %d row groups, want %d rows in at least %d", next, groups, rows, rows*rowBytes/parquetRowGroupBytes)
	}
}

// TestParquetRefusesWhatItCannotWrite: a column without a type or of a type it does not write, a
// value that does not fit its column and text that is not JSON are errors, not guesses.
func TestParquetRefusesWhatItCannotWrite(t *testing.T) {
	for _, c := range []struct {
		columns []Column
		row     []any
		want    string
	}{
		{[]Column{{Name: "x"}}, []any{"a"}, "column x has no type"},
		{[]Column{{Name: "x", Type: "DOUBLE"}}, []any{1.5}, "column x: type DOUBLE is not one Parquet writes"},
		{[]Column{{Name: "x", Type: "JSON"}}, []any{`{"a":`}, "row 1, column x: not valid JSON"},
		{[]Column{{Name: "x", Type: "BIGINT"}}, []any{"5"}, "row 1, column x: string is not an integer"},
		{[]Column{{Name: "x", Type: "VARCHAR"}}, []any{5}, "row 1, column x: int is not text"},
		{[]Column{{Name: "x", Type: "TIMESTAMPTZ"}}, []any{"2026-11-21"}, "row 1, column x: string is not a time"},
		{[]Column{{Name: "x", Type: "VARCHAR"}}, []any{"a", "b"}, "row 1 has 2 values for 1 columns"},
	} {
		err := Parquet(context.Background(), &bytes.Buffer{}, &Table{Columns: c.columns, Rows: [][]any{c.row}})
		if err == nil || !strings.HasPrefix(err.Error(), c.want) {
			t.Errorf("%v %v: error %v, want %q", c.columns, c.row, err, c.want)
		}
	}
}

// TestParquetOfNoRows: a table without rows (a report without findings) is a file DuckDB reads as
// its columns, typed, and no row.
func TestParquetOfNoRows(t *testing.T) {
	path := filepath.Join(t.TempDir(), "empty.parquet")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := Parquet(context.Background(), f, &Table{Columns: parquetColumns}); err != nil {
		t.Fatal(err)
	}
	db, err := sql.Open("duckdb", "")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if got, want := readBack(t, db, path), "text VARCHAR | doc JSON | n BIGINT | at TIMESTAMPTZ | doc_text VARCHAR | "; got != want {
		t.Errorf("read back %q, want %q", got, want)
	}
}
