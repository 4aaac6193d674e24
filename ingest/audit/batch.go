package audit

import (
	"bytes"
	"strconv"
	"sync/atomic"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// streamSchema is what the Go side hands to DuckDB: the raw event JSON plus what Go extracts
// cheaply (position, request URI query, a write's response resourceVersion, whether its bodies
// are dropped). DuckDB's arrow scan of a C stream mis-maps columns when a query projects only
// some of them, so the load query must use every column: drop_bodies is false for every event
// with --keep-secrets, where a condition on a query parameter let DuckDB fold the column away.
var streamSchema = arrow.NewSchema([]arrow.Field{
	{Name: "raw", Type: arrow.BinaryTypes.StringView},
	{Name: "line", Type: arrow.PrimitiveTypes.Int64},
	{Name: "byte_offset", Type: arrow.PrimitiveTypes.Int64},
	{Name: "q_watch", Type: arrow.FixedWidthTypes.Boolean, Nullable: true},
	{Name: "q_rv", Type: arrow.BinaryTypes.String, Nullable: true},
	{Name: "q_rv_match", Type: arrow.BinaryTypes.String, Nullable: true},
	{Name: "q_timeout", Type: arrow.PrimitiveTypes.Int32, Nullable: true},
	{Name: "q_label", Type: arrow.BinaryTypes.String, Nullable: true},
	{Name: "q_field", Type: arrow.BinaryTypes.String, Nullable: true},
	{Name: "q_bookmarks", Type: arrow.FixedWidthTypes.Boolean, Nullable: true},
	{Name: "q_initial", Type: arrow.FixedWidthTypes.Boolean, Nullable: true},
	{Name: "q_limit", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
	{Name: "q_continue", Type: arrow.FixedWidthTypes.Boolean},
	{Name: "response_rv_text", Type: arrow.BinaryTypes.String, Nullable: true},
	{Name: "drop_bodies", Type: arrow.FixedWidthTypes.Boolean}, // a sensitive event, when redacting
	{Name: "list_api_version", Type: arrow.BinaryTypes.String},
	{Name: "cluster", Type: arrow.BinaryTypes.String},
	{Name: "apiserver", Type: arrow.BinaryTypes.String},
	{Name: "file", Type: arrow.PrimitiveTypes.Int32}, // the event's file in the run (from 1)
}, nil)

// batch accumulates rows of one Arrow record batch. raw values live in one byte buffer:
// for line-per-event input it is the chunk itself, so event bytes are not copied. raw is a
// string view column (Arrow's Utf8View: a 16-byte view of each event into that buffer), so
// that the coalescer joins batches by their views and buffers, not by copying their events.
type batch struct {
	values  []byte
	offsets []int32
	line    *array.Int64Builder
	offset  *array.Int64Builder
	watch   *array.BooleanBuilder
	rv      *array.StringBuilder
	rvMatch *array.StringBuilder
	timeout *array.Int32Builder
	label   *array.StringBuilder
	field   *array.StringBuilder
	marks   *array.BooleanBuilder
	initial *array.BooleanBuilder
	limit   *array.Int64Builder
	cont    *array.BooleanBuilder
	respRV  *array.StringBuilder
	drop    *array.BooleanBuilder
	list    *array.StringBuilder
	cluster *array.StringBuilder
	server  *array.StringBuilder
	// writes are the endpoints writes among the events, for the endpoint deriver.
	writes []batchWrite
	// classes are the events' layoutClass, by row.
	classes []uint16
	// redact says the bodies of sensitive events (isSensitiveEvent) are dropped (drop_bodies).
	redact bool
}

// batchWrite is an endpoints write of the batch's event row.
type batchWrite struct {
	row int
	w   write
}

// newBatch starts a batch of the events in values; redact says to drop sensitive events' bodies.
func newBatch(values []byte, redact bool) *batch {
	mem := memory.DefaultAllocator
	return &batch{
		values:  values,
		redact:  redact,
		line:    array.NewInt64Builder(mem),
		offset:  array.NewInt64Builder(mem),
		watch:   array.NewBooleanBuilder(mem),
		rv:      array.NewStringBuilder(mem),
		rvMatch: array.NewStringBuilder(mem),
		timeout: array.NewInt32Builder(mem),
		label:   array.NewStringBuilder(mem),
		field:   array.NewStringBuilder(mem),
		marks:   array.NewBooleanBuilder(mem),
		initial: array.NewBooleanBuilder(mem),
		limit:   array.NewInt64Builder(mem),
		cont:    array.NewBooleanBuilder(mem),
		respRV:  array.NewStringBuilder(mem),
		drop:    array.NewBooleanBuilder(mem),
		list:    array.NewStringBuilder(mem),
		cluster: array.NewStringBuilder(mem),
		server:  array.NewStringBuilder(mem),
	}
}

func (b *batch) rows() int { return max(len(b.offsets)-1, 0) }

// bytes is the size of the batch's events.
func (b *batch) bytes() int {
	if len(b.offsets) == 0 {
		return 0
	}
	return int(b.offsets[len(b.offsets)-1] - b.offsets[0])
}

// origin says where an event is in its file: the line (for envelopes of records, the line where
// the record starts) and the byte offset in the decompressed stream; and what the envelope
// knows beside the event.
type origin struct {
	line, offset int64
	// listAPIVersion is the apiVersion of the EventList the event is an item of, "" otherwise:
	// the apiserver's webhook sends items without kind and apiVersion (kubernetes#77076).
	listAPIVersion string
	// cluster and apiserver name where the event was logged, "" when the envelope does not say.
	cluster, apiserver string
}

// add appends one event whose JSON is values[start:end] (end is the start of whatever follows;
// trailing whitespace inside the range is harmless to the JSON parser). scan is the event's
// member scan when one was started on the same bytes (possibly at another place: it is
// rebased), nil otherwise.
func (b *batch) add(start, end int, o origin, scan *memberScan) {
	if len(b.offsets) > 0 && int(b.offsets[len(b.offsets)-1]) != start {
		panic("batch: values must be contiguous")
	}
	if len(b.offsets) == 0 {
		b.offsets = append(b.offsets, int32(start))
	}
	b.offsets = append(b.offsets, int32(end))
	b.line.Append(o.line)
	b.offset.Append(o.offset)
	if scan == nil {
		scan = scanMembers(b.values[start:end])
	} else {
		scan.rebase(b.values[start:end])
	}
	if w, ok := endpointWrite(scan); ok {
		b.writes = append(b.writes, batchWrite{row: b.rows() - 1, w: w})
	}
	q := parseRequestQuery(scan.requestURI())
	b.classes = append(b.classes, eventLayoutClass(scan, q.watch))
	appendBool(b.watch, q.watch)
	appendString(b.rv, q.resourceVersion)
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
	appendString(b.respRV, responseRVText(scan))
	b.drop.Append(b.redact && isSensitiveEvent(scan))
	b.list.Append(o.listAPIVersion)
	b.cluster.Append(o.cluster)
	b.server.Append(o.apiserver)
}

// eachWrite calls f with every endpoints write of the batch, in order, with its event's line and
// the cluster its envelope names.
func (b *batch) eachWrite(f func(w write, line int64, cluster string)) {
	for _, bw := range b.writes {
		f(bw.w, b.line.Value(bw.row), b.cluster.Value(bw.row))
	}
}

// eventLayoutClass is the layoutClass of the event scan reads; watch is its query's watch parameter.
func eventLayoutClass(scan *memberScan, watch *bool) uint16 {
	verb, _ := scan.raw(memberVerb)
	stage, _ := scan.raw(memberStage)
	var resource []byte
	if ref, ok := scan.raw(memberObjectRef); ok {
		resource, _ = topLevelRaw(ref, "resource")
	}
	failed := false
	if status, ok := scan.raw(memberResponseStatus); ok {
		code, _ := topLevelRaw(status, "code")
		n, err := strconv.Atoi(string(code))
		failed = err == nil && n >= 400
	}
	return layoutClass(stringText(verb), stringText(stage), stringText(resource), watch != nil && *watch, failed)
}

// stringText returns the text of the raw JSON string value raw (nil for another value): the
// bytes between its quotes when it has no escapes, so that the class of every event is found
// without allocating.
func stringText(raw []byte) []byte {
	if len(raw) < 2 || raw[0] != '"' {
		return nil
	}
	if inner := raw[1 : len(raw)-1]; bytes.IndexByte(inner, '\\') < 0 {
		return inner
	}
	s, ok := unquote(raw)
	if !ok {
		return nil
	}
	return []byte(s)
}

// record builds the Arrow record batch of events of the run's file number file, and releases the
// builders; it returns the events' classes beside it.
func (b *batch) record(file int32) (arrow.RecordBatch, []uint16) {
	n := len(b.offsets) - 1
	views := make([]arrow.ViewHeader, n)
	for i := range views {
		start, end := b.offsets[i], b.offsets[i+1]
		views[i].SetBytes(b.values[start:end])
		if !arrow.IsViewInline(int(end - start)) {
			views[i].SetIndexOffset(0, start)
		}
	}
	raw := array.NewData(arrow.BinaryTypes.StringView, n, []*memory.Buffer{
		nil,
		memory.NewBufferBytes(arrow.ViewHeaderTraits.CastToBytes(views)),
		memory.NewBufferBytes(b.values),
	}, nil, 0, 0)
	cols := []arrow.Array{array.MakeFromData(raw)}
	raw.Release()
	for _, bl := range []array.Builder{b.line, b.offset, b.watch, b.rv, b.rvMatch, b.timeout, b.label, b.field, b.marks, b.initial, b.limit, b.cont, b.respRV, b.drop, b.list, b.cluster, b.server} {
		cols = append(cols, bl.NewArray())
		bl.Release()
	}
	files := array.NewInt32Builder(memory.DefaultAllocator)
	defer files.Release()
	for range n {
		files.Append(file)
	}
	cols = append(cols, files.NewArray())
	rec := array.NewRecordBatch(streamSchema, cols, int64(n))
	b.values = nil
	for _, c := range cols {
		c.Release()
	}
	return rec, b.classes
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

// batchStream is the array.RecordReader DuckDB pulls from. Batches are built on a separate
// goroutine so that reading and splitting overlap with DuckDB's parsing.
type batchStream struct {
	refs atomic.Int64
	ch   <-chan arrow.RecordBatch
	cur  arrow.RecordBatch
}

func (s *batchStream) Retain()                        { s.refs.Add(1) }
func (s *batchStream) Release()                       { s.refs.Add(-1) }
func (s *batchStream) Schema() *arrow.Schema          { return streamSchema }
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
