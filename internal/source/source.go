package source

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"os"
	"sync/atomic"
	"time"

	"github.com/zeebo/xxh3"
)

// headBytes is how much of a file Head holds.
const headBytes = 64 << 10

// Source is one opened input: a file or stdin, transparently decompressed.
type Source struct {
	Name     string // path as given, "-" for stdin
	Size     int64  // bytes on disk, -1 when unknown (stdin, a FIFO): then it is read as a stream
	Identity string // xxh3 of the first line (decompressed): the same for a file as it grows or is renamed by rotation
	// Compression is the format the file is compressed in (gzip, bzip2, zstd, xz), "" for none.
	Compression string
	Head        []byte    // first bytes after decompression, for format detection
	ModTime     time.Time // last change of a file; zero for a stream

	file    *os.File
	counter *countingReader // bytes read from disk, for progress
	reader  io.Reader       // decompressed stream, positioned at the start
	decomp  *decompressor   // nil when not compressed
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

// Open opens path ("-" is stdin) and peeks at its head.
func Open(path string) (*Source, error) {
	s := &Source{Name: path, Size: -1}
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
		s.file = f
		if st.Mode().IsRegular() {
			s.Size, s.ModTime = st.Size(), st.ModTime()
		}
	}
	s.counter = &countingReader{r: s.file}
	raw := bufio.NewReaderSize(s.counter, headBytes)
	head, err := raw.Peek(headBytes)
	if err != nil && err != io.EOF && err != bufio.ErrBufferFull {
		s.Close()
		return nil, fmt.Errorf("reading %s: %w", path, err)
	}
	s.reader = raw
	if s.Compression = compressionOf(head); s.Compression != "" {
		pos := func() int64 { return s.counter.n.Load() - int64(raw.Buffered()) }
		var seek func(int64) error
		if s.Size >= 0 {
			seek = func(offset int64) error {
				if _, err := s.file.Seek(offset, io.SeekStart); err != nil {
					return err
				}
				s.counter.n.Store(offset)
				raw.Reset(s.counter)
				return nil
			}
		}
		s.decomp = newDecompressor(s.Compression, raw, pos, seek)
		br := bufio.NewReaderSize(s.decomp, headBytes)
		s.Head, err = br.Peek(headBytes)
		if err != nil && err != io.EOF && err != bufio.ErrBufferFull {
			s.Close()
			return nil, fmt.Errorf("reading %s: %w", path, err)
		}
		s.reader = br
	} else {
		s.Head = head
	}
	s.Head = bytes.Clone(s.Head)
	first := s.Head
	if i := bytes.IndexByte(first, '\n'); i >= 0 {
		first = first[:i+1]
	}
	s.Identity = fmt.Sprintf("%016x", xxh3.Hash(first))
	return s, nil
}

// QuietPeriod is how long a file must be left unchanged before it is taken as complete.
const QuietPeriod = time.Minute

// MayGrow reports whether the source may still be being written: a plain file changed within
// QuietPeriod. A compressed file or a stream that has ended does not grow.
func (s *Source) MayGrow() bool {
	return s.Compression == "" && !s.ModTime.IsZero() && time.Since(s.ModTime) < QuietPeriod
}

// Damage returns the stretches of a compressed file that could not be decompressed so far.
func (s *Source) Damage() []Damage {
	if s.decomp == nil {
		return nil
	}
	return s.decomp.damage
}

// SkipTo moves to offset in the decompressed stream: a seek for a plain file, reading and
// discarding for a compressed one or a stream.
func (s *Source) SkipTo(offset int64) error {
	if s.Compression == "" && s.Size >= 0 {
		if _, err := s.file.Seek(offset, io.SeekStart); err != nil {
			return err
		}
		s.counter.n.Store(offset)
		s.reader = bufio.NewReaderSize(s.counter, headBytes)
		return nil
	}
	_, err := io.CopyN(io.Discard, s.reader, offset)
	return err
}

// Read reads the decompressed stream.
func (s *Source) Read(p []byte) (int, error) {
	n, err := s.reader.Read(p)
	s.lines.Add(int64(bytes.Count(p[:n], []byte{'\n'})))
	return n, err
}

// DiskBytesRead returns how many bytes were read from disk so far.
func (s *Source) DiskBytesRead() int64 { return s.counter.n.Load() }

// LinesRead returns how many lines were read so far.
func (s *Source) LinesRead() int64 { return s.lines.Load() }

// Close closes the file (not stdin).
func (s *Source) Close() error {
	if s.decomp != nil && s.decomp.zstd != nil {
		s.decomp.zstd.Close()
	}
	if s.file == nil || s.file == os.Stdin {
		return nil
	}
	return s.file.Close()
}
