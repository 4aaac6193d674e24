package source

import (
	"bufio"
	"bytes"
	"compress/bzip2"
	"errors"
	"fmt"
	"io"

	"github.com/klauspost/compress/gzip"
	"github.com/klauspost/compress/zstd"
	"github.com/ulikunitz/xz"
)

// Damage is a stretch of a compressed file that could not be decompressed. Reading goes on
// after it: at the next gzip member, or nowhere for the other formats.
type Damage struct {
	Format string // gzip, bzip2, zstd or xz
	// From is where the damaged stretch starts in the compressed bytes: the start of the damaged
	// member for gzip (what the member held before the damage was read all the same), where the
	// decoder stood for the others. To is where reading went on, the file's size when nothing
	// followed (End).
	From, To int64
	End      bool  // nothing after the damage could be read
	Offset   int64 // where the damage is in the decompressed stream
	Line     int64 // the decompressed line the damage falls in (1-based): the lines before it were read
	Err      error
}

func (d Damage) Error() string {
	after := fmt.Sprintf("reading went on at byte %d", d.To)
	if d.End {
		after = "nothing after it could be read"
	}
	return fmt.Sprintf("corrupt %s at byte %d: %v (the lines before line %d were read; %s)", d.Format, d.From, d.Err, d.Line, after)
}

// compressions are the formats Open undoes, known by their magic bytes.
var compressions = []struct {
	name  string
	magic []byte
}{
	{"gzip", []byte{0x1f, 0x8b}},
	{"bzip2", []byte("BZh")},
	{"zstd", []byte{0x28, 0xb5, 0x2f, 0xfd}},
	{"xz", []byte{0xfd, '7', 'z', 'X', 'Z', 0x00}},
}

// compressionOf returns the compression format head starts with, "" for none.
func compressionOf(head []byte) string {
	for _, c := range compressions {
		if bytes.HasPrefix(head, c.magic) && (c.name != "bzip2" || len(head) > 3 && head[3] >= '1' && head[3] <= '9') {
			return c.name
		}
	}
	return ""
}

// decompressor reads the decompressed stream of a compressed file, counts what it hands out,
// and records the damage it meets instead of failing: a damaged gzip member is skipped up to the
// next member header; the other formats end at their damage.
type decompressor struct {
	format string
	in     *bufio.Reader     // the compressed bytes
	pos    func() int64      // compressed offset of the next byte of in
	seek   func(int64) error // repositions in; nil for a stream
	dec    io.Reader         // decoder of the current gzip member, or of the whole stream
	gz     *gzip.Reader      // dec for gzip
	zstd   *zstd.Decoder     // dec for zstd, closed with the source
	start  int64             // compressed offset of the current gzip member
	out    int64             // decompressed bytes handed out
	lines  int64             // newlines handed out
	last   byte              // last byte handed out
	err    error             // decoder error met with the last bytes handed out
	damage []Damage
	// newline is set when damage cut a line: a newline is handed out before what follows, so
	// that it starts a line of its own.
	newline bool
	// mended is where the stream went on after the last damage, -1 before any: damage met
	// before anything more was read is part of the same stretch.
	mended int64
	done   bool
}

func newDecompressor(format string, in *bufio.Reader, pos func() int64, seek func(int64) error) *decompressor {
	c := &decompressor{format: format, in: in, pos: pos, seek: seek, mended: -1}
	var err error
	switch format {
	case "gzip":
		c.gz = new(gzip.Reader)
		if _, err := in.Peek(1); err != nil {
			c.done = true // nothing at all
		} else {
			c.startMember()
		}
		return c
	case "bzip2":
		c.dec = bzip2.NewReader(in)
	case "zstd":
		c.zstd, err = zstd.NewReader(in, zstd.WithDecoderConcurrency(1))
		c.dec = c.zstd
	case "xz":
		c.dec, err = xz.NewReader(in)
	}
	if err != nil {
		c.damaged(err, 0)
		c.end()
	}
	return c
}

