package tabular

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/extensions"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/compress"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
)

// A row group of Parquet's output ends when its values reach parquetRowGroupBytes (text counted by
// its length, numbers and times as 8 bytes, NULL as 1) or it holds parquetRowGroupRows rows
// (DuckDB's default row group size): what Parquet holds in memory at once, whatever the number of
// rows.
var (
	parquetRowGroupBytes = 16 << 20
	parquetRowGroupRows  = 122_880
)

// Parquet writes t to w as Parquet (zstd), a row group at a time. DuckDB's read_parquet reads it
// back with the columns of t, typed as their Type says, and the rows in the order t gives them.
// Every column needs its DuckDB Type, one of VARCHAR, JSON, BIGINT and TIMESTAMPTZ; a nil value is
// NULL.
func Parquet(ctx context.Context, w io.Writer, t *Table) error {
	schema, err := parquetSchema(t.Columns)
	if err != nil {
		return err
	}
	bw := bufio.NewWriterSize(w, 1<<20)
	props := parquet.NewWriterProperties(parquet.WithCompression(compress.Codecs.Zstd),
		parquet.WithMaxRowGroupLength(int64(parquetRowGroupRows)))
	fw, err := pqarrow.NewFileWriter(schema, bw, props, pqarrow.DefaultWriterProps())
	if err != nil {
		return err
	}
	b := array.NewRecordBuilder(memory.DefaultAllocator, schema)
	defer b.Release()
	var rows, rowGroupRows, rowGroupBytes int
	flush := func() error {
		if rowGroupRows == 0 {
			return nil
		}
		rec := b.NewRecordBatch()
		defer rec.Release()
		rowGroupRows, rowGroupBytes = 0, 0
		return fw.Write(rec)
	}
	err = t.Each(func(row []any) error {
		if err := ctx.Err(); err != nil {
			return err
		}
		rows++
		if len(row) != len(t.Columns) {
			return fmt.Errorf("row %d has %d values for %d columns", rows, len(row), len(t.Columns))
		}
		for i, v := range row {
			n, err := appendParquetValue(b.Field(i), t.Columns[i].Type, v)
			if err != nil {
				return fmt.Errorf("row %d, column %s: %w", rows, t.Columns[i].Name, err)
			}
			rowGroupBytes += n
		}
		rowGroupRows++
		if rowGroupRows >= parquetRowGroupRows || rowGroupBytes >= parquetRowGroupBytes {
			return flush()
		}
		return nil
	})
	if err == nil {
		err = flush()
	}
	if err != nil {
		return err
	}
	if err := fw.Close(); err != nil {
		return err
	}
	return bw.Flush()
}

// parquetSchema is the Arrow schema of columns: the types DuckDB's COPY writes for theirs.
func parquetSchema(columns []Column) (*arrow.Schema, error) {
	fields := make([]arrow.Field, len(columns))
	for i, c := range columns {
		var dt arrow.DataType
		switch c.Type {
		case "VARCHAR":
			dt = arrow.BinaryTypes.String
		case "JSON": // text with the Parquet logical type JSON, which DuckDB reads as JSON
			json, err := extensions.NewJSONType(arrow.BinaryTypes.String)
			if err != nil {
				return nil, err
			}
			dt = json
		case "BIGINT":
			dt = arrow.PrimitiveTypes.Int64
		case "TIMESTAMPTZ": // microseconds adjusted to UTC, as DuckDB stores and writes it
			dt = &arrow.TimestampType{Unit: arrow.Microsecond, TimeZone: "UTC"}
		case "":
			return nil, fmt.Errorf("column %s has no type", c.Name)
		default:
			return nil, fmt.Errorf("column %s: type %s is not one Parquet writes (VARCHAR, JSON, BIGINT, TIMESTAMPTZ)", c.Name, c.Type)
		}
		fields[i] = arrow.Field{Name: c.Name, Type: dt, Nullable: true}
	}
	return arrow.NewSchema(fields, nil), nil
}

// appendParquetValue appends v to the builder of a column of type typ and returns the bytes it
// adds to the row group.
func appendParquetValue(b array.Builder, typ string, v any) (int, error) {
	if v == nil {
		b.AppendNull()
		return 1, nil
	}
	switch typ {
	case "VARCHAR", "JSON":
		if typ == "JSON" {
			b = b.(*array.ExtensionBuilder).StorageBuilder()
		}
		sb := b.(*array.StringBuilder)
		switch x := v.(type) {
		case string:
			if typ == "JSON" && !json.Valid([]byte(x)) {
				return 0, fmt.Errorf("not valid JSON: %.40q", x)
			}
			sb.Append(x)
			return len(x), nil
		case json.RawMessage:
			v = []byte(x)
		}
		text, ok := v.([]byte)
		if !ok {
			return 0, fmt.Errorf("%T is not text", v)
		}
		if typ == "JSON" && !json.Valid(text) {
			return 0, fmt.Errorf("not valid JSON: %.40q", text)
		}
		sb.BinaryBuilder.Append(text)
		return len(text), nil
	case "BIGINT":
		switch x := v.(type) {
		case int64:
			b.(*array.Int64Builder).Append(x)
		case int:
			b.(*array.Int64Builder).Append(int64(x))
		default:
			return 0, fmt.Errorf("%T is not an integer", v)
		}
		return 8, nil
	case "TIMESTAMPTZ":
		x, ok := v.(time.Time)
		if !ok {
			return 0, fmt.Errorf("%T is not a time", v)
		}
		b.(*array.TimestampBuilder).Append(arrow.Timestamp(x.UnixMicro()))
		return 8, nil
	}
	return 0, fmt.Errorf("type %s is not one Parquet writes", typ)
}
