package source

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/zeebo/xxh3"
	"golang.org/x/text/encoding"
	"golang.org/x/text/encoding/unicode"
	"golang.org/x/text/transform"
)

// HeadBytes is how much of a file Head holds.
const HeadBytes = 64 << 10

// Source is one opened input: a file or stdin, transparently decompressed.
type Source struct {
	Name     string // path as given, "-" for stdin
	Size     int64  // bytes on disk, -1 when unknown (stdin, a FIFO): then it is read as a stream
	Identity string // xxh3 of the first line (decompressed): the same for a file as it grows or is renamed by rotation
	// Compression is the format the file is compressed in (gzip, bzip2, zstd, xz), "" for none.
	Compression string
	// Encoding is the text encoding the file was decoded from to UTF-8: utf-16le or utf-16be
	// (a file that starts with their byte order mark, as PowerShell's > writes), "" for UTF-8.
	Encoding string
	Head     []byte    // first bytes after decompression and decoding, for format detection
	ModTime  time.Time // last change of a file; zero for a stream
	// Device and Inode identify a file on disk (when HasFileID) while it grows and after a rename.
	Device, Inode int64
	HasFileID     bool

	file    *os.File
	counter *countingReader // bytes read from disk, for progress
	reader  io.Reader       // decompressed stream, positioned at the start
	decomp  *decompressor   // nil when not compressed
	lines   atomic.Int64    // lines read from the decompressed stream, for progress
	// linesByReader says a LineReader reading the source counts its lines into lines, as it
	// cuts the stream into lines anyway: Read then does not count them a second time.
	linesByReader bool
	pos           int64  // offset in the decompressed stream of the next byte Read hands out
	window        []byte // the last TailBytes bytes Read handed out, kept for a compressed file
	// parked says the decompressor and buffers of a compressed file were let go (Park): the
	// next Read opens them again and reads back to pos. ended says they were let go at the end
	// of the file: Read returns io.EOF. freedDamage is what they had met.
	parked, ended bool
	freedDamage   []Damage
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

// Open opens path ("-" is stdin) and peeks at its head. Opening a FIFO waits for its writer
// until ctx ends.
func Open(ctx context.Context, path string) (*Source, error) {
	s := &Source{Name: path, Size: -1}
	if path == "-" {
		s.file = os.Stdin
	} else {
		f, err := openWaiting(ctx, path)
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
			s.Device, s.Inode, s.HasFileID = fileID(st)
		}
	}
	if err := s.begin(); err != nil {
		s.Close()
		return nil, fmt.Errorf("reading %s: %w", path, err)
	}
	first := s.Head
	if i := bytes.IndexByte(first, '\n'); i >= 0 {
		first = first[:i+1]
	}
	s.Identity = hash(first)
	return s, nil
}

// openWaiting opens path for reading. Opening a FIFO blocks until something opens it for writing,
// so it is opened on a goroutine of its own, which ctx abandons.
func openWaiting(ctx context.Context, path string) (*os.File, error) {
	if st, err := os.Stat(path); err != nil || st.Mode()&os.ModeNamedPipe == 0 {
		return os.Open(path)
	}
	type opened struct {
		f   *os.File
		err error
	}
	done := make(chan opened, 1)
	go func() {
		f, err := os.Open(path)
		done <- opened{f, err}
	}()
	select {
	case o := <-done:
		return o.f, o.err
	case <-ctx.Done():
		// Opening the other end for a moment ends the waiting open; its file is then closed.
		if w, err := os.OpenFile(path, os.O_WRONLY|syscall.O_NONBLOCK, 0); err == nil {
			w.Close()
		}
		go func() {
			if o := <-done; o.f != nil {
				o.f.Close()
			}
		}()
		return nil, ctx.Err()
	}
}

