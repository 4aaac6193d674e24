package source

import (
	"bytes"
	"errors"
	"io"
	"slices"
	"strings"
	"testing"
	"testing/iotest"
)

// readAll drains lr, returning its chunks and the lines it skipped as too long.
func readAll(t *testing.T, lr *LineReader) ([]*Chunk, []*Oversized) {
	t.Helper()
	var chunks []*Chunk
	var skipped []*Oversized
	for range 10000 {
		c, big := lr.Next()
		switch {
		case big != nil:
			skipped = append(skipped, big)
		case c != nil:
			chunks = append(chunks, c)
		default:
			return chunks, skipped
		}
	}
	t.Fatal("LineReader never reached the end")
	return nil, nil
}

// checkChunks checks what every chunk promises: it continues where the previous one ended (Base,
// FirstLine), holds whole lines (ends with a newline, but for a last line without one), and
// together they give back the input.
func checkChunks(t *testing.T, input string, chunks []*Chunk, offset, firstLine int64) {
	t.Helper()
	var got []byte
	base, line := offset, firstLine
	for i, c := range chunks {
		if c.Base != base || c.FirstLine != line {
			t.Errorf("chunk %d starts at offset %d line %d, want %d line %d", i, c.Base, c.FirstLine, base, line)
		}
		if len(c.Data) == 0 {
			t.Errorf("chunk %d is empty", i)
		}
		if i < len(chunks)-1 && !bytes.HasSuffix(c.Data, []byte("\n")) {
			t.Errorf("chunk %d ends inside a line: %q", i, c.Data)
		}
		got = append(got, c.Data...)
		base += int64(len(c.Data))
		line += int64(bytes.Count(c.Data, []byte("\n")))
	}
	if string(got) != input {
		t.Errorf("chunks give %q, want %q", got, input)
	}
}

func TestLineReaderKeepsLinesWhole(t *testing.T) {
	for _, tc := range []struct {
		name, input string
		lines       int64 // lines the reader counts
		tail        int64 // offset of a last line without a newline, relative to the start; -1 when none
	}{
		{"empty", "", 0, -1},
		{"one line", "a\n", 1, -1},
		{"no trailing newline", "first\nsecond", 2, 6},
		{"only a partial line", "partial", 1, 0},
		{"CRLF", "alpha\r\nbeta\r\ngamma\r\n", 3, -1},
		{"CRLF without a last newline", "alpha\r\nbeta", 2, 7},
		{"empty lines", "\n\n\nx\n\n", 5, -1},
		{"lines longer than a chunk", strings.Repeat("0123456789abcdef", 3) + "\nshort\n" + strings.Repeat("z", 40), 3, 55},
	} {
		for _, rd := range []struct {
			name string
			wrap func(io.Reader) io.Reader
		}{
			{"whole reads", func(r io.Reader) io.Reader { return r }},
			{"one byte per read", iotest.OneByteReader},
			{"EOF with the data", iotest.DataErrReader},
		} {
			t.Run(tc.name+"/"+rd.name, func(t *testing.T) {
				const offset, firstLine = 1000, 41 // a resumed read: offsets and lines continue
				lr := NewLineReader(rd.wrap(strings.NewReader(tc.input)), 64, offset, firstLine)
				lr.size = 8 // chunks of a few bytes, so lines cross chunk boundaries
				chunks, skipped := readAll(t, lr)
				if len(skipped) > 0 {
					t.Fatalf("skipped %d lines under the limit", len(skipped))
				}
				checkChunks(t, tc.input, chunks, offset, firstLine)
				if lr.NextLine != firstLine+tc.lines {
					t.Errorf("NextLine %d, want %d", lr.NextLine, firstLine+tc.lines)
				}
				if lr.Base != offset+int64(len(tc.input)) {
					t.Errorf("Base %d, want %d", lr.Base, offset+int64(len(tc.input)))
				}
				wantTail := tc.tail
				if wantTail >= 0 {
					wantTail += offset
				}
				if lr.Tail != wantTail {
					t.Errorf("Tail %d, want %d", lr.Tail, wantTail)
				}
				if lr.ReadErr != nil {
					t.Errorf("ReadErr %v", lr.ReadErr)
				}
			})
		}
	}
}

