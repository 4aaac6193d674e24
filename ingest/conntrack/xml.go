package conntrack

import (
	"bytes"
	"database/sql"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"strconv"
	"time"
)

// xmlSource feeds the XML decoder byte by byte (so the decoder keeps no
// hidden buffer and we can resynchronise after a syntax error), removes
// conntrack's stderr trailer wherever it landed, and remembers which input
// line the bytes come from.
type xmlSource struct {
	lr      *lineReader
	cur     []byte
	pos     int
	line    int   // input line of the byte last returned
	off     int64 // offset of that line
	pend    []byte
	pendOK  bool
	pendLn  int
	pendOff int64
	nextLn  int
	nextOff int64
	h       Handler
	inject  []byte // synthetic bytes served before the input (resync)
	ioErr   error
	joined  []byte
}

func (s *xmlSource) ReadByte() (byte, error) {
	if len(s.inject) > 0 {
		c := s.inject[0]
		s.inject = s.inject[1:]
		return c, nil
	}
	for s.pos >= len(s.cur) {
		if err := s.fill(); err != nil {
			return 0, err
		}
	}
	c := s.cur[s.pos]
	s.pos++
	s.line, s.off = s.nextLn, s.nextOff
	return c, nil
}

func (s *xmlSource) Read(b []byte) (int, error) {
	n := 0
	for n < len(b) {
		c, err := s.ReadByte()
		if err != nil {
			if n > 0 {
				return n, nil
			}
			return 0, err
		}
		b[n] = c
		n++
		if c == '\n' {
			break
		}
	}
	return n, nil
}

// fill loads the next (trailer-free) input line into cur, with its newline.
func (s *xmlSource) fill() error {
	for {
		line, err := s.lr.read()
		if err == io.EOF {
			if s.pendOK {
				s.pendOK = false
				s.cur, s.pos = append(s.pend, '\n'), 0
				s.nextLn, s.nextOff = s.pendLn, s.pendOff
				return nil
			}
			return io.EOF
		}
		if err != nil {
			s.ioErr = err
			return err
		}
		ln, off := s.lr.lineNo, s.lr.off
		if s.pendOK {
			s.joined = append(append(s.joined[:0], s.pend...), line...)
			line, ln, off = s.joined, s.pendLn, s.pendOff
			s.pendOK = false
		}
		if i, msg, harmless := findTrailer(line); i >= 0 {
			if !harmless {
				s.h.Bad(ln, off, "conntrack error message: "+excerpt(msg), excerpt(line))
			} else if sk, ok := s.h.(Skipper); ok {
				sk.Skipped(ln, "conntrack trailer: "+string(msg))
			}
			if prefix := line[:i]; len(bytes.TrimSpace(prefix)) > 0 {
				s.pend = append(s.pend[:0], prefix...)
				s.pendOK, s.pendLn, s.pendOff = true, ln, off
			}
			continue
		}
		s.cur = append(append(s.cur[:0], line...), '\n')
		s.pos = 0
		s.nextLn, s.nextOff = ln, off
		return nil
	}
}

// skipToFlow discards input up to the next line starting with "<flow".
func (s *xmlSource) skipToFlow() error {
	s.pos = len(s.cur)
	for {
		if err := s.fill(); err != nil {
			return err
		}
		if bytes.HasPrefix(bytes.TrimSpace(s.cur), []byte("<flow")) {
			return nil
		}
	}
}

type xmlParser struct {
	o     Options
	h     Handler
	src   *xmlSource
	ev    Event
	isEv  bool
	bad   string
	dir   int // 0 orig, 1 reply, 2 independent
	leaf  string
	text  []byte
	when  [6]int // year, month, day, hour, min, sec
	whenN int
	line  int
	off   int64
	in    bool
	sawT  [2]bool
}

func parseXML(r io.Reader, o Options, h Handler) error {
	src := &xmlSource{lr: newLineReader(r), h: h}
	p := &xmlParser{o: o, h: h, src: src}
	for {
		d := xml.NewDecoder(src)
		d.Strict = true
		err := p.decode(d)
		if err == nil {
			return nil
		}
		if src.ioErr != nil {
			return fmt.Errorf("read: %w", src.ioErr)
		}
		var herr handlerError
		if errors.As(err, &herr) {
			return herr.err
		}
		line, off := src.line, src.off
		if p.in {
			line, off = p.line, p.off
		}
		h.Bad(line, off, "xml: "+err.Error(), excerpt(bytes.TrimSpace(src.cur)))
		p.in = false
		if err := src.skipToFlow(); err != nil {
			if err == io.EOF {
				return nil
			}
			return fmt.Errorf("read: %w", err)
		}
		src.inject = []byte("<conntrack>")
	}
}

type handlerError struct{ err error }

func (e handlerError) Error() string { return e.err.Error() }