func (c *decompressor) Read(p []byte) (int, error) {
	for {
		if c.newline && len(p) > 0 {
			p[0], c.last, c.newline = '\n', '\n', false
			c.out++
			c.lines++
			c.mended = c.out
			return 1, nil
		}
		if c.done || len(p) == 0 {
			return 0, io.EOF
		}
		var n int
		err := c.err
		if err == nil {
			n, err = c.dec.Read(p)
		}
		c.err = nil
		if n > 0 {
			c.out += int64(n)
			c.lines += int64(bytes.Count(p[:n], []byte{'\n'}))
			c.last = p[n-1]
			c.err = err
			return n, nil
		}
		switch {
		case err == nil:
		case errors.Is(err, io.EOF) && c.gz != nil:
			if _, err := c.in.Peek(1); err != nil {
				c.done = true
			} else {
				c.startMember()
			}
		case errors.Is(err, io.EOF):
			c.done = true
		case c.gz != nil:
			c.damaged(err, c.start)
			c.resync(c.start + 1)
		default:
			c.damaged(err, c.pos())
			c.end()
		}
	}
}

// damaged records damage that starts at compressed offset from; resync or end sets its end.
func (c *decompressor) damaged(err error, from int64) {
	if errors.Is(err, io.EOF) {
		err = io.ErrUnexpectedEOF
	}
	if c.mended == c.out {
		return // nothing was read since the last damage: this is more of it
	}
	c.damage = append(c.damage, Damage{Format: c.format, From: from, To: from, Offset: c.out, Line: c.lines + 1, Err: err})
	c.newline = c.out > 0 && c.last != '\n'
	c.mended = c.out
}

// end stops reading at damage that nothing after it can be read from: the damage runs to the
// end of the input.
func (c *decompressor) end() {
	c.in.Discard(c.in.Buffered())
	for {
		if _, err := c.in.Peek(1); err != nil {
			break
		}
		c.in.Discard(c.in.Buffered())
	}
	c.damage[len(c.damage)-1].To, c.damage[len(c.damage)-1].End = c.pos(), true
	c.done = true
}

// startMember reads the header of the gzip member at the current position; bytes that are not
// a member header are damage.
func (c *decompressor) startMember() {
	c.start = c.pos()
	if err := c.gz.Reset(c.in); err != nil {
		c.damaged(err, c.start)
		c.resync(c.start + 1)
		return
	}
	c.gz.Multistream(false)
	c.dec = c.gz
}

// resync looks for the next gzip member, and ends the damage last recorded there: from next in
// a file (one past the start of the damaged member: the decoder may have read past the next
// member's header before it saw the damage), from where the decoder stopped in a stream.
func (c *decompressor) resync(next int64) {
	d := &c.damage[len(c.damage)-1]
	for {
		if c.seek != nil {
			if err := c.seek(next); err != nil {
				c.end()
				return
			}
		}
		at, ok := c.nextHeader()
		if !ok {
			c.end()
			return
		}
		d.To = at
		if c.gz.Reset(c.in) == nil {
			c.gz.Multistream(false)
			c.start, c.dec = at, c.gz
			return
		}
		next = at + 1
	}
}

// gzipMember starts every gzip member: magic and deflate.
var gzipMember = []byte{0x1f, 0x8b, 0x08}

// nextHeader advances in to the next bytes that look like a gzip member header (the magic, and
// flags without the reserved bits) and returns their compressed offset; false at the end.
func (c *decompressor) nextHeader() (int64, bool) {
	for {
		buf, err := c.in.Peek(c.in.Size())
		i := bytes.Index(buf, gzipMember)
		switch {
		case i >= 0 && i+len(gzipMember) < len(buf):
			c.in.Discard(i)
			if buf[i+len(gzipMember)]&0xe0 == 0 {
				return c.pos(), true
			}
			c.in.Discard(1)
		case err != nil:
			c.in.Discard(len(buf))
			return 0, false
		default: // keep what may be the start of a header cut by the end of buf
			c.in.Discard(len(buf) - len(gzipMember))
		}
	}
}