// TestLineReaderSkipsOversizedLines: a line longer than the limit that does not fit the read
// buffer is reported with its line, offset, whole length (without the newline) and first bytes, and reading goes on
// after it; a line of exactly the limit is kept. (A long line that fits the buffer comes back in
// its chunk: the audit envelope rejects it there, see chunkToBatches.)
func TestLineReaderSkipsOversizedLines(t *testing.T) {
	const limit = 32
	fits := strings.Repeat("f", limit-1) + "\n"
	huge := strings.Repeat("H", 300) + "\n"
	input := "one\n" + fits + huge + "three\n" + huge + "last"
	lr := NewLineReader(iotest.OneByteReader(strings.NewReader(input)), limit, 0, 1)
	lr.size = 8
	chunks, skipped := readAll(t, lr)
	var kept []byte
	for _, c := range chunks {
		kept = append(kept, c.Data...)
	}
	if want := "one\n" + fits + "three\n" + "last"; string(kept) != want {
		t.Errorf("kept %q, want %q", kept, want)
	}
	want := []Oversized{
		{Line: 3, Offset: int64(len("one\n" + fits)), Length: int64(len(huge) - 1)},
		{Line: 5, Offset: int64(len("one\n" + fits + huge + "three\n")), Length: int64(len(huge) - 1)},
	}
	if len(skipped) != len(want) {
		t.Fatalf("skipped %d lines, want %d", len(skipped), len(want))
	}
	for i, o := range skipped {
		if o.Line != want[i].Line || o.Offset != want[i].Offset || o.Length != want[i].Length {
			t.Errorf("skipped line %d at %d, %d bytes; want line %d at %d, %d bytes",
				o.Line, o.Offset, o.Length, want[i].Line, want[i].Offset, want[i].Length)
		}
		if len(o.Head) < limit || len(o.Head) > 200 || strings.Trim(string(o.Head), "H") != "" {
			t.Errorf("head %q", o.Head)
		}
	}
	if lr.NextLine != 7 || lr.Base != int64(len(input)) {
		t.Errorf("ends at line %d offset %d, want 7 and %d", lr.NextLine, lr.Base, len(input))
	}
	if got := skipped[0].Reason(limit); !strings.Contains(got, "300 bytes") || !strings.Contains(got, "32-byte limit") {
		t.Errorf("reason %q", got)
	}

	whole := NewLineReader(strings.NewReader(input), limit, 0, 1)
	chunks, skipped = readAll(t, whole)
	if len(skipped) != 0 {
		t.Errorf("lines that fit the read buffer: skipped %d", len(skipped))
	}
	checkChunks(t, input, chunks, 0, 1)
}

// TestLineReaderOversizedLastLine: a too-long last line without a newline is skipped whole and
// the stream ends after it.
func TestLineReaderOversizedLastLine(t *testing.T) {
	input := "ok\n" + strings.Repeat("x", 100)
	lr := NewLineReader(strings.NewReader(input), 16, 0, 1)
	lr.size = 8
	chunks, skipped := readAll(t, lr)
	if len(chunks) != 1 || string(chunks[0].Data) != "ok\n" {
		t.Errorf("chunks %v", chunks)
	}
	if len(skipped) != 1 || skipped[0].Line != 2 || skipped[0].Offset != 3 || skipped[0].Length != 100 {
		t.Fatalf("skipped %+v", skipped)
	}
}

// TestLineReaderKeepsDataBeforeAReadError: a failing read (a corrupt gzip member) ends the
// stream; the lines before it are returned and ReadErr says why reading stopped.
func TestLineReaderKeepsDataBeforeAReadError(t *testing.T) {
	broken := errors.New("flate: corrupt input")
	r := io.MultiReader(strings.NewReader("a\nb\npart"), iotest.ErrReader(broken))
	lr := NewLineReader(r, 0, 0, 1)
	chunks, _ := readAll(t, lr)
	checkChunks(t, "a\nb\npart", chunks, 0, 1)
	if !errors.Is(lr.ReadErr, broken) {
		t.Errorf("ReadErr %v, want %v", lr.ReadErr, broken)
	}
	if lr.Tail != 4 {
		t.Errorf("Tail %d, want 4 (the partial line)", lr.Tail)
	}
	if lr.MaxLine != maxMaxLineBytes {
		t.Errorf("no limit given: MaxLine %d, want %d", lr.MaxLine, maxMaxLineBytes)
	}
}

// TestLineReaderChunksAreNotReused: the bytes of a returned chunk stay as they were while
// later chunks are read, since DuckDB is handed slices of them.
func TestLineReaderChunksAreNotReused(t *testing.T) {
	lr := NewLineReader(strings.NewReader("first line\nsecond line\nthird line\n"), 64, 0, 1)
	lr.size = 12
	first, _ := lr.Next()
	snapshot := string(first.Data)
	readAll(t, lr)
	if string(first.Data) != snapshot {
		t.Errorf("first chunk changed from %q to %q", snapshot, first.Data)
	}
}

