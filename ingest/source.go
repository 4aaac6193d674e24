package ingest

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"os"
	"sync/atomic"

	"github.com/klauspost/compress/gzip"
	"github.com/zeebo/xxh3"
)

const headBytes = 64 << 10

// source is one opened input: a file or stdin, transparently decompressed.
type source struct {
	Name     string // path as given, "-" for stdin
	Size     int64  // bytes on disk, -1 when unknown (stdin)
	HeadHash string // xxh3 of the first 64 KiB as stored, with Size identifies a loaded file
	Gzip     bool
	Head     []byte // first bytes after decompression, for format detection

	file    *os.File
	counter *countingReader // bytes read from disk, for progress
	reader  io.Reader       // decompressed stream, positioned at the start
	lines   atomic.Int64    // newlines read from the decompressed stream, for progress
}

type countingReader struct {
	r io.Reader
	n atomic.Int64
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n.Add(int64(n))
	return n, err
}

// openSource opens path ("-" is stdin) and peeks at its head.
func openSource(path string) (*source, error) {
	s := &source{Name: path, Size: -1}
	if path == "-" {
		s.file = os.Stdin
	} else {
		f, err := os.Open(path)
		if err != nil {
			return nil, err
		}
		st, err := f.Stat()
		if err != nil {
			f.Close()
			return nil, err
		}
		if st.IsDir() {
			f.Close()
			return nil, fmt.Errorf("%s is a directory", path)
		}
		s.file, s.Size = f, st.Size()
	}
	s.counter = &countingReader{r: s.file}
	raw := bufio.NewReaderSize(s.counter, headBytes)
	head, err := raw.Peek(headBytes)
	if err != nil && err != io.EOF && err != bufio.ErrBufferFull {
		s.Close()
		return nil, fmt.Errorf("reading %s: %w", path, err)
	}
	s.HeadHash = fmt.Sprintf("%016x", xxh3.Hash(head))
	s.reader = raw
	if len(head) >= 2 && head[0] == 0x1f && head[1] == 0x8b {
		zr, err := gzip.NewReader(raw)
		if err != nil {
			s.Close()
			return nil, fmt.Errorf("reading %s: not a valid gzip file: %w", path, err)
		}
		s.Gzip = true
		br := bufio.NewReaderSize(zr, headBytes)
		s.Head, _ = br.Peek(headBytes)
		s.reader = br
	} else {
		s.Head = head
	}
	s.Head = bytes.Clone(s.Head)
	return s, nil
}

// Read reads the decompressed stream.
func (s *source) Read(p []byte) (int, error) {
	n, err := s.reader.Read(p)
	s.lines.Add(int64(bytes.Count(p[:n], []byte{'\n'})))
	return n, err
}

// DiskBytesRead returns how many bytes were read from disk so far.
func (s *source) DiskBytesRead() int64 { return s.counter.n.Load() }

// LinesRead returns how many lines were read so far.
func (s *source) LinesRead() int64 { return s.lines.Load() }

func (s *source) Close() error {
	if s.file == nil || s.file == os.Stdin {
		return nil
	}
	return s.file.Close()
}
