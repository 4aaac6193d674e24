package audit

import (
	"bytes"
	"os"
	"testing"
	"unicode/utf8"

	"github.com/kubesift/kubesift/internal/source"
)

// FuzzChunkToBatches feeds arbitrary chunks to the line splitter: it must not panic, every row
// must be a slice of its batch's bytes and valid UTF-8, lines must stay in order, and every
// line must end up as rows, as a rejected too-long line, or be blank.
func FuzzChunkToBatches(f *testing.F) {
	for _, seed := range []string{
		"../testdata/audit-v1.good.log", "../testdata/prefixed.good.log", "../testdata/eventlist.good.ndjson", "../testdata/mixed.bad.log", "../testdata/invalid-utf8.bad.log",
	} {
		b, err := os.ReadFile(seed)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b, 1<<20, true)
		f.Add(b, 1<<20, false)
	}
	f.Add([]byte("\n\n{}\n  x {\"a\":1}\r\n{\"kind\":\"EventList\",\"items\":[{\"a\":1},{\"b\":2}]}"), 16, true)
	f.Fuzz(func(t *testing.T, data []byte, maxLine int, lists bool) {
		if maxLine <= 0 {
			maxLine = 1
		}
		lines := int64(bytes.Count(data, []byte{'\n'}))
		if len(data) > 0 && data[len(data)-1] != '\n' {
			lines++
		}
		c := &source.Chunk{Data: bytes.Clone(data), FirstLine: 1}
		batches, rejects, _ := chunkToBatches(c, lineOptions{maxLine: maxLine, lists: lists, redact: true})
		last := int64(0)
		seen := map[int64]bool{}
		for _, b := range batches {
			if b.rows() == 0 {
				t.Fatal("empty batch")
			}
			for i := 0; i < b.rows(); i++ {
				start, end := b.offsets[i], b.offsets[i+1]
				if start > end || int(end) > len(b.values) {
					t.Fatalf("row %d spans [%d,%d) of %d bytes", i, start, end, len(b.values))
				}
				if !utf8.Valid(b.values[start:end]) {
					t.Fatalf("row %d is not valid UTF-8: %q", i, b.values[start:end])
				}
			}
			rec := b.record()
			lineCol := rec.Column(1)
			for i := 0; i < int(rec.NumRows()); i++ {
				l := lineCol.(interface{ Value(int) int64 }).Value(i)
				if l < last || l < 1 || l > lines {
					t.Fatalf("line %d after %d (of %d lines)", l, last, lines)
				}
				last = l
				seen[l] = true
			}
			rec.Release()
		}
		for _, r := range rejects {
			if r.Line < 1 || r.Line > lines || seen[r.Line] {
				t.Fatalf("rejected line %d of %d is also a row, or out of range", r.Line, lines)
			}
		}
	})
}