func attr(t xml.StartElement, name string) string {
	for _, a := range t.Attr {
		if a.Name.Local == name {
			return a.Value
		}
	}
	return ""
}

func (p *xmlParser) decode(d *xml.Decoder) error {
	for {
		tok, err := d.Token()
		if err == io.EOF {
			if p.in {
				p.h.Bad(p.line, p.off, "xml: truncated <flow>", "")
			}
			return nil
		}
		if err != nil {
			return err
		}
		switch t := tok.(type) {
		case xml.StartElement:
			p.start(t)
		case xml.CharData:
			if p.leaf != "" {
				p.text = append(p.text, t...)
			}
		case xml.EndElement:
			if err := p.end(t.Name.Local); err != nil {
				return handlerError{err}
			}
		}
	}
}

func (p *xmlParser) fail(format string, args ...any) {
	if p.bad == "" {
		p.bad = fmt.Sprintf(format, args...)
	}
}

// start opens an element: a <flow> starts an entry (or event), the elements inside it set its
// direction, protocol and flags, and any other element is a leaf whose text end reads.
func (p *xmlParser) start(t xml.StartElement) {
	name := t.Name.Local
	if name == "flow" {
		p.startFlow(attr(t, "type"))
		return
	}
	if !p.in {
		if name != "conntrack" {
			p.fail("unexpected <%s> outside <flow>", name)
		}
		return
	}
	e := &p.ev.Entry
	switch name {
	case "meta":
		switch attr(t, "direction") {
		case "original":
			p.dir = 0
		case "reply":
			p.dir = 1
		case "independent":
			p.dir = 2
		default:
			p.fail("unknown meta direction %q", attr(t, "direction"))
		}
		if p.dir < 2 {
			p.sawT[p.dir] = true
		}
	case "layer3":
		fam := attr(t, "protoname")
		switch fam {
		case "ipv4", "ipv6":
			e.Family = "ipv4"
			if fam == "ipv6" {
				e.Family = "ipv6"
			}
		default:
			p.fail("unknown layer 3 protocol %q", fam)
		}
	case "layer4":
		pn, want, ok := protoInfo([]byte(attr(t, "protoname")))
		if !ok {
			p.fail("unknown protocol %q", attr(t, "protoname"))
			return
		}
		n, err := strconv.ParseUint(attr(t, "protonum"), 10, 8)
		if err != nil || want >= 0 && int32(n) != want {
			p.fail("bad protocol number %q for %s", attr(t, "protonum"), pn)
		}
		e.Proto, e.ProtoNum = pn, int32(n)
	case "assured":
		e.Flags |= FlagAssured
	case "unreplied":
		e.Flags |= FlagUnreplied
	case "offload":
		e.Flags |= FlagOffload
	case "hw_offload":
		e.Flags |= FlagHWOffload
	case "counters", "timestamp", "when", "labels":
	default:
		p.leaf = name
		p.text = p.text[:0]
	}
}

// startFlow begins a new entry; a flow with a type (new, update, destroy) is an event.
func (p *xmlParser) startFlow(typ string) {
	p.ev = Event{}
	p.ev.Entry.Format = FormatXML
	p.bad, p.in, p.leaf, p.whenN, p.sawT = "", true, "", 0, [2]bool{}
	p.line, p.off = p.src.line, p.src.off
	p.isEv = false
	switch typ {
	case "":
	case "new":
		p.ev.Type, p.isEv = "NEW", true
	case "update":
		p.ev.Type, p.isEv = "UPDATE", true
	case "destroy":
		p.ev.Type, p.isEv = "DESTROY", true
	default:
		p.fail("unknown flow type %q", typ)
	}
}

// end closes an element: a </flow> emits the entry, a leaf's closing tag sets the field it
// names from its text.
func (p *xmlParser) end(name string) error {
	if !p.in {
		return nil
	}
	if name == "flow" {
		p.in = false
		return p.emit()
	}
	if p.leaf == "" || name != p.leaf {
		return nil
	}
	p.leaf = ""
	v := bytes.TrimSpace(p.text)
	e := &p.ev.Entry
	var reason string
	switch p.dir {
	case 0:
		reason = setTupleLeaf(e, &e.Orig, name, v)
	case 1:
		reason = setTupleLeaf(e, &e.Reply, name, v)
	default:
		reason = p.setIndependentLeaf(name, v)
	}
	if reason != "" {
		p.fail("%s", reason)
	}
	return nil
}