// begin reads from the start of the file: its head, through a decompressor when it is
// compressed.
func (s *Source) begin() error {
	s.counter = &countingReader{r: s.file}
	raw := bufio.NewReaderSize(s.counter, HeadBytes)
	head, err := raw.Peek(HeadBytes)
	if err != nil && err != io.EOF && err != bufio.ErrBufferFull {
		return err
	}
	s.reader, s.Head = raw, head
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
		br := bufio.NewReaderSize(s.decomp, HeadBytes)
		if s.Head, err = br.Peek(HeadBytes); err != nil && err != io.EOF && err != bufio.ErrBufferFull {
			return err
		}
		s.reader = br
	}
	if name, enc := utf16Of(s.Head); enc != nil {
		s.Encoding = name
		br := bufio.NewReaderSize(transform.NewReader(s.reader, enc.NewDecoder()), HeadBytes)
		if s.Head, err = br.Peek(HeadBytes); err != nil && err != io.EOF && err != bufio.ErrBufferFull {
			return err
		}
		s.reader = br
	}
	s.Head = bytes.Clone(s.Head)
	return nil
}

// utf16Of returns the UTF-16 encoding whose byte order mark head starts with, nil for none.
func utf16Of(head []byte) (string, encoding.Encoding) {
	switch {
	case bytes.HasPrefix(head, []byte{0xff, 0xfe}):
		return "utf-16le", unicode.UTF16(unicode.LittleEndian, unicode.ExpectBOM)
	case bytes.HasPrefix(head, []byte{0xfe, 0xff}):
		return "utf-16be", unicode.UTF16(unicode.BigEndian, unicode.ExpectBOM)
	}
	return "", nil
}

// Decoded says the stream Read hands out is not the file's bytes (decompressed or decoded to
// UTF-8): its offsets are not the file's, and it is read again from the start instead of sought.
func (s *Source) Decoded() bool { return s.Compression != "" || s.Encoding != "" }

// Rewind goes back to the start of a file, to read it again; a stream cannot be rewound.
func (s *Source) Rewind() error {
	if s.Size < 0 {
		return fmt.Errorf("%s is a stream: it cannot be read again", s.Name)
	}
	if _, err := s.file.Seek(0, io.SeekStart); err != nil {
		return err
	}
	s.closeDecoder()
	s.decomp, s.pos, s.window = nil, 0, nil
	s.parked, s.ended, s.freedDamage = false, false, nil
	s.lines.Store(0)
	return s.begin()
}

func hash(b []byte) string { return fmt.Sprintf("%016x", xxh3.Hash(b)) }

// TailBytes is how many bytes before a resume point TailHash covers.
const TailBytes = 4 << 10

// HeadHash returns the hash of the first n bytes of the decompressed stream, n at most len(Head).
func (s *Source) HeadHash(n int) string { return hash(s.Head[:n]) }

// TailHash returns the hash of the TailBytes bytes of the decompressed stream before end (of all
// of them when end is smaller): read again from a plain file, remembered when a compressed file
// has been read up to end. It is false when they cannot be had.
func (s *Source) TailHash(end int64) (string, bool) {
	if end <= 0 {
		return "", false
	}
	n := min(end, TailBytes)
	if !s.Decoded() && s.Size >= 0 {
		b := make([]byte, n)
		if _, err := s.file.ReadAt(b, end-n); err != nil {
			return "", false
		}
		return hash(b), true
	}
	if !s.Decoded() || end != s.pos || int64(len(s.window)) < n {
		return "", false
	}
	return hash(s.window[len(s.window)-int(n):]), true
}

// QuietPeriod is how long a file must be left unchanged before it is taken as complete.
const QuietPeriod = time.Minute

// MayGrow reports whether the source may still be being written: a plain file changed within
// QuietPeriod. A compressed file or a stream that has ended does not grow.
func (s *Source) MayGrow() bool {
	return !s.Decoded() && !s.ModTime.IsZero() && time.Since(s.ModTime) < QuietPeriod
}

