package conntrack

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"time"
)

// Handler receives the records of one input. Pointers passed to the record
// methods are only valid during the call (the parser reuses them); use
// Values() or copy the struct to keep them. A non-nil error returned by a
// handler method stops parsing and is returned (wrapped) by Parse.
type Handler interface {
	Entry(*Entry) error
	Event(*Event) error
	Stat(*Stat) error
	Limits(*Limits) error
	KernelEvent(*KernelEvent) error
	// Bad reports an input line (or XML element) that could not be parsed.
	// line is 1-based, byteOffset is the offset of the start of that line,
	// excerpt is at most 200 bytes of it. Parsing continues afterwards.
	Bad(line int, byteOffset int64, reason string, excerpt string)
}

// Skipper is optionally implemented by a Handler to be told about lines that
// are valid but carry no record (the "N flow entries have been shown."
// trailer, unrelated sysctls or kernel log lines). Without it they are
// skipped quietly; they are never reported as Bad.
type Skipper interface {
	Skipped(line int, reason string)
}

// Options tune parsing. The zero value is usable.
type Options struct {
	// Location is the time zone of wall clock times printed without one
	// ([start=Sat Nov 21 04:24:48 2026], dmesg -T, XML <when>). Default UTC.
	Location *time.Location
	// Setting is the conntrack sysctl (short name, e.g. nf_conntrack_max) that a file holding
	// only its value is a copy of (/proc/sys/net/netfilter/nf_conntrack_max); with FormatSysctl
	// each line is then that setting's value. SysctlFileSetting tells it from the file name.
	Setting string
	// CapturedAt is when the file was captured (its bundle's time, --at): a syslog time, which
	// has no year, takes the year that puts it at or before this time. Zero leaves it undated.
	CapturedAt time.Time
}

// ErrUnknownFormat is returned by Parse for an unsupported Format.
var ErrUnknownFormat = errors.New("conntrack: unknown format")

// Parse reads r in format f and calls h for every record. Input is streamed:
// memory use is bounded by the longest line (or one XML flow). Lines that
// cannot be parsed are passed to h.Bad and parsing continues. The returned
// error is an I/O error, a handler error, or ErrUnknownFormat.
func (o Options) Parse(r io.Reader, f Format, h Handler) error {
	if o.Location == nil {
		o.Location = time.UTC
	}
	var err error
	switch f {
	case FormatList, FormatExtended, FormatProc, FormatEvents:
		p := &textParser{opts: o, h: h, format: f}
		err = p.run(r)
	case FormatSave:
		p := &textParser{opts: o, h: h, format: f, save: true}
		err = p.run(r)
	case FormatXML:
		err = parseXML(r, o, h)
	case FormatStats, FormatProcStat, FormatCount, FormatSysctl, FormatKernelLog:
		err = parseMisc(r, f, o, h)
	default:
		return fmt.Errorf("%w %q", ErrUnknownFormat, string(f))
	}
	if err != nil {
		return fmt.Errorf("conntrack: parse %s: %w", f, err)
	}
	return nil
}

var utf8BOM = []byte("\ufeff")

// lineReader yields lines of any length without copying when possible.
type lineReader struct {
	br     *bufio.Reader
	buf    []byte
	lineNo int
	off    int64 // offset of the start of the current line
	next   int64 // offset of the start of the next line
}

func newLineReader(r io.Reader) *lineReader {
	return &lineReader{br: bufio.NewReaderSize(r, 256<<10)}
}

// read returns the next line without its "\n" (and "\r"). The slice is valid
// until the next call. At the end it returns io.EOF.
func (lr *lineReader) read() ([]byte, error) {
	line, err := lr.br.ReadSlice('\n')
	if errors.Is(err, bufio.ErrBufferFull) {
		lr.buf = append(lr.buf[:0], line...)
		for errors.Is(err, bufio.ErrBufferFull) {
			line, err = lr.br.ReadSlice('\n')
			lr.buf = append(lr.buf, line...)
		}
		line = lr.buf
	}
	if len(line) == 0 && err != nil {
		return nil, err
	}
	if err != nil && err != io.EOF {
		return nil, err
	}
	lr.lineNo++
	lr.off = lr.next
	lr.next += int64(len(line))
	if n := len(line); n > 0 && line[n-1] == '\n' {
		line = line[:n-1]
	}
	if n := len(line); n > 0 && line[n-1] == '\r' {
		line = line[:n-1]
	}
	if lr.lineNo == 1 {
		line = bytes.TrimPrefix(line, utf8BOM) // a file saved by an editor or a Windows tool
	}
	return line, nil
}

func excerpt(b []byte) string {
	if len(b) > 200 {
		b = b[:200]
	}
	return string(bytes.ToValidUTF8(b, []byte("?")))
}

// findTrailer looks for conntrack's stderr message
// "conntrack v1.4.7 (conntrack-tools): 3500 flow entries have been shown."
// in line. When stdout and stderr go to the same file, the message can land in
// the middle of an entry line; the rest of that entry then starts the next
// line. It returns the index of the message, the message, and whether it is
// the harmless "have been shown." trailer.
func findTrailer(line []byte) (idx int, msg []byte, harmless bool) {
	i := bytes.Index(line, []byte("conntrack v"))
	if i < 0 {
		return -1, nil, false
	}
	j := bytes.Index(line[i:], []byte(" (conntrack-tools): "))
	if j < 0 || j > 32 {
		return -1, nil, false
	}
	msg = line[i:]
	body := line[i+j+len(" (conntrack-tools): "):]
	harmless = bytes.HasSuffix(body, []byte(" have been shown.")) || bytes.HasSuffix(body, []byte(" have been shown.\r"))
	return i, msg, harmless
}