// setTupleLeaf sets the field of tp (the original or reply tuple of e) that a leaf of a
// <meta direction="original|reply"> names; a leaf it does not know goes to e's extra column. It
// returns why v is not a valid value, or "".
func setTupleLeaf(e *Entry, tp *Tuple, name string, v []byte) string {
	switch name {
	case "src":
		return setAddr(&tp.Src, []byte("<src>"), v)
	case "dst":
		return setAddr(&tp.Dst, []byte("<dst>"), v)
	case "sport":
		return setNum32(&tp.SPort, []byte(name), v, 65535)
	case "dport":
		return setNum32(&tp.DPort, []byte(name), v, 65535)
	case "type":
		return setNum32(&tp.ICMPType, []byte(name), v, 255)
	case "code":
		return setNum32(&tp.ICMPCode, []byte(name), v, 255)
	case "id":
		return setNum32(&tp.ICMPID, []byte(name), v, 65535)
	case "packets":
		return setNum(&tp.Packets, []byte(name), v, 1<<63-1)
	case "bytes":
		return setNum(&tp.Bytes, []byte(name), v, 1<<63-1)
	case "zone":
		return setNum(&tp.Zone, []byte(name), v, 65535)
	}
	appendExtra(e, []byte(name+"="+string(v)))
	return ""
}

// setIndependentLeaf sets the entry's field that a leaf of <meta direction="independent"> names
// (state, timers, counters, the <timestamp> and <when> times); a leaf it does not know goes to
// the extra column. It returns why v is not a valid value, or "".
func (p *xmlParser) setIndependentLeaf(name string, v []byte) string {
	e := &p.ev.Entry
	switch name {
	case "state":
		st, ok := internState(v)
		e.State = st
		if !ok {
			return fmt.Sprintf("bad state %q", v)
		}
		return ""
	case "timeout":
		return setNum(&e.TimeoutS, []byte(name), v, 1<<32)
	case "mark":
		return setNum(&e.Mark, []byte(name), v, 1<<32-1)
	case "zone":
		return setNum(&e.Zone, []byte(name), v, 65535)
	case "use":
		return setNum(&e.Use, []byte(name), v, 1<<32-1)
	case "id":
		return setNum(&e.ID, []byte(name), v, 1<<32-1)
	case "deltatime":
		return setNum(&e.DeltaS, []byte(name), v, 1<<63-1)
	case "start":
		return setUnixNano(&e.Start, name, v)
	case "stop":
		return setUnixNano(&e.Stop, name, v)
	case "hour", "min", "sec", "wday", "day", "month", "year":
		return p.setWhen(name, v)
	}
	appendExtra(e, []byte(name+"="+string(v)))
	return ""
}

// setUnixNano sets dst from the nanoseconds since the epoch of a <timestamp>'s <start> or <stop>.
func setUnixNano(dst *sql.Null[time.Time], name string, v []byte) string {
	ns, ok := parseUint(v, 1<<63-1)
	if !ok {
		return fmt.Sprintf("bad <%s> %q", name, v)
	}
	*dst = sql.Null[time.Time]{V: time.Unix(0, int64(ns)).UTC(), Valid: true}
	return ""
}

// setWhen records one field of the <when> wall clock (the event's time); the weekday is checked
// but not kept.
func (p *xmlParser) setWhen(name string, v []byte) string {
	n, ok := parseUint(v, 1<<16)
	if !ok {
		return fmt.Sprintf("bad <%s> %q", name, v)
	}
	idx := map[string]int{"year": 0, "month": 1, "day": 2, "hour": 3, "min": 4, "sec": 5, "wday": -1}[name]
	if idx >= 0 {
		p.when[idx] = int(n)
		p.whenN++
	}
	return ""
}

func (p *xmlParser) emit() error {
	e := &p.ev.Entry
	if p.bad == "" {
		switch {
		case !p.sawT[0]:
			p.bad = "missing <meta direction=\"original\">"
		case !p.sawT[1]:
			p.bad = "missing <meta direction=\"reply\">"
		case e.Proto == "":
			p.bad = "missing <layer4>"
		case !e.Orig.Src.IsValid():
			p.bad = "missing <src> in original tuple"
		case !e.Reply.Src.IsValid():
			p.bad = "missing <src> in reply tuple"
		default:
			fam := e.Family
			p.bad = finish(e, 1)
			if p.bad == "" && fam == "" {
				p.bad = "missing <layer3>"
			}
		}
	}
	if p.bad != "" {
		p.h.Bad(p.line, p.off, p.bad, excerpt(bytes.TrimSpace(p.src.cur)))
		return nil
	}
	e.Line, e.ByteStart = int64(p.line), p.off
	if p.isEv {
		if p.whenN >= 6 {
			w := p.when
			p.ev.Time = sql.Null[time.Time]{V: time.Date(w[0], time.Month(w[1]), w[2], w[3], w[4], w[5], 0, p.o.Location), Valid: true}
		}
		if err := p.h.Event(&p.ev); err != nil {
			return fmt.Errorf("line %d: %w", p.line, err)
		}
		return nil
	}
	if err := p.h.Entry(e); err != nil {
		return fmt.Errorf("line %d: %w", p.line, err)
	}
	return nil
}
