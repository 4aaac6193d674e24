package audit

import (
	"bytes"
	"strings"
	"testing"

	"github.com/kubesift/kubesift/internal/load"
	"github.com/kubesift/kubesift/internal/source"
)

// TestOversizedLineLength: a line over the limit is reported with its length without the
// newline, whether the line reader skips it (longer than a chunk) or the chunk splitter rejects
// it; a line of exactly the limit is kept, also when the limit is the chunk size.
func TestOversizedLineLength(t *testing.T) {
	long := func(n int) string { return `{"a":"` + strings.Repeat("x", n-8) + `"}` }
	for _, tc := range []struct {
		name          string
		line, maxLine int
		rejected      bool
	}{
		{"longer than a chunk", source.ChunkBytes + 10, 1 << 20, true},
		{"inside a chunk", 5000, 1000, true},
		{"exactly the limit, the chunk size", source.ChunkBytes, source.ChunkBytes, false},
		{"exactly the limit", 1000, 1000, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			data := long(tc.line) + "\n{}\n{}\n"
			lr := source.NewLineReader(strings.NewReader(data), tc.maxLine, 0, 1)
			var rejects []load.Rejected
			rows := 0
			for {
				c, big := lr.Next()
				if big != nil {
					rejects = append(rejects, load.Rejected{Line: big.Line, Offset: big.Offset, Reason: big.Reason(lr.MaxLine)})
					continue
				}
				if c == nil {
					break
				}
				batches, tooLong, _ := chunkToBatches(c, lineOptions{maxLine: lr.MaxLine})
				rejects = append(rejects, tooLong...)
				for _, b := range batches {
					rows += b.rows()
				}
			}
			if !tc.rejected {
				if rows != 3 || len(rejects) != 0 {
					t.Fatalf("%d rows, rejects %+v; want 3 rows", rows, rejects)
				}
				return
			}
			reason := (&source.Oversized{Length: int64(tc.line)}).Reason(tc.maxLine)
			if rows != 2 || len(rejects) != 1 || rejects[0].Reason != reason || rejects[0].Line != 1 || rejects[0].Offset != 0 {
				t.Fatalf("%d rows, rejects %+v; want 2 rows and line 1 at byte 0: %s", rows, rejects, reason)
			}
			if lr.NextLine != 4 || lr.Base != int64(len(data)) {
				t.Errorf("reader at line %d byte %d, want line 4 byte %d", lr.NextLine, lr.Base, len(data))
			}
		})
	}
}

// TestBatchesStayUnderChunkBytes: however big a chunk grew around a long line (with a raised
// --max-line-bytes), the events after it go to DuckDB in batches of at most about ChunkBytes,
// so that the memory DuckDB needs stays that of one event, not of the chunk.
func TestBatchesStayUnderChunkBytes(t *testing.T) {
	event := `{"a":"` + strings.Repeat("x", 100<<10) + `"}` + "\n"
	data := []byte(strings.Repeat(event, 3*source.ChunkBytes/len(event)))
	batches, rejects, _ := chunkToBatches(&source.Chunk{Data: data, FirstLine: 1}, lineOptions{maxLine: 64 << 20})
	rows := 0
	for _, b := range batches {
		if b.bytes() > source.ChunkBytes+len(event) {
			t.Errorf("a batch of %d bytes", b.bytes())
		}
		rows += b.rows()
	}
	if rows != bytes.Count(data, []byte{'\n'}) || len(rejects) != 0 || len(batches) < 3 {
		t.Errorf("%d rows in %d batches, %d rejects; want every line in at least 3 batches", rows, len(batches), len(rejects))
	}
}
