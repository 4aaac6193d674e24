package audit

import (
	"fmt"
	"strconv"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
)

// layoutEvent is an audit event of the given kind whose requestURI asks for resourceVersion=line,
// padded to about size bytes.
func layoutEvent(line int64, verb, stage, resource string, size int) string {
	ev := fmt.Sprintf(`{"kind":"Event","apiVersion":"audit.k8s.io/v1","level":"Metadata","auditID":"id-%d","stage":%q,`+
		`"requestURI":"/api/v1/%s?resourceVersion=%d","verb":%q,"objectRef":{"resource":%q,"namespace":"ns"},"pad":""}`,
		line, stage, resource, line, verb, resource)
	if pad := size - len(ev); pad > 0 {
		ev = strings.Replace(ev, `"pad":""`, `"pad":"`+strings.Repeat("x", pad)+`"`, 1)
	}
	return ev
}

// layoutBatch builds the record of a batch of events, numbered from line, with their classes.
func layoutBatch(line int64, events []string) (arrow.RecordBatch, []uint16) {
	b := newBatch([]byte(strings.Join(events, "")), true)
	start := 0
	for _, ev := range events {
		b.add(start, start+len(ev), origin{line: line, offset: int64(start)}, nil)
		start += len(ev)
		line++
	}
	return b.record(1)
}

// coalesceAll runs batches of events through a coalescer and returns the records it makes.
func coalesceAll(t *testing.T, batches [][]string) []arrow.RecordBatch {
	t.Helper()
	var c coalescer
	var out []arrow.RecordBatch
	line := int64(1)
	for _, events := range batches {
		recs, err := c.add(layoutBatch(line, events))
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, recs...)
		line += int64(len(events))
	}
	recs, err := c.flush(1)
	if err != nil {
		t.Fatal(err)
	}
	return append(out, recs...)
}

// recordLines checks that every row of rec is whole (its event, line and query columns belong to
// one event) and returns the rows' lines and classes.
func recordLines(t *testing.T, rec arrow.RecordBatch) (lines []int64, classes []uint16) {
	t.Helper()
	raw := rec.Column(0).(*array.StringView)
	lineCol := rec.Column(1).(*array.Int64)
	rvCol := rec.Column(4).(*array.String)
	if rec.ColumnName(4) != "q_rv" {
		t.Fatalf("column 4 is %s, not q_rv", rec.ColumnName(4))
	}
	for i := range int(rec.NumRows()) {
		event := []byte(raw.Value(i))
		id, _ := topLevelString(event, "auditID")
		line := lineCol.Value(i)
		if id != "id-"+strconv.FormatInt(line, 10) || rvCol.Value(i) != strconv.FormatInt(line, 10) {
			t.Fatalf("row %d: event %s, line %d, resourceVersion parameter %s", i, id, line, rvCol.Value(i))
		}
		lines = append(lines, line)
		classes = append(classes, eventLayoutClass(scanMembers(event), nil))
	}
	return lines, classes
}

// TestRecordsInLayoutOrder: the events of each record DuckDB gets are ordered by kind (writes,
// watches, lists, gets, then by stage and resource), each kind in the order of the file, every
// event once and each row whole; a record whose order would put more than layoutVectorBytes
// in one vector keeps the order of the file.
func TestRecordsInLayoutOrder(t *testing.T) {
	verbs := []string{"get", "watch", "update", "list", "create", "patch", "delete"}
	stages := []string{"ResponseComplete", "ResponseStarted", "RequestReceived"}
	resources := []string{"pods", "endpoints", "leases", "services", "configmaps", "secrets", "endpointslices"}
	var batches [][]string
	line := int64(1)
	for range 8 { // 40,000 small events of every kind, mixed
		var events []string
		for range 5000 {
			events = append(events, layoutEvent(line, verbs[line%7], stages[line%3], resources[line%5+line%3], 300))
			line++
		}
		batches = append(batches, events)
	}
	// a row group's worth of patches of 5,000 bytes, each between two gets of 200: 1.8 KB an event,
	// 3.7 MB a vector in the file's order; the patches together would put 10.2 MB in each of theirs
	var mixed []string
	for i := range 16384 {
		if i%3 == 0 {
			mixed = append(mixed, layoutEvent(line, "patch", "ResponseComplete", "configmaps", 5000))
		} else {
			mixed = append(mixed, layoutEvent(line, "get", "ResponseComplete", "configmaps", 200))
		}
		line++
	}
	batches = append(batches, mixed)
	// more than a row group in one batch: the last record is a slice of it from its middle
	var long []string
	for range 20000 {
		long = append(long, layoutEvent(line, verbs[line%7], stages[line%3], resources[line%5+line%3], 100))
		line++
	}
	batches = append(batches, long)

	out := coalesceAll(t, batches)
	var shapes []string
	seen := map[int64]bool{}
	for r, rec := range out {
		lines, classes := recordLines(t, rec)
		checkVectorBytes(t, rec, layoutVectorBytes)
		ordered := true
		for i := 1; i < len(lines); i++ {
			if classes[i] < classes[i-1] || (classes[i] == classes[i-1] && lines[i] < lines[i-1]) {
				ordered = false
			}
		}
		inFile := true
		for i := 1; i < len(lines); i++ {
			if lines[i] < lines[i-1] {
				inFile = false
			}
		}
		for _, l := range lines {
			if seen[l] {
				t.Fatalf("record %d: the event of line %d again", r, l)
			}
			seen[l] = true
		}
		shapes = append(shapes, fmt.Sprintf("%d rows ordered=%v in-file=%v", rec.NumRows(), ordered, inFile))
		rec.Release()
	}
	if int64(len(seen)) != line-1 {
		t.Fatalf("%d events came out of %d", len(seen), line-1)
	}
	want := []string{
		"16384 rows ordered=true in-file=false", "16384 rows ordered=true in-file=false",
		// the last 7,232 small events and the first 9,152 patches and gets: in kind order 2,048
		// patches would share a vector
		"16384 rows ordered=false in-file=true",
		// the other patches and gets and the first events of the long batch, whose small creates and
		// updates come first: the big patches then fall into vectors within layoutVectorBytes
		"16384 rows ordered=true in-file=false",
		"10848 rows ordered=true in-file=false", // the rest of the long batch: a slice from its middle
	}
	if strings.Join(shapes, "\n") != strings.Join(want, "\n") {
		t.Errorf("records\n%s\nwant\n%s", strings.Join(shapes, "\n"), strings.Join(want, "\n"))
	}
}