func TestCountingLines(t *testing.T) {
	for _, tc := range []struct {
		input string
		lines int64
	}{{"", 0}, {"a\n", 1}, {"a\nb", 2}, {"a\r\nb\r\n", 2}, {"\n\n", 2}} {
		c := &CountingLines{R: iotest.OneByteReader(strings.NewReader(tc.input))}
		if _, err := io.Copy(io.Discard, c); err != nil {
			t.Fatal(err)
		}
		if c.N != int64(len(tc.input)) || c.Lines() != tc.lines {
			t.Errorf("%q: %d bytes, %d lines; want %d, %d", tc.input, c.N, c.Lines(), len(tc.input), tc.lines)
		}
	}
}

// TestLineReaderChunkSizes: a file that says how many bytes it holds is read in one chunk of
// that size, uncompressed or resumed past its start; a stream starts with firstChunkBytes and
// doubles up to ChunkBytes; a large file reads chunks of ChunkBytes.
func TestLineReaderChunkSizes(t *testing.T) {
	line := strings.Repeat("x", 99) + "\n"
	small := strings.Repeat(line, 50)
	sizes := func(lr *LineReader) []int {
		var caps []int
		chunks, _ := readAll(t, lr)
		for _, c := range chunks {
			caps = append(caps, cap(c.Data))
		}
		return caps
	}
	src := openFile(t, writeFile(t, "small.log", []byte(small)))
	if got := sizes(NewLineReader(src, 1<<20, 0, 1)); len(got) != 1 || got[0] != len(small)+1 {
		t.Errorf("a file of %d bytes: chunks of %v, want one of %d", len(small), got, len(small)+1)
	}
	src = openFile(t, writeFile(t, "resumed.log", []byte(small)))
	if err := src.SkipTo(1000); err != nil {
		t.Fatal(err)
	}
	if got := sizes(NewLineReader(src, 1<<20, 1000, 11)); len(got) != 1 || got[0] != len(small)-1000+1 {
		t.Errorf("a file of %d bytes resumed at 1000: chunks of %v, want one of %d", len(small), got, len(small)-1000+1)
	}
	gz := openFile(t, writeFile(t, "small.log.gz", gzipped(t, small)))
	if got := sizes(NewLineReader(gz, 1<<20, 0, 1)); len(got) != 1 || got[0] != firstChunkBytes {
		t.Errorf("a compressed file: chunks of %v, want one of %d", got, firstChunkBytes)
	}
	stream := strings.Repeat(line, 2*ChunkBytes/len(line))
	want := []int{firstChunkBytes}
	for total := firstChunkBytes; total < len(stream); total += want[len(want)-1] {
		want = append(want, min(2*want[len(want)-1], ChunkBytes))
	}
	if got := sizes(NewLineReader(iotest.HalfReader(strings.NewReader(stream)), 1<<20, 0, 1)); !slices.Equal(got, want) {
		t.Errorf("a stream of %d bytes: chunks of %v, want %v", len(stream), got, want)
	}
	large := openFile(t, writeFile(t, "large.log", []byte(stream)))
	if got := sizes(NewLineReader(large, 1<<20, 0, 1)); slices.Max(got) != ChunkBytes || got[0] != ChunkBytes {
		t.Errorf("a file of %d bytes: chunks of %v, want chunks of %d", len(stream), got, ChunkBytes)
	}
}

// TestLineReaderCountsTheSourcesLines: a LineReader reading a Source counts the lines that
// progress shows (LinesRead), a skipped long line and a last line without a newline included,
// once: the Source no longer counts what it reads a second time. A compressed file parked between
// two chunks keeps its count.
func TestLineReaderCountsTheSourcesLines(t *testing.T) {
	input := "one\ntwo\n" + strings.Repeat("H", 300) + "\nfour\n" + strings.Repeat("x\n", 50) + "last"
	const lines = 55
	for _, name := range []string{"audit.log", "audit.log.gz"} {
		data := []byte(input)
		if strings.HasSuffix(name, ".gz") {
			data = gzipped(t, input)
		}
		src := openFile(t, writeFile(t, name, data))
		lr := NewLineReader(src, 64, 0, 1)
		lr.size = 16
		var skipped int
		for {
			c, big := lr.Next()
			if big != nil {
				skipped++
				continue
			}
			if c == nil {
				break
			}
			src.Park()
		}
		if skipped != 1 || lr.NextLine != lines+1 || src.LinesRead() != lines {
			t.Errorf("%s: skipped %d, next line %d, %d lines read; want 1, %d and %d", name, skipped, lr.NextLine, src.LinesRead(), lines+1, lines)
		}
	}
}