// Damage returns the stretches of a compressed file that could not be decompressed so far.
func (s *Source) Damage() []Damage {
	if s.parked || s.ended {
		return s.freedDamage
	}
	if s.decomp == nil {
		return nil
	}
	return s.decomp.damage
}

// Park lets a compressed file wait to be read holding its file but not its decompressor and
// buffers (about 250 KiB of the Go heap for gzip): the next Read opens them again, from the start
// of the file, and reads back to where it was. Ingest parks the compressed files of a run of small
// files while they wait for their turn; a compressed file lets them go by itself once read to its
// end. A plain file or a stream is left as it is (nothing to free, or it cannot be read again).
func (s *Source) Park() {
	if !s.Decoded() || s.Size < 0 || s.parked || s.ended {
		return
	}
	s.free()
	s.parked = true
}

// free lets go of a compressed file's decompressor and buffers, keeping the damage they met.
func (s *Source) free() {
	s.freedDamage = s.Damage()
	s.closeDecoder()
	s.reader, s.decomp = nil, nil
}

// unpark opens a parked file's decompressor again and reads back to where it was.
func (s *Source) unpark() error {
	at, lines, window := s.pos, s.lines.Load(), s.window
	if err := s.Rewind(); err != nil {
		return err
	}
	if err := s.SkipTo(at); err != nil {
		return err
	}
	if s.pos != at || (!s.linesByReader && s.lines.Load() != lines) || !bytes.Equal(s.window, window) {
		return fmt.Errorf("reading %s again: it changed since it was opened", s.Name)
	}
	s.lines.Store(lines)
	return nil
}

// SkipTo moves to offset in the decompressed stream: a seek for a plain file, reading and
// discarding for a compressed one or a stream.
func (s *Source) SkipTo(offset int64) error {
	if !s.Decoded() && s.Size >= 0 {
		if _, err := s.file.Seek(offset, io.SeekStart); err != nil {
			return err
		}
		s.counter.n.Store(offset)
		s.reader = bufio.NewReaderSize(s.counter, HeadBytes)
		s.pos = offset
		return nil
	}
	_, err := io.CopyN(io.Discard, s, offset-s.pos)
	return err
}

// Read reads the decompressed stream.
func (s *Source) Read(p []byte) (int, error) {
	if s.ended {
		return 0, io.EOF
	}
	if s.parked {
		if err := s.unpark(); err != nil {
			return 0, err
		}
	}
	n, err := s.reader.Read(p)
	if !s.linesByReader {
		s.lines.Add(int64(bytes.Count(p[:n], []byte{'\n'})))
	}
	s.pos += int64(n)
	if s.Decoded() { // remember the last bytes, for TailHash
		keep := min(len(s.window), TailBytes-min(n, TailBytes))
		s.window = append(s.window[:0], s.window[len(s.window)-keep:]...)
		s.window = append(s.window, p[max(0, n-TailBytes):n]...)
		if err == io.EOF && s.Size >= 0 {
			s.free()
			s.ended = true
		}
	}
	return n, err
}

// Remaining returns how many bytes are left to Read when the source knows it (a file that is not
// compressed: those up to its size when opened), -1 otherwise.
func (s *Source) Remaining() int64 {
	if s.Decoded() || s.Size < 0 {
		return -1
	}
	return max(s.Size-s.pos, 0)
}

// DiskBytesRead returns how many bytes were read from disk so far.
func (s *Source) DiskBytesRead() int64 { return s.counter.n.Load() }

// LinesRead returns how many lines were read so far.
func (s *Source) LinesRead() int64 { return s.lines.Load() }

// Close closes the file (not stdin).
func (s *Source) Close() error {
	s.closeDecoder()
	if s.file == nil || s.file == os.Stdin {
		return nil
	}
	return s.file.Close()
}

func (s *Source) closeDecoder() {
	if s.decomp != nil && s.decomp.zstd != nil {
		s.decomp.zstd.Close()
	}
}