// TestLayoutClass: the kinds the rules' scans keep come before the others, by verb first, each
// write verb apart, then the answers below 400 before the errors.
func TestLayoutClass(t *testing.T) {
	for _, c := range []struct {
		first, then [5]string // verb, stage, resource, watch parameter ("" or "true"), responseStatus.code
	}{
		{[5]string{"deletecollection", "Panic", "pods", "", "500"}, [5]string{"watch", "ResponseComplete", "endpoints", "", ""}},
		{[5]string{"list", "RequestReceived", "", "true", ""}, [5]string{"list", "ResponseComplete", "endpoints", "", "200"}},
		{[5]string{"watch", "ResponseComplete", "leases", "", "200"}, [5]string{"watch", "ResponseStarted", "endpoints", "", "200"}},
		{[5]string{"update", "ResponseComplete", "endpoints", "", "200"}, [5]string{"update", "ResponseComplete", "endpointslices", "", "200"}},
		{[5]string{"patch", "ResponseComplete", "pods", "", "200"}, [5]string{"patch", "ResponseComplete", "secrets", "", "200"}},
		{[5]string{"get", "ResponseComplete", "secrets", "", "200"}, [5]string{"proxy", "ResponseComplete", "endpoints", "", "200"}},
		// the creates and deletes of endpoints apart from their updates
		{[5]string{"create", "ResponseComplete", "pods", "", "201"}, [5]string{"update", "ResponseComplete", "endpoints", "", "200"}},
		{[5]string{"update", "ResponseComplete", "pods", "", "200"}, [5]string{"delete", "ResponseComplete", "endpoints", "", "200"}},
		{[5]string{"patch", "ResponseComplete", "pods", "", "200"}, [5]string{"delete", "ResponseComplete", "endpoints", "", "200"}},
		// the lists answered 410 apart from the others, the failed writes from the successful ones
		{[5]string{"list", "RequestReceived", "pods", "", ""}, [5]string{"list", "ResponseComplete", "endpoints", "", "410"}},
		{[5]string{"list", "ResponseComplete", "pods", "", "399"}, [5]string{"list", "ResponseComplete", "endpoints", "", "400"}},
		{[5]string{"update", "RequestReceived", "pods", "", ""}, [5]string{"update", "ResponseComplete", "endpoints", "", "409"}},
		{[5]string{"update", "ResponseComplete", "leases", "", "200"}, [5]string{"update", "ResponseComplete", "endpoints", "", "409"}},
		{[5]string{"update", "ResponseComplete", "leases", "", "409"}, [5]string{"patch", "ResponseComplete", "endpoints", "", "200"}},
	} {
		class := func(k [5]string) uint16 {
			event := layoutEvent(1, k[0], k[1], k[2], 0)
			if k[3] == "true" {
				event = strings.Replace(event, "?resourceVersion", "?watch=true&resourceVersion", 1)
			}
			if k[4] != "" {
				event = strings.Replace(event, `"pad":""`, `"responseStatus":{"metadata":{},"code":`+k[4]+`}`, 1)
			}
			rec, classes := layoutBatch(1, []string{event})
			rec.Release()
			return classes[0]
		}
		if class(c.first) >= class(c.then) {
			t.Errorf("%v (class %d) does not come before %v (class %d)", c.first, class(c.first), c.then, class(c.then))
		}
	}
}
