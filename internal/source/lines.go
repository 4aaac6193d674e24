package source

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"sync/atomic"
)

const (
	// ChunkBytes is the size of the chunks a LineReader reads.
	ChunkBytes = 4 << 20
	// firstChunkBytes is the size of a LineReader's first chunk when its reader does not say how
	// many bytes it holds (Remaining); each chunk after it is twice the one before, up to
	// ChunkBytes. A small file then takes a small chunk: hundreds of them load in one run
	// (ingest's groups), and a chunk of ChunkBytes each, which Go allocates and clears, made
	// 1,000 files of 172 KB load in 10.1-10.6 s instead of 7.3-7.5 s (BENCHMARKS.md).
	firstChunkBytes = 256 << 10
	// DefaultMaxLineBytes is the longest line (one event with its bodies) kept by default.
	// DuckDB needs about ten times an event's size to decode it, so this fits the default
	// memory limit; raise both together for bigger events.
	DefaultMaxLineBytes = 16 << 20
	maxMaxLineBytes     = 1 << 30 // Arrow string offsets are 32-bit
)

// Chunk is a run of complete lines read from a source. Its bytes are never reused, so
// slices of it can be handed to DuckDB without copying.
type Chunk struct {
	Data      []byte
	Base      int64 // offset of Data[0] in the decompressed stream
	FirstLine int64 // number of the first line in Data
}

// Oversized describes a line longer than the limit; its bytes were skipped.
type Oversized struct {
	Line   int64
	Offset int64
	Length int64
	Head   []byte // the first 200 bytes
}

// LineReader cuts a stream into chunks of whole lines. Lines of any length up to maxLine are
// kept intact (no bufio.Scanner token limit); longer ones are skipped and reported.
type LineReader struct {
	r        io.Reader
	size     int // of the next chunk
	MaxLine  int
	carry    []byte
	Base     int64 // offset of the first byte not returned yet
	NextLine int64 // number of the first line not returned yet
	eof      bool
	ReadErr  error // a read failure other than EOF (e.g. corrupt gzip); reading stopped there
	// Tail is the offset of a last line without a newline, -1 when the stream ends with one:
	// such a line may still be being written.
	Tail int64
	// progress is the count of lines of the Source read, when it is one: it counts them here.
	progress *atomic.Int64
}

// NewLineReader reads r, whose first byte is at offset and starts line firstLine. When r has a
// Remaining method (a Source), its first chunk is of the bytes left, up to ChunkBytes.
func NewLineReader(r io.Reader, maxLine int, offset, firstLine int64) *LineReader {
	if maxLine <= 0 || maxLine > maxMaxLineBytes {
		maxLine = maxMaxLineBytes
	}
	size := firstChunkBytes
	if sized, ok := r.(interface{ Remaining() int64 }); ok {
		if n := sized.Remaining(); n >= 0 {
			size = int(min(n+1, ChunkBytes)) // one byte more, to see the end in the first read
		}
	}
	lr := &LineReader{r: r, size: size, MaxLine: maxLine, Base: offset, NextLine: firstLine, Tail: -1}
	if src, ok := r.(*Source); ok {
		src.linesByReader, lr.progress = true, &src.lines
	}
	return lr
}

// Next returns the next chunk. It returns a nil chunk and a non-nil Oversized when a line over
// the limit was skipped, and (nil, nil) at the end of the stream.
func (lr *LineReader) Next() (*Chunk, *Oversized) {
	if lr.eof && len(lr.carry) == 0 {
		return nil, nil
	}
	size := max(lr.size, 2*len(lr.carry))
	lr.size = min(2*lr.size, ChunkBytes)
	buf := make([]byte, size)
	n := copy(buf, lr.carry)
	scanned := 0
	for {
		for n < len(buf) && !lr.eof {
			m, err := lr.r.Read(buf[n:])
			n += m
			if err != nil {
				lr.eof = true
				if !errors.Is(err, io.EOF) {
					lr.ReadErr = err
				}
			}
		}
		if last := bytes.LastIndexByte(buf[scanned:n], '\n'); last >= 0 {
			end := scanned + last + 1
			return lr.emit(buf, end, n), nil
		}
		if lr.eof {
			if n == 0 {
				lr.carry = nil
				return nil, nil
			}
			return lr.emit(buf, n, n), nil
		}
		if n > lr.MaxLine {
			return nil, lr.skipOversized(buf[:n])
		}
		scanned = n
		grown := make([]byte, min(2*len(buf), lr.MaxLine+1))
		copy(grown, buf[:n])
		buf = grown
	}
}

func (lr *LineReader) emit(buf []byte, end, n int) *Chunk {
	c := &Chunk{Data: buf[:end], Base: lr.Base, FirstLine: lr.NextLine}
	lines := int64(bytes.Count(c.Data, []byte{'\n'}))
	if end == n && lr.eof && n > 0 && buf[n-1] != '\n' {
		lines++ // a last line without a newline
		lr.Tail = lr.Base + int64(bytes.LastIndexByte(buf[:n], '\n')+1)
	}
	lr.NextLine += lines
	if lr.progress != nil {
		lr.progress.Add(lines)
	}
	lr.carry = append([]byte(nil), buf[end:n]...)
	lr.Base += int64(end)
	return c
}

// skipOversized discards the rest of a line that is longer than maxLine. Its Length, like a
// line's length everywhere, does not count the newline.
func (lr *LineReader) skipOversized(head []byte) *Oversized {
	o := &Oversized{Line: lr.NextLine, Offset: lr.Base, Length: int64(len(head)), Head: append([]byte(nil), head[:min(len(head), 200)]...)}
	var tmp [64 << 10]byte
	lr.carry = nil
	newline := int64(0)
	for !lr.eof {
		m, err := lr.r.Read(tmp[:])
		if i := bytes.IndexByte(tmp[:m], '\n'); i >= 0 {
			o.Length += int64(i)
			newline = 1
			lr.carry = append(lr.carry, tmp[i+1:m]...)
			break
		}
		o.Length += int64(m)
		if err != nil {
			lr.eof = true
			if !errors.Is(err, io.EOF) {
				lr.ReadErr = err
			}
		}
	}
	lr.Base += o.Length + newline
	lr.NextLine++
	if lr.progress != nil {
		lr.progress.Add(1)
	}
	return o
}

// Reason says why the line was not loaded.
func (o *Oversized) Reason(limit int) string {
	return fmt.Sprintf("line is %d bytes, longer than the %d-byte limit (raise --max-line-bytes, and --memory-limit to about ten times that, to load it)", o.Length, limit)
}

// CountingLines counts the bytes and lines read through it.
type CountingLines struct {
	R        io.Reader
	N        int64 // bytes read
	newlines int64
	last     byte
}

func (c *CountingLines) Read(p []byte) (int, error) {
	m, err := c.R.Read(p)
	if m > 0 {
		c.N += int64(m)
		c.newlines += int64(bytes.Count(p[:m], []byte{'\n'}))
		c.last = p[m-1]
	}
	return m, err
}

// Lines returns the number of lines read, counting a last line without a newline.
func (c *CountingLines) Lines() int64 {
	if c.N > 0 && c.last != '\n' {
		return c.newlines + 1
	}
	return c.newlines
}
