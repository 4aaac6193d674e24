package audit

import (
	"fmt"
	"slices"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/kubesift/kubesift/internal/source"
	"github.com/kubesift/kubesift/store"
)

// recordRows is how many events DuckDB gets in one Arrow record: a row group's worth. DuckDB's
// INSERT takes each record of the stream as a collection of its own and merges the collections
// smaller than a row group afterwards, appending their rows a second time (3.7 of 25.5 CPU-s per
// 1M events of the independent mix, whose 4 MB batches hold about 4,700 events); a record of a
// whole row group is written as it is.
const recordRows = store.RowGroupRows

// vectorRows is DuckDB's vector size: its Arrow scan cuts each record into vectors of this many
// rows from the record's start, and its JSON functions decode the events of a vector side by side.
const vectorRows = 2048

// coalescer joins the records of small batches into records of recordRows events. A joined
// record's raw column is the batches' views with their chunks as its buffers: the events are
// not copied (copying them took a tenth of the ingest's CPU time on the independent mix, in
// Go's allocator, page faults and memmove). It keeps what the batches promise about DuckDB's
// memory: the events of one vector come to at most source.ChunkBytes unless the vector is one
// event, and an event of isolateBytes or more is alone in its record. A batch of bigger events
// (more than source.ChunkBytes per vector on average, 2 KB an event) goes through as it is:
// joined, it would make records that stay smaller than a row group anyway.
// Each joined record's events are put in the layout's order (inLayoutOrder).
type coalescer struct {
	parts   []arrow.RecordBatch // slices of the batches the next record is gathered from
	classes [][]uint16          // the layoutClass of each part's events
	rows    int64               // events in parts
	window  int64               // bytes of the events in the last vector of parts
}

// add takes the record of one batch and its events' classes, and returns the records that are
// ready, in order.
func (c *coalescer) add(rec arrow.RecordBatch, classes []uint16) ([]arrow.RecordBatch, error) {
	defer rec.Release()
	n := rec.NumRows()
	raw := rec.Column(0).(*array.StringView)
	total := int64(0)
	for i := range int(n) {
		total += int64(raw.ValueLen(i))
	}
	if n > 0 && total > source.ChunkBytes*n/vectorRows {
		out, err := c.flush(1)
		if err != nil {
			return nil, err
		}
		rec.Retain()
		return append(out, rec), nil
	}
	var out []arrow.RecordBatch
	cut := func(start, end int64) error {
		if end > start {
			c.parts = append(c.parts, rec.NewSlice(start, end))
			c.classes = append(c.classes, classes[start:end])
		}
		joined, err := c.join()
		if err != nil {
			releaseAll(out)
			return err
		}
		out = append(out, joined)
		return nil
	}
	start := int64(0)
	for i := range n {
		size := int64(raw.ValueLen(int(i)))
		if c.rows%vectorRows != 0 && c.window+size > source.ChunkBytes { // it would overfill its vector: the record ends before it
			if err := cut(start, i); err != nil {
				return nil, err
			}
			start = i
		}
		if c.rows%vectorRows == 0 {
			c.window = 0
		}
		c.window += size
		c.rows++
		if c.rows == recordRows {
			if err := cut(start, i+1); err != nil {
				return nil, err
			}
			start = i + 1
		}
	}
	if start < n {
		c.parts = append(c.parts, rec.NewSlice(start, n))
		c.classes = append(c.classes, classes[start:])
	}
	return out, nil
}

// flush returns the record of the events gathered so far, if there are any, in up to pieces
// slices (the CPUs DuckDB has), each of whole vectors. DuckDB's Arrow scan hands each record to
// one thread: all the events of a small file are in this record, and in one piece they loaded on
// one CPU (BENCHMARKS.md). The slices are of the record in its layout order, which the insert
// keeps.
func (c *coalescer) flush(pieces int) ([]arrow.RecordBatch, error) {
	if c.rows == 0 {
		return nil, nil
	}
	rec, err := c.join()
	if err != nil {
		return nil, err
	}
	defer rec.Release()
	vectors := (rec.NumRows() + vectorRows - 1) / vectorRows
	n := max(1, min(int64(pieces), vectors))
	out := make([]arrow.RecordBatch, 0, n)
	start := int64(0)
	for i := range n {
		end := min(rec.NumRows(), (vectors*(i+1)/n)*vectorRows)
		out = append(out, rec.NewSlice(start, end))
		start = end
	}
	return out, nil
}

// join makes one record of parts and starts the next.
func (c *coalescer) join() (arrow.RecordBatch, error) {
	parts, classes := c.parts, slices.Concat(c.classes...)
	c.parts, c.classes, c.rows, c.window = nil, nil, 0, 0
	if len(parts) == 1 {
		return inLayoutOrder(parts[0], classes)
	}
	defer releaseAll(parts)
	cols := make([]arrow.Array, len(streamSchema.Fields()))
	rows := int64(0)
	for _, p := range parts {
		rows += p.NumRows()
	}
	for i := range cols {
		same := make([]arrow.Array, len(parts))
		for j, p := range parts {
			same[j] = p.Column(i)
		}
		col, err := array.Concatenate(same, memory.DefaultAllocator)
		if err != nil {
			for _, done := range cols[:i] {
				done.Release()
			}
			return nil, fmt.Errorf("joining %d batches of events: %w", len(parts), err)
		}
		cols[i] = col
	}
	rec := array.NewRecordBatch(streamSchema, cols, rows)
	for _, col := range cols {
		col.Release()
	}
	return inLayoutOrder(rec, classes)
}

// release drops what was gathered, when the load stops before the last batch.
func (c *coalescer) release() {
	releaseAll(c.parts)
	c.parts, c.classes, c.rows, c.window = nil, nil, 0, 0
}

func releaseAll(recs []arrow.RecordBatch) {
	for _, r := range recs {
		r.Release()
	}
}
