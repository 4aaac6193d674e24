package ingest

import (
	"bytes"
	"encoding/json"
	"sync/atomic"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// auditStreamSchema is what the Go side hands to DuckDB: the raw event JSON plus what Go
// extracts cheaply (position, request URI query). DuckDB's arrow scan of a C stream mis-maps
// columns when a query projects only some of them, so the load query must use every column.
var auditStreamSchema = arrow.NewSchema([]arrow.Field{
	{Name: "raw", Type: arrow.BinaryTypes.String},
	{Name: "line", Type: arrow.PrimitiveTypes.Int64},
	{Name: "byte_offset", Type: arrow.PrimitiveTypes.Int64},
	{Name: "q_watch", Type: arrow.FixedWidthTypes.Boolean, Nullable: true},
	{Name: "q_rv", Type: arrow.BinaryTypes.String, Nullable: true},
	{Name: "q_rv_num", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
	{Name: "q_rv_match", Type: arrow.BinaryTypes.String, Nullable: true},
	{Name: "q_timeout", Type: arrow.PrimitiveTypes.Int32, Nullable: true},
	{Name: "q_label", Type: arrow.BinaryTypes.String, Nullable: true},
	{Name: "q_field", Type: arrow.BinaryTypes.String, Nullable: true},
	{Name: "q_bookmarks", Type: arrow.FixedWidthTypes.Boolean, Nullable: true},
	{Name: "q_initial", Type: arrow.FixedWidthTypes.Boolean, Nullable: true},
	{Name: "q_limit", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
	{Name: "q_continue", Type: arrow.FixedWidthTypes.Boolean},
}, nil)

// auditBatch accumulates rows of one Arrow record batch. raw values live in one byte buffer:
// for line-per-event input it is the chunk itself, so event bytes are not copied.
type auditBatch struct {
	values  []byte
	offsets []int32
	line    *array.Int64Builder
	offset  *array.Int64Builder
	watch   *array.BooleanBuilder
	rv      *array.StringBuilder
	rvNum   *array.Int64Builder
	rvMatch *array.StringBuilder
	timeout *array.Int32Builder
	label   *array.StringBuilder
	field   *array.StringBuilder
	marks   *array.BooleanBuilder
	initial *array.BooleanBuilder
	limit   *array.Int64Builder
	cont    *array.BooleanBuilder
}

func newAuditBatch(values []byte) *auditBatch {
	mem := memory.DefaultAllocator
	return &auditBatch{
		values:  values,
		line:    array.NewInt64Builder(mem),
		offset:  array.NewInt64Builder(mem),
		watch:   array.NewBooleanBuilder(mem),
		rv:      array.NewStringBuilder(mem),
		rvNum:   array.NewInt64Builder(mem),
		rvMatch: array.NewStringBuilder(mem),
		timeout: array.NewInt32Builder(mem),
		label:   array.NewStringBuilder(mem),
		field:   array.NewStringBuilder(mem),
		marks:   array.NewBooleanBuilder(mem),
		initial: array.NewBooleanBuilder(mem),
		limit:   array.NewInt64Builder(mem),
		cont:    array.NewBooleanBuilder(mem),
	}
}

func (b *auditBatch) rows() int { return max(len(b.offsets)-1, 0) }

// add appends one event whose JSON is values[start:end] (end is the start of whatever follows;
// trailing whitespace inside the range is harmless to the JSON parser).
func (b *auditBatch) add(start, end int, line, offset int64) {
	if len(b.offsets) > 0 && int(b.offsets[len(b.offsets)-1]) != start {
		panic("auditBatch: values must be contiguous")
	}
	if len(b.offsets) == 0 {
		b.offsets = append(b.offsets, int32(start))
	}
	b.offsets = append(b.offsets, int32(end))
	b.line.Append(line)
	b.offset.Append(offset)
	uri, _ := topLevelString(b.values[start:end], "requestURI")
	q := parseRequestQuery(uri)
	appendBool(b.watch, q.watch)
	appendString(b.rv, q.resourceVersion)
	appendInt64(b.rvNum, q.resourceVersionNum)
	appendString(b.rvMatch, q.resourceVersionMatch)
	if q.timeoutSeconds != nil {
		b.timeout.Append(*q.timeoutSeconds)
	} else {
		b.timeout.AppendNull()
	}
	appendString(b.label, q.labelSelector)
	appendString(b.field, q.fieldSelector)
	appendBool(b.marks, q.allowWatchBookmarks)
	appendBool(b.initial, q.sendInitialEvents)
	appendInt64(b.limit, q.limit)
	b.cont.Append(q.hasContinue)
}

// each calls f with every event of the batch and its line.
func (b *auditBatch) each(f func(raw []byte, line int64)) {
	for i := 0; i < b.rows(); i++ {
		f(b.values[b.offsets[i]:b.offsets[i+1]], b.line.Value(i))
	}
}

// record builds the Arrow record batch and releases the builders.
func (b *auditBatch) record() arrow.RecordBatch {
	n := len(b.offsets) - 1
	raw := array.NewData(arrow.BinaryTypes.String, n, []*memory.Buffer{
		nil,
		memory.NewBufferBytes(arrow.Int32Traits.CastToBytes(b.offsets)),
		memory.NewBufferBytes(b.values),
	}, nil, 0, 0)
	cols := []arrow.Array{array.NewStringData(raw)}
	raw.Release()
	for _, bl := range []array.Builder{b.line, b.offset, b.watch, b.rv, b.rvNum, b.rvMatch, b.timeout, b.label, b.field, b.marks, b.initial, b.limit, b.cont} {
		cols = append(cols, bl.NewArray())
		bl.Release()
	}
	rec := array.NewRecordBatch(auditStreamSchema, cols, int64(n))
	b.values = nil
	for _, c := range cols {
		c.Release()
	}
	return rec
}

func appendBool(b *array.BooleanBuilder, v *bool) {
	if v == nil {
		b.AppendNull()
	} else {
		b.Append(*v)
	}
}

func appendString(b *array.StringBuilder, v *string) {
	if v == nil {
		b.AppendNull()
	} else {
		b.Append(*v)
	}
}

func appendInt64(b *array.Int64Builder, v *int64) {
	if v == nil {
		b.AppendNull()
	} else {
		b.Append(*v)
	}
}

// isolateBytes is the event size from which an event travels to DuckDB in a batch of its own:
// DuckDB's JSON functions need several times an event's size while decoding it, so big events
// are decoded one at a time rather than side by side in one vector.
const isolateBytes = 1 << 20

// chunkToBatches turns a chunk of lines into batches. Lines are used in place; a line with a
// prefix before its JSON object (a log shipper's host or timestamp) or an EventList forces
// the remaining lines to be compacted toward the front of the chunk, which is safe because
// the write position never passes the read position.
// Lines longer than maxLine are returned as rejected instead.
func chunkToBatches(c *chunk, maxLine int) ([]*auditBatch, []rejected) {
	var rejects []rejected
	buf := c.data
	var batches []*auditBatch
	b := newAuditBatch(buf)
	cut := func() {
		if b.rows() > 0 {
			batches = append(batches, b)
			b = newAuditBatch(buf)
		}
	}
	w := 0 // end of the values written so far
	pos := 0
	line := c.firstLine
	for pos < len(buf) {
		end := len(buf)
		next := len(buf)
		if i := bytes.IndexByte(buf[pos:], '\n'); i >= 0 {
			end, next = pos+i, pos+i+1
		}
		text := buf[pos:end]
		offset := c.base + int64(pos)
		start := jsonStart(text)
		big := len(text) >= isolateBytes
		if big {
			cut()
		}
		switch {
		case len(text) > maxLine:
			o := oversizedLine{line: line, offset: offset, length: int64(len(text)), head: text[:min(len(text), 200)]}
			rejects = append(rejects, rejected{line: line, offset: offset, reason: o.reason(maxLine), text: o.head})
			// w stays put: the lines after this one are compacted over it.
		case start < 0: // blank line: nothing to load
			if w == pos {
				w = next
				if b.rows() > 0 {
					b.offsets[len(b.offsets)-1] = int32(w)
				}
			}
		case isEventList(text[start:]):
			items, ok := eventListItems(text[start:])
			if !ok { // let DuckDB reject it with the line intact
				w = b.place(buf, w, pos, start, end, next, line, offset)
				break
			}
			for _, it := range items {
				if len(it) >= isolateBytes {
					cut()
				}
				n := copy(buf[w:], it)
				b.add(w, w+n, line, offset)
				w += n
				if len(it) >= isolateBytes {
					cut()
				}
			}
		default:
			w = b.place(buf, w, pos, start, end, next, line, offset)
		}
		if big {
			cut()
		}
		pos = next
		line++
	}
	cut()
	return batches, rejects
}

// place adds the line buf[pos+start:end] as one row, in place when nothing was compacted yet.
func (b *auditBatch) place(buf []byte, w, pos, start, end, next int, line, offset int64) int {
	if start == 0 && w == pos {
		b.add(pos, next, line, offset)
		return next
	}
	n := copy(buf[w:], buf[pos+start:end])
	b.add(w, w+n, line, offset)
	return w + n
}

// jsonStart returns where the JSON object of a line starts: 0 for a plain NDJSON line, after
// the prefix for shipper-prefixed lines, the whole line (so DuckDB rejects it with the line
// as evidence) when there is text but no object, and -1 for a blank line.
func jsonStart(text []byte) int {
	i := skipSpace(text, 0)
	if i == len(text) {
		return -1
	}
	if text[i] == '{' {
		return 0
	}
	if j := bytes.IndexByte(text, '{'); j >= 0 {
		return j
	}
	return 0
}

// isEventList reports whether a line is a webhook-style batch {"kind":"EventList","items":[...]}.
// The scanner stops at the kind member, which the apiserver writes first.
func isEventList(obj []byte) bool {
	kind, ok := topLevelString(obj, "kind")
	return ok && kind == "EventList"
}

// eventListItems returns the raw items of an EventList line, or ok=false if it is malformed.
func eventListItems(obj []byte) ([][]byte, bool) {
	var list struct {
		Items []json.RawMessage `json:"items"`
	}
	if err := json.Unmarshal(obj, &list); err != nil {
		return nil, false
	}
	items := make([][]byte, len(list.Items))
	for i, it := range list.Items {
		items[i] = it
	}
	return items, true
}

// batchStream is the array.RecordReader DuckDB pulls from. Batches are built on a separate
// goroutine so that reading and splitting overlap with DuckDB's parsing.
type batchStream struct {
	refs atomic.Int64
	ch   <-chan arrow.RecordBatch
	cur  arrow.RecordBatch
}

func (s *batchStream) Retain()                        { s.refs.Add(1) }
func (s *batchStream) Release()                       { s.refs.Add(-1) }
func (s *batchStream) Schema() *arrow.Schema          { return auditStreamSchema }
func (s *batchStream) Record() arrow.RecordBatch      { return s.cur }
func (s *batchStream) RecordBatch() arrow.RecordBatch { return s.cur }
func (s *batchStream) Err() error                     { return nil } // read errors are reported beside the stream

func (s *batchStream) Next() bool {
	if s.cur != nil {
		s.cur.Release()
		s.cur = nil
	}
	rec, ok := <-s.ch
	if !ok {
		return false
	}
	s.cur = rec
	return true
}
