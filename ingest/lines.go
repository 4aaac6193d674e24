package ingest

import (
	"bytes"
	"errors"
	"fmt"
	"io"
)

const (
	defaultChunkBytes = 4 << 20
	// DefaultMaxLineBytes is the longest line (one event with its bodies) kept by default.
	// DuckDB needs about ten times an event's size to decode it, so this fits the default
	// memory limit; raise both together for bigger events.
	DefaultMaxLineBytes = 16 << 20
	maxMaxLineBytes     = 1 << 30 // Arrow string offsets are 32-bit
)

// chunk is a run of complete lines read from a source. Its bytes are never reused, so
// slices of it can be handed to DuckDB without copying.
type chunk struct {
	data      []byte
	base      int64 // offset of data[0] in the decompressed stream
	firstLine int64 // number of the first line in data
}

// oversizedLine describes a line longer than the limit; its bytes were skipped.
type oversizedLine struct {
	line   int64
	offset int64
	length int64
	head   []byte
}

// lineReader cuts a stream into chunks of whole lines. Lines of any length up to maxLine are
// kept intact (no bufio.Scanner token limit); longer ones are skipped and reported.
type lineReader struct {
	r        io.Reader
	size     int
	maxLine  int
	carry    []byte
	base     int64 // offset of carry[0]
	nextLine int64
	eof      bool
	readErr  error // a read failure other than EOF (e.g. corrupt gzip); reading stopped there
	// tail is the offset of a last line without a newline, -1 when the stream ends with one:
	// such a line may still be being written.
	tail int64
}

// newLineReader reads r, whose first byte is at offset and starts line firstLine.
func newLineReader(r io.Reader, maxLine int, offset, firstLine int64) *lineReader {
	if maxLine <= 0 || maxLine > maxMaxLineBytes {
		maxLine = maxMaxLineBytes
	}
	return &lineReader{r: r, size: defaultChunkBytes, maxLine: maxLine, base: offset, nextLine: firstLine, tail: -1}
}

// next returns the next chunk. It returns a nil chunk and a non-nil oversized when a line over
// the limit was skipped, and (nil, nil) at the end of the stream.
func (lr *lineReader) next() (*chunk, *oversizedLine) {
	if lr.eof && len(lr.carry) == 0 {
		return nil, nil
	}
	size := max(lr.size, 2*len(lr.carry))
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
					lr.readErr = err
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
		if n >= lr.maxLine {
			return nil, lr.skipOversized(buf[:n])
		}
		scanned = n
		grown := make([]byte, min(2*len(buf), lr.maxLine+1))
		copy(grown, buf[:n])
		buf = grown
	}
}

func (lr *lineReader) emit(buf []byte, end, n int) *chunk {
	c := &chunk{data: buf[:end], base: lr.base, firstLine: lr.nextLine}
	lr.nextLine += int64(bytes.Count(c.data, []byte{'\n'}))
	if end == n && lr.eof && n > 0 && buf[n-1] != '\n' {
		lr.nextLine++ // a last line without a newline
		lr.tail = lr.base + int64(bytes.LastIndexByte(buf[:n], '\n')+1)
	}
	lr.carry = append([]byte(nil), buf[end:n]...)
	lr.base += int64(end)
	return c
}

// skipOversized discards the rest of a line that is longer than maxLine.
func (lr *lineReader) skipOversized(head []byte) *oversizedLine {
	o := &oversizedLine{line: lr.nextLine, offset: lr.base, length: int64(len(head)), head: append([]byte(nil), head[:min(len(head), 200)]...)}
	var tmp [64 << 10]byte
	lr.carry = nil
	for !lr.eof {
		m, err := lr.r.Read(tmp[:])
		if i := bytes.IndexByte(tmp[:m], '\n'); i >= 0 {
			o.length += int64(i + 1)
			lr.carry = append(lr.carry, tmp[i+1:m]...)
			break
		}
		o.length += int64(m)
		if err != nil {
			lr.eof = true
			if !errors.Is(err, io.EOF) {
				lr.readErr = err
			}
		}
	}
	lr.base += o.length
	lr.nextLine++
	return o
}

func (o *oversizedLine) reason(limit int) string {
	return fmt.Sprintf("line is %d bytes, longer than the %d-byte limit (raise --max-line-bytes, and --memory-limit to about ten times that, to load it)", o.length, limit)
}

// countingLines counts the bytes and lines read through it.
type countingLines struct {
	r        io.Reader
	n        int64
	newlines int64
	last     byte
}

func (c *countingLines) Read(p []byte) (int, error) {
	m, err := c.r.Read(p)
	if m > 0 {
		c.n += int64(m)
		c.newlines += int64(bytes.Count(p[:m], []byte{'\n'}))
		c.last = p[m-1]
	}
	return m, err
}

func (c *countingLines) lines() int64 {
	if c.n > 0 && c.last != '\n' {
		return c.newlines + 1
	}
	return c.newlines
}
