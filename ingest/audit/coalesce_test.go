package audit

import (
	"fmt"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"

	"github.com/kubesift/kubesift/internal/source"
)

// batchOf builds the record of a batch of events of the given sizes, numbered from line, and
// returns it with the events' classes.
func batchOf(line int64, sizes ...int) (arrow.RecordBatch, []uint16) {
	var values []byte
	for i, n := range sizes {
		values = append(values, eventText(line+int64(i), n)...)
	}
	b := newBatch(values, true)
	start := 0
	for _, n := range sizes {
		b.add(start, start+n, origin{line: line, offset: int64(start)}, nil)
		start += n
		line++
	}
	return b.record(1)
}

// eventText is the stand-in of the event of a line: a letter of the line, size times.
func eventText(line int64, size int) string {
	return strings.Repeat(string(rune('a'+line%26)), size)
}

// checkVectorBytes fails the test when a vector of rec (vectorRows events from its start, as
// DuckDB's Arrow scan cuts it) holds more than limit bytes of events and more than one event.
func checkVectorBytes(t *testing.T, rec arrow.RecordBatch, limit int) {
	t.Helper()
	raw := rec.Column(0).(*array.StringView)
	for v := 0; v < int(rec.NumRows()); v += vectorRows {
		end, bytes := min(v+vectorRows, int(rec.NumRows())), 0
		for i := v; i < end; i++ {
			bytes += raw.ValueLen(i)
		}
		if end-v > 1 && bytes > limit {
			t.Errorf("a vector of %d events holds %d bytes", end-v, bytes)
		}
	}
}

func sizes(n, size int) []int {
	out := make([]int, n)
	for i := range out {
		out[i] = size
	}
	return out
}

// TestCoalescer: small events reach DuckDB in records of a row group, in order, all of them and
// each with its own bytes; no vector of a record holds more than source.ChunkBytes unless it is
// one event; batches of big events, and an isolated big event, pass through as they are.
func TestCoalescer(t *testing.T) {
	var c coalescer
	type batchRecord struct {
		rec     arrow.RecordBatch
		classes []uint16
	}
	var in []batchRecord
	line := int64(1)
	size := map[int64]int{} // of the event of each line
	add := func(s ...int) {
		rec, classes := batchOf(line, s...)
		in = append(in, batchRecord{rec, classes})
		for _, n := range s {
			size[line] = n
			line++
		}
	}
	for range 9 {
		add(sizes(4700, 890)...) // the independent mix's 4 MB batches
	}
	add(isolateBytes + 5)                                  // a big event alone
	add(sizes(800, 5000)...)                               // a batch of bigger events
	add(append(sizes(3000, 100), sizes(5, 900_000)...)...) // small events, then a few near the isolation size
	add(sizes(20000, 50)...)                               // more than a row group in one batch
	var out []arrow.RecordBatch
	for _, b := range in {
		recs, err := c.add(b.rec, b.classes)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, recs...)
	}
	recs, err := c.flush(2)
	if err != nil {
		t.Fatal(err)
	}
	out = append(out, recs...)

	next := int64(1)
	var shapes []string
	for _, rec := range out {
		raw := rec.Column(0).(*array.StringView)
		lines := rec.Column(1).(*array.Int64)
		for i := 0; i < int(rec.NumRows()); i++ {
			if lines.Value(i) != next {
				t.Fatalf("event of line %d where line %d was due", lines.Value(i), next)
			}
			if got := raw.Value(i); got != eventText(next, size[next]) {
				t.Fatalf("the event of line %d reads %.20q… (%d bytes; want %d)", next, got, len(got), size[next])
			}
			next++
		}
		checkVectorBytes(t, rec, source.ChunkBytes)
		shapes = append(shapes, fmt.Sprintf("%d rows", rec.NumRows()))
		rec.Release()
	}
	if next != line {
		t.Fatalf("%d events came out of %d", next-1, line-1)
	}
	want := []string{
		"16384 rows", "16384 rows", // 42,300 events of 890 bytes
		"9532 rows",          // the rest before the big event
		"1 rows", "800 rows", // the big event, the batch of bigger events, as they came
		"3004 rows",              // the fifth event of 900,000 bytes would overfill the vector the four before it share
		"16384 rows",             // it begins the next record's first vector
		"2048 rows", "1569 rows", // the rest, flushed in two pieces of whole vectors
	}
	if strings.Join(shapes, ", ") != strings.Join(want, ", ") {
		t.Errorf("records\n%s\nwant\n%s", strings.Join(shapes, ", "), strings.Join(want, ", "))
	}
}

// TestFlushInPieces: the last record comes in up to the given number of pieces, each of whole
// vectors but the last, in order: DuckDB's threads share a small file's events.
func TestFlushInPieces(t *testing.T) {
	for _, tc := range []struct {
		events, pieces int
		want           string
	}{
		{5900, 2, "2048 3852"},
		{5900, 4, "2048 2048 1804"},
		{5900, 1, "5900"},
		{2048, 2, "2048"},
		{200, 2, "200"},
		{16383, 3, "4096 6144 6143"},
	} {
		var c coalescer
		rec, classes := batchOf(1, sizes(tc.events, 100)...)
		if out, err := c.add(rec, classes); err != nil || len(out) != 0 {
			t.Fatalf("%d events: %d records before the flush (%v)", tc.events, len(out), err)
		}
		recs, err := c.flush(tc.pieces)
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		next := int64(1)
		for _, r := range recs {
			got = append(got, fmt.Sprint(r.NumRows()))
			lines := r.Column(1).(*array.Int64)
			for i := 0; i < int(r.NumRows()); i++ {
				if lines.Value(i) != next {
					t.Fatalf("%d events in %d pieces: line %d where %d was due", tc.events, tc.pieces, lines.Value(i), next)
				}
				next++
			}
			r.Release()
		}
		if strings.Join(got, " ") != tc.want {
			t.Errorf("%d events in up to %d pieces: %s, want %s", tc.events, tc.pieces, strings.Join(got, " "), tc.want)
		}
	}
}
