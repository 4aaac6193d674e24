package audit

import (
	"context"
	"fmt"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/compute"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/kubesift/kubesift/internal/source"
)

// The layout of audit_events. The rules' scans keep few kinds of events (the successful writes, the
// creates and deletes among them, the watches, the lists answered 410, the events of Endpoints,
// Services or Leases), and DuckDB's scan decodes every column it returns for a whole vector (2,048
// rows) in which its filter keeps one event, but skips the vector when the filter keeps none. So
// the events of each record (a row group's worth, in the order of the file otherwise) are ordered
// by their layoutClass: each kind then fills whole vectors, and a scan skips the vectors of the
// other kinds. Rows keep their file and line, and no query depends on the order of rows in the
// table: the duplicate check's tiebreak by rowid (removeDuplicateRows) still keeps the first copy
// in the file, since copies of an event are of one kind and each kind keeps the file's order.
const (
	verbGroups     = 9 // create, update, patch, delete, deletecollection, watch, list, get, any other
	outcomeGroups  = 2 // answered below 400 (or not yet), answered 400 or above
	stageGroups    = 4 // ResponseComplete, ResponseStarted, RequestReceived, any other
	resourceGroups = 7 // endpoints, endpointslices, services, configmaps, leases, pods, any other
	layoutClasses  = verbGroups * outcomeGroups * stageGroups * resourceGroups
)

// layoutClass is the place of an event's kind in a record: by verb (the writes first, each verb
// apart, then watches, lists, gets and any other verb), then whether the answer was an error
// (failed: a code of 400 or above), then stage, then resource; one of layoutClasses. Each write
// verb and each outcome is a kind of its own because the rules' filters tell them apart: the
// creates and deletes of Endpoints among their updates, the writes that succeeded, the lists
// answered 410 among all lists (on the recordings replicated to 10M events all rules read 7.6 GB
// of the database instead of 8.0 GB with the writes together and the outcomes mixed, in 0.91x the
// time: BENCHMARKS.md).
func layoutClass(verb, stage, resource []byte, watch, failed bool) uint16 {
	var v int
	switch string(verb) {
	case "create":
		v = 0
	case "update":
		v = 1
	case "patch":
		v = 2
	case "delete":
		v = 3
	case "deletecollection":
		v = 4
	case "watch":
		v = 5
	case "list":
		v = 6
	case "get":
		v = 7
	default:
		v = 8
	}
	if watch && v > 5 { // a list with watch=true is a watch (audit_events.watch); a write stays a write
		v = 5
	}
	o := 0
	if failed {
		o = 1
	}
	var s int
	switch string(stage) {
	case "ResponseComplete":
		s = 0
	case "ResponseStarted":
		s = 1
	case "RequestReceived":
		s = 2
	default:
		s = 3
	}
	var r int
	switch string(resource) {
	case "endpoints":
		r = 0
	case "endpointslices":
		r = 1
	case "services":
		r = 2
	case "configmaps":
		r = 3
	case "leases":
		r = 4
	case "pods":
		r = 5
	default:
		r = 6
	}
	return uint16(((v*outcomeGroups+o)*stageGroups+s)*resourceGroups + r)
}

// layoutOrder returns the rows ordered by class, each class in the order of its rows (a
// counting sort), or nil when they are in that order already.
func layoutOrder(classes []uint16) []int32 {
	var starts [layoutClasses + 1]int32
	sorted := true
	for i, c := range classes {
		starts[int(c)+1]++
		if i > 0 && c < classes[i-1] {
			sorted = false
		}
	}
	if sorted {
		return nil
	}
	for c := 1; c < len(starts); c++ {
		starts[c] += starts[c-1]
	}
	order := make([]int32, len(classes))
	for i, c := range classes {
		order[starts[c]] = int32(i)
		starts[c]++
	}
	return order
}

// layoutVectorBytes is the most events a vector may hold in the layout's order, unless it is one
// event. In the order of the file the coalescer keeps a vector within source.ChunkBytes; the
// layout gathers the writes, the events with bodies, into vectors of their own, which on the
// real recordings replicated hold 6 MB (2.9 KB an event). DuckDB's JSON functions decode the
// events of a vector side by side, so this bounds what one vector costs them.
const layoutVectorBytes = 2 * source.ChunkBytes

// vectorsFit reports whether, with its rows in order, no vector of a record holds more than
// layoutVectorBytes of events unless it is one event.
func vectorsFit(raw *array.StringView, order []int32) bool {
	for v := 0; v < len(order); v += vectorRows {
		end := min(v+vectorRows, len(order))
		bytes := 0
		for _, i := range order[v:end] {
			bytes += raw.ValueLen(int(i))
		}
		if end-v > 1 && bytes > layoutVectorBytes {
			return false
		}
	}
	return true
}

// inLayoutOrder returns rec with its rows ordered by their classes, or rec itself when they are
// in that order or the order would overfill a vector (vectorsFit). It takes over rec.
func inLayoutOrder(rec arrow.RecordBatch, classes []uint16) (arrow.RecordBatch, error) {
	order := layoutOrder(classes)
	if order == nil || !vectorsFit(rec.Column(0).(*array.StringView), order) {
		return rec, nil
	}
	defer rec.Release()
	return permute(rec, order)
}

// permute returns rec's rows in the given order. The events are not copied: the raw column's
// views are ordered over the same buffers (Arrow's take kernels do not handle string views);
// the other columns are taken with compute.TakeArray.
func permute(rec arrow.RecordBatch, order []int32) (arrow.RecordBatch, error) {
	n := len(order)
	raw := rec.Column(0).Data()
	if raw.NullN() != 0 {
		return nil, fmt.Errorf("ordering a record of events: %d events without text", raw.NullN())
	}
	views := arrow.ViewHeaderTraits.CastFromBytes(raw.Buffers()[1].Bytes())[raw.Offset():]
	ordered := make([]arrow.ViewHeader, n)
	for i, j := range order {
		ordered[i] = views[j]
	}
	buffers := append([]*memory.Buffer{nil, memory.NewBufferBytes(arrow.ViewHeaderTraits.CastToBytes(ordered))}, raw.Buffers()[2:]...)
	rawData := array.NewData(arrow.BinaryTypes.StringView, n, buffers, nil, 0, 0)
	cols := []arrow.Array{array.MakeFromData(rawData)}
	rawData.Release()
	release := func() {
		for _, c := range cols {
			c.Release()
		}
	}
	b := array.NewInt32Builder(memory.DefaultAllocator)
	b.AppendValues(order, nil)
	indices := b.NewInt32Array()
	b.Release()
	defer indices.Release()
	for i := 1; i < int(rec.NumCols()); i++ {
		col, err := compute.TakeArray(context.Background(), rec.Column(i), indices)
		if err != nil {
			release()
			return nil, fmt.Errorf("ordering a record of events, column %s: %w", rec.ColumnName(i), err)
		}
		cols = append(cols, col)
	}
	out := array.NewRecordBatch(rec.Schema(), cols, int64(n))
	release()
	return out, nil
}
