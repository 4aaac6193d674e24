package conntrack

import (
	"bytes"
	"database/sql"
	"fmt"
	"io"
	"net/netip"
	"time"
)

// textParser parses the line formats of conntrack entries and events:
// conntrack -L (default, -o extended, id, ktimestamp, timestamp),
// /proc/net/nf_conntrack, conntrack -E [-o timestamp] and -o save.
type textParser struct {
	opts   Options
	h      Handler
	format Format
	save   bool

	event Event

	join []byte
	pend []byte

	lastTime    []byte
	lastTimeVal time.Time
}

func (p *textParser) run(r io.Reader) error {
	lr := newLineReader(r)
	var pending bool
	var pendLine int
	var pendOff int64
	for {
		line, err := lr.read()
		if err == io.EOF {
			if pending {
				// an entry cut by the trailer at the very end of the file
				if herr := p.parseLine(bytes.TrimSpace(p.pend), pendLine, pendOff); herr != nil {
					return herr
				}
			}
			return nil
		}
		if err != nil {
			return fmt.Errorf("read line %d: %w", lr.lineNo+1, err)
		}
		lineNo, off := lr.lineNo, lr.off
		if pending {
			p.join = append(append(p.join[:0], p.pend...), line...)
			line = p.join
			lineNo, off = pendLine, pendOff
			pending = false
		}
		if i, msg, harmless := findTrailer(line); i >= 0 {
			if harmless {
				p.skipped(lineNo, "conntrack trailer: "+string(msg))
			} else {
				p.h.Bad(lineNo, off, "conntrack error message: "+excerpt(msg), excerpt(line))
			}
			if prefix := line[:i]; len(bytes.TrimSpace(prefix)) > 0 {
				// stdout and stderr interleaved: the entry continues on the next line
				p.pend = append(p.pend[:0], prefix...)
				pending, pendLine, pendOff = true, lineNo, off
			}
			continue
		}
		t := bytes.TrimSpace(line)
		if len(t) == 0 {
			continue
		}
		if err := p.parseLine(t, lineNo, off); err != nil {
			return err
		}
	}
}

func (p *textParser) skipped(line int, reason string) {
	if s, ok := p.h.(Skipper); ok {
		s.Skipped(line, reason)
	}
}

// parseLine parses one trimmed line and calls the handler. It returns only
// handler errors.
func (p *textParser) parseLine(line []byte, lineNo int, off int64) error {
	e := &p.event.Entry
	*e = Entry{}
	p.event.Type = ""
	p.event.Time = sql.Null[time.Time]{}
	var reason string
	if p.save {
		reason = p.parseSave(line, e)
	} else {
		reason = p.parseText(line, e)
	}
	if reason != "" {
		p.h.Bad(lineNo, off, reason, excerpt(line))
		return nil
	}
	e.Line = int64(lineNo)
	e.ByteStart = off
	if p.event.Type != "" {
		if e.Format == FormatList || e.Format == FormatExtended {
			e.Format = FormatEvents
		}
		if err := p.h.Event(&p.event); err != nil {
			return fmt.Errorf("line %d: %w", lineNo, err)
		}
		return nil
	}
	if err := p.h.Entry(e); err != nil {
		return fmt.Errorf("line %d: %w", lineNo, err)
	}
	return nil
}

// scanner walks the space separated tokens of a line.
type scanner struct {
	b   []byte
	pos int
}

// next returns the next token; a token starting with '[' extends to the
// matching ']' even across spaces ("[start=Sat Nov 21 04:24:48 2026]").
func (s *scanner) next() ([]byte, string) {
	b := s.b
	i := s.pos
	for i < len(b) && (b[i] == ' ' || b[i] == '\t') {
		i++
	}
	j := i
	for j < len(b) && b[j] != ' ' && b[j] != '\t' {
		j++
	}
	if j > i && b[i] == '[' && b[j-1] != ']' {
		k := bytes.IndexByte(b[j:], ']')
		if k < 0 {
			s.pos = len(b)
			return nil, fmt.Sprintf("unterminated %q", b[i:])
		}
		j += k + 1
	}
	s.pos = j
	return b[i:j], ""
}

func protoInfo(name []byte) (string, int32, bool) {
	switch string(name) {
	case "tcp":
		return "tcp", 6, true
	case "udp":
		return "udp", 17, true
	case "icmp":
		return "icmp", 1, true
	case "icmpv6":
		return "icmpv6", 58, true
	case "sctp":
		return "sctp", 132, true
	case "udplite":
		return "udplite", 136, true
	case "dccp":
		return "dccp", 33, true
	case "gre":
		return "gre", 47, true
	case "unknown":
		return "unknown", -1, true
	}
	return "", 0, false
}

func hasPorts(proto string) bool {
	switch proto {
	case "tcp", "udp", "sctp", "udplite", "dccp":
		return true
	}
	return false
}

func isICMP(proto string) bool { return proto == "icmp" || proto == "icmpv6" }

var knownStates = [...]string{
	"NONE", "SYN_SENT", "SYN_RECV", "ESTABLISHED", "FIN_WAIT", "CLOSE_WAIT", "LAST_ACK",
	"TIME_WAIT", "CLOSE", "LISTEN", "SYN_SENT2",
	"CLOSED", "COOKIE_WAIT", "COOKIE_ECHOED", "SHUTDOWN_SENT", "SHUTDOWN_RECD",
	"SHUTDOWN_ACK_SENT", "HEARTBEAT_SENT", "HEARTBEAT_ACKED",
	"REQUEST", "RESPOND", "PARTOPEN", "OPEN", "CLOSEREQ", "CLOSING", "TIMEWAIT", "IGNORE", "INVALID",
}

// internState returns a shared string for known states, validating others.
func internState(b []byte) (string, bool) {
	for _, s := range knownStates {
		if string(b) == s {
			return s, true
		}
	}
	if len(b) == 0 || len(b) > 32 {
		return "", false
	}
	for _, c := range b {
		if !(c >= 'A' && c <= 'Z' || c == '_' || c >= '0' && c <= '9') {
			return "", false
		}
	}
	return string(b), true
}

func parseUint(b []byte, max uint64) (uint64, bool) {
	if len(b) == 0 || len(b) > 20 {
		return 0, false
	}
	var n uint64
	for _, c := range b {
		if c < '0' || c > '9' {
			return 0, false
		}
		d := uint64(c - '0')
		if n > (max-d)/10 {
			return 0, false
		}
		n = n*10 + d
	}
	return n, true
}

func setNum(dst *sql.Null[int64], key, v []byte, max uint64) string {
	n, ok := parseUint(v, max)
	if !ok {
		return fmt.Sprintf("bad %s= value %q", key, v)
	}
	if dst.Valid {
		return fmt.Sprintf("duplicate %s=", key)
	}
	*dst = sql.Null[int64]{V: int64(n), Valid: true}
	return ""
}

func setNum32(dst *sql.Null[int32], key, v []byte, max uint64) string {
	n, ok := parseUint(v, max)
	if !ok {
		return fmt.Sprintf("bad %s= value %q", key, v)
	}
	if dst.Valid {
		return fmt.Sprintf("duplicate %s=", key)
	}
	*dst = sql.Null[int32]{V: int32(n), Valid: true}
	return ""
}

// parseIPv4 parses a dotted quad without allocating.
func parseIPv4(b []byte) (netip.Addr, bool) {
	var ip [4]byte
	part, n, digits := 0, 0, 0
	for _, c := range b {
		switch {
		case c >= '0' && c <= '9':
			if digits > 0 && n == 0 {
				return netip.Addr{}, false // leading zero
			}
			n = n*10 + int(c-'0')
			digits++
			if n > 255 {
				return netip.Addr{}, false
			}
		case c == '.':
			if digits == 0 || part == 3 {
				return netip.Addr{}, false
			}
			ip[part] = byte(n)
			part++
			n, digits = 0, 0
		default:
			return netip.Addr{}, false
		}
	}
	if part != 3 || digits == 0 {
		return netip.Addr{}, false
	}
	ip[3] = byte(n)
	return netip.AddrFrom4(ip), true
}

func parseAddr(b []byte) (netip.Addr, bool) {
	if a, ok := parseIPv4(b); ok {
		return a, true
	}
	if bytes.IndexByte(b, ':') < 0 || bytes.IndexByte(b, '%') >= 0 {
		return netip.Addr{}, false
	}
	a, err := netip.ParseAddr(string(b))
	if err != nil {
		return netip.Addr{}, false
	}
	return a, true
}

func appendExtra(e *Entry, tok []byte) {
	if e.Extra != "" {
		e.Extra += " "
	}
	e.Extra += string(tok)
}

// parseText parses a conntrack -L / -E / /proc line into e (and p.event for
// events). It returns a reason on failure.
func (p *textParser) parseText(line []byte, e *Entry) string {
	e.Format = p.format
	sc := scanner{b: line}
	if r := p.parseHeader(&sc, e); r != "" {
		return r
	}
	t := tuples{dir: -1}
	for {
		tok, r := sc.next()
		if r != "" {
			return r
		}
		if len(tok) == 0 {
			break
		}
		switch {
		case tok[0] == '[':
			t.post = t.dir == 1
			r = p.bracket(tok, e, &t.dir)
		case bytes.IndexByte(tok, '=') < 0:
			r = bareToken(tok, e, t.dir)
		default:
			r = t.field(tok, e)
		}
		if r != "" {
			return r
		}
	}
	return finish(e, t.dir)
}

// parseHeader reads what comes before the tuples: an event's time and type, the layer 3
// family and the protocol with its number.
func (p *textParser) parseHeader(sc *scanner, e *Entry) string {
	tok, r := sc.next()
	if r != "" {
		return r
	}
	if tok, r = p.parseEventPrefix(sc, tok); r != "" {
		return r
	}
	if string(tok) == "ipv4" || string(tok) == "ipv6" {
		fam := "ipv4"
		want := uint64(2)
		if tok[3] == '6' {
			fam, want = "ipv6", 10
		}
		e.Family = fam
		num, _ := sc.next()
		if n, ok := parseUint(num, 255); !ok || n != want {
			return fmt.Sprintf("bad layer 3 protocol number %q for %s", num, fam)
		}
		if tok, r = sc.next(); r != "" {
			return r
		}
	}
	if len(tok) == 0 {
		return "empty entry"
	}
	name, want, ok := protoInfo(tok)
	if !ok {
		return fmt.Sprintf("unknown protocol %q", tok)
	}
	e.Proto = name
	num, _ := sc.next()
	n, ok := parseUint(num, 255)
	if !ok {
		return fmt.Sprintf("bad protocol number %q", num)
	}
	if want >= 0 && int32(n) != want {
		return fmt.Sprintf("protocol number %d does not match %q (%d)", n, name, want)
	}
	e.ProtoNum = int32(n)
	return ""
}

// parseEventPrefix reads conntrack -E's "[1795235091.568474]" (-o timestamp) and "[NEW]",
// starting at tok, and returns the token after them.
func (p *textParser) parseEventPrefix(sc *scanner, tok []byte) ([]byte, string) {
	var r string
	if len(tok) > 2 && tok[0] == '[' && tok[1] >= '0' && tok[1] <= '9' {
		t, ok := parseEpoch(tok[1 : len(tok)-1])
		if !ok {
			return nil, fmt.Sprintf("bad event timestamp %q", tok)
		}
		p.event.Time = sql.Null[time.Time]{V: t, Valid: true}
		if tok, r = sc.next(); r != "" {
			return nil, r
		}
		if len(tok) == 0 || tok[0] != '[' {
			return nil, "event timestamp without [NEW]/[UPDATE]/[DESTROY]"
		}
	}
	if len(tok) == 0 || tok[0] != '[' {
		return tok, ""
	}
	typ, ok := eventTypes[string(tok)]
	if !ok {
		return nil, fmt.Sprintf("unknown event type %q", tok)
	}
	p.event.Type = typ
	return sc.next()
}

// eventTypes are conntrack -E's event markers.
var eventTypes = map[string]string{"[NEW]": "NEW", "[UPDATE]": "UPDATE", "[DESTROY]": "DESTROY"}

// bareToken reads a token without '=' before the tuples: the timeout, then the state.
func bareToken(tok []byte, e *Entry, dir int) string {
	if dir >= 0 {
		return fmt.Sprintf("unexpected token %q", tok)
	}
	if !e.TimeoutS.Valid && e.State == "" {
		if t, ok := parseUint(tok, 1<<32); ok {
			e.TimeoutS = sql.Null[int64]{V: int64(t), Valid: true}
			return ""
		}
	}
	if e.State == "" {
		st, ok := internState(tok)
		if !ok {
			return fmt.Sprintf("bad state %q", tok)
		}
		e.State = st
		return ""
	}
	return fmt.Sprintf("unexpected token %q", tok)
}

// tuples follows a line through its tuples: dir is -1 before them, 0 in the original tuple and
// 1 in the reply tuple; post is set once past the reply tuple's own fields.
type tuples struct {
	dir  int
	post bool
	cur  *Tuple
}

// field reads one key=value token.
func (t *tuples) field(tok []byte, e *Entry) string {
	eq := bytes.IndexByte(tok, '=')
	k, v := tok[:eq], tok[eq+1:]
	switch string(k) {
	case "src":
		t.dir++
		if t.dir > 1 {
			return "more than two src= tuples"
		}
		t.cur = &e.Orig
		if t.dir == 1 {
			t.cur = &e.Reply
		}
		a, ok := parseAddr(v)
		if !ok {
			return fmt.Sprintf("bad src= address %q", v)
		}
		t.cur.Src = a
		return ""
	case "mark":
		t.post = true
		return setNum(&e.Mark, k, v, 1<<32-1)
	case "use":
		t.post = true
		return setNum(&e.Use, k, v, 1<<32-1)
	case "delta-time":
		t.post = true
		return setNum(&e.DeltaS, k, v, 1<<63-1)
	case "zone-orig", "orig-zone":
		return setNum(&e.Orig.Zone, k, v, 65535)
	case "zone-reply", "reply-zone":
		return setNum(&e.Reply.Zone, k, v, 65535)
	}
	if t.cur == nil {
		if string(k) == "id" {
			return setNum(&e.ID, k, v, 1<<32-1)
		}
		return fmt.Sprintf("%s= before src=", k)
	}
	return t.tupleField(tok, k, v, e)
}

// tupleField reads a key=value token inside or after a tuple.
func (t *tuples) tupleField(tok, k, v []byte, e *Entry) string {
	cur := t.cur
	switch string(k) {
	case "dst":
		a, ok := parseAddr(v)
		if !ok {
			return fmt.Sprintf("bad dst= address %q", v)
		}
		if cur.Dst.IsValid() {
			return "duplicate dst="
		}
		cur.Dst = a
		return ""
	case "sport":
		return setNum32(&cur.SPort, k, v, 65535)
	case "dport":
		return setNum32(&cur.DPort, k, v, 65535)
	case "type":
		return setNum32(&cur.ICMPType, k, v, 255)
	case "code":
		return setNum32(&cur.ICMPCode, k, v, 255)
	case "id":
		if isICMP(e.Proto) && !t.post && cur.ICMPCode.Valid && !cur.ICMPID.Valid {
			return setNum32(&cur.ICMPID, k, v, 65535)
		}
		t.post = true
		return setNum(&e.ID, k, v, 1<<32-1)
	case "packets":
		return setNum(&cur.Packets, k, v, 1<<63-1)
	case "bytes":
		return setNum(&cur.Bytes, k, v, 1<<63-1)
	case "zone":
		switch {
		case t.dir == 0:
			return setNum(&e.Orig.Zone, k, v, 65535)
		case t.dir == 1 && !t.post:
			return setNum(&e.Reply.Zone, k, v, 65535)
		}
		return setNum(&e.Zone, k, v, 65535)
	}
	appendExtra(e, tok)
	return ""
}

func (p *textParser) bracket(tok []byte, e *Entry, dir *int) string {
	inner := tok[1 : len(tok)-1]
	switch string(inner) {
	case "ASSURED":
		e.Flags |= FlagAssured
		return ""
	case "UNREPLIED":
		e.Flags |= FlagUnreplied
		return ""
	case "OFFLOAD":
		e.Flags |= FlagOffload
		return ""
	case "HW_OFFLOAD":
		e.Flags |= FlagHWOffload
		return ""
	}
	if bytes.HasPrefix(inner, []byte("start=")) || bytes.HasPrefix(inner, []byte("stop=")) {
		eq := bytes.IndexByte(inner, '=')
		t, ok := p.parseCtime(inner[eq+1:])
		if !ok {
			return fmt.Sprintf("bad %s time %q", inner[:eq], inner[eq+1:])
		}
		if eq == 5 {
			e.Start = sql.Null[time.Time]{V: t, Valid: true}
		} else {
			e.Stop = sql.Null[time.Time]{V: t, Valid: true}
		}
		return ""
	}
	if *dir < 0 {
		return fmt.Sprintf("unexpected %q before src=", tok)
	}
	appendExtra(e, tok)
	return ""
}

// finish validates a parsed entry.
func finish(e *Entry, dir int) string {
	if dir < 0 {
		return "missing src="
	}
	if dir < 1 {
		return "missing reply tuple (second src=)"
	}
	for i, t := range [2]*Tuple{&e.Orig, &e.Reply} {
		d := "original"
		if i == 1 {
			d = "reply"
		}
		if !t.Dst.IsValid() {
			return "missing dst= in " + d + " tuple"
		}
		if t.Src.Is4() != t.Dst.Is4() {
			return "mixed IPv4/IPv6 addresses in " + d + " tuple"
		}
		if hasPorts(e.Proto) {
			if !t.SPort.Valid {
				return "missing sport= in " + d + " tuple"
			}
			if !t.DPort.Valid {
				return "missing dport= in " + d + " tuple"
			}
		}
		if isICMP(e.Proto) {
			if !t.ICMPType.Valid {
				return "missing type= in " + d + " tuple"
			}
			if !t.ICMPCode.Valid {
				return "missing code= in " + d + " tuple"
			}
		}
	}
	fam := "ipv4"
	if !e.Orig.Src.Is4() {
		fam = "ipv6"
	}
	if e.Reply.Src.Is4() != e.Orig.Src.Is4() {
		return "original and reply tuples of different address families"
	}
	if e.Family != "" && e.Family != fam {
		return fmt.Sprintf("layer 3 protocol %s but %s addresses", e.Family, fam)
	}
	e.Family = fam
	if e.Proto == "icmp" && fam == "ipv6" || e.Proto == "icmpv6" && fam == "ipv4" {
		return fmt.Sprintf("protocol %s with %s addresses", e.Proto, fam)
	}
	if e.State != "" && e.Proto != "tcp" && e.Proto != "sctp" && e.Proto != "dccp" {
		return fmt.Sprintf("state %q on protocol %s", e.State, e.Proto)
	}
	return ""
}

// parseEpoch parses "1795235091.568474".
func parseEpoch(b []byte) (time.Time, bool) {
	dot := bytes.IndexByte(b, '.')
	ip, fp := b, []byte(nil)
	if dot >= 0 {
		ip, fp = b[:dot], b[dot+1:]
	}
	sec, ok := parseUint(ip, 1<<40)
	if !ok {
		return time.Time{}, false
	}
	var ns uint64
	if dot >= 0 {
		if len(fp) == 0 || len(fp) > 9 {
			return time.Time{}, false
		}
		f, ok := parseUint(fp, 999999999)
		if !ok {
			return time.Time{}, false
		}
		ns = f
		for i := len(fp); i < 9; i++ {
			ns *= 10
		}
	}
	return time.Unix(int64(sec), int64(ns)).UTC(), true
}

// parseCtime parses the ctime(3) form "Sat Nov 21 04:24:48 2026" in
// opts.Location, caching the last value (dumps repeat it a lot).
func (p *textParser) parseCtime(b []byte) (time.Time, bool) {
	if p.lastTime != nil && bytes.Equal(b, p.lastTime) {
		return p.lastTimeVal, true
	}
	t, err := time.ParseInLocation(time.ANSIC, string(b), p.opts.Location)
	if err != nil {
		return time.Time{}, false
	}
	p.lastTime = append(p.lastTime[:0], b...)
	p.lastTimeVal = t
	return t, true
}

// parseSave parses one conntrack -o save line:
// -A -t 118 -u SEEN_REPLY,ASSURED -s 10.200.0.1 -d 10.200.0.2 -r 10.200.0.2 -q 10.200.0.1 -p tcp --sport 44008 ...
func (p *textParser) parseSave(line []byte, e *Entry) string {
	e.Format = FormatSave
	sc := scanner{b: line}
	cmd, _ := sc.next()
	typ, ok := saveCommands[string(cmd)]
	if !ok {
		return fmt.Sprintf("unknown save command %q (want -A, -I, -U or -D)", cmd)
	}
	if typ != "" {
		p.event.Type = typ
	}
	var status, family []byte
	for {
		opt, _ := sc.next()
		if len(opt) == 0 {
			break
		}
		if opt[0] != '-' {
			return fmt.Sprintf("unexpected token %q", opt)
		}
		val, _ := sc.next()
		if len(val) == 0 {
			return fmt.Sprintf("missing value for %s", opt)
		}
		var r string
		switch string(opt) {
		case "-u", "--status":
			status = val
		case "-f", "--family":
			family = val
		default:
			r = saveOption(e, opt, val)
		}
		if r != "" {
			return r
		}
	}
	if e.Proto == "" {
		return "missing -p"
	}
	if len(status) > 0 {
		saveStatus(e, status)
	}
	return finishSave(e, family)
}

// saveCommands are the commands of -o save lines and the event types they stand for.
var saveCommands = map[string]string{"-A": "", "-I": "NEW", "-U": "UPDATE", "-D": "DESTROY"}

// saveOption reads one option of a -o save line into e.
func saveOption(e *Entry, opt, val []byte) string {
	switch string(opt) {
	case "-t", "--timeout":
		return setNum(&e.TimeoutS, []byte("-t"), val, 1<<32)
	case "-s", "--orig-src", "--src":
		return setAddr(&e.Orig.Src, opt, val)
	case "-d", "--orig-dst", "--dst":
		return setAddr(&e.Orig.Dst, opt, val)
	case "-r", "--reply-src":
		return setAddr(&e.Reply.Src, opt, val)
	case "-q", "--reply-dst":
		return setAddr(&e.Reply.Dst, opt, val)
	case "-p", "--protonum", "--proto":
		name, num, ok := protoInfo(val)
		if !ok || num < 0 {
			return fmt.Sprintf("unknown protocol %q", val)
		}
		e.Proto, e.ProtoNum = name, num
	case "--sport", "--orig-port-src":
		return setNum32(&e.Orig.SPort, opt, val, 65535)
	case "--dport", "--orig-port-dst":
		return setNum32(&e.Orig.DPort, opt, val, 65535)
	case "--reply-port-src":
		return setNum32(&e.Reply.SPort, opt, val, 65535)
	case "--reply-port-dst":
		return setNum32(&e.Reply.DPort, opt, val, 65535)
	case "--state":
		st, ok := internState(val)
		if !ok {
			return fmt.Sprintf("bad state %q", val)
		}
		e.State = st
	case "-m", "--mark":
		return setNum(&e.Mark, opt, val, 1<<32-1)
	case "-w", "--zone":
		return setNum(&e.Zone, opt, val, 65535)
	case "--orig-zone":
		return setNum(&e.Orig.Zone, opt, val, 65535)
	case "--reply-zone":
		return setNum(&e.Reply.Zone, opt, val, 65535)
	case "--icmp-type":
		return setNum32(&e.Orig.ICMPType, opt, val, 255)
	case "--icmp-code":
		return setNum32(&e.Orig.ICMPCode, opt, val, 255)
	case "--icmp-id":
		return setNum32(&e.Orig.ICMPID, opt, val, 65535)
	default:
		appendExtra(e, opt)
		appendExtra(e, val)
	}
	return ""
}

// saveStatus turns -u's status bits into flags, and keeps them in extra.
func saveStatus(e *Entry, status []byte) {
	seen := false
	for _, s := range bytes.Split(status, []byte(",")) {
		switch string(s) {
		case "SEEN_REPLY":
			seen = true
		case "ASSURED":
			e.Flags |= FlagAssured
		case "OFFLOAD":
			e.Flags |= FlagOffload
		case "HW_OFFLOAD":
			e.Flags |= FlagHWOffload
		}
	}
	if !seen {
		e.Flags |= FlagUnreplied
	}
	appendExtra(e, append([]byte("status="), status...))
}

// finishSave checks that a -o save line had both tuples and completes them as finish does; save
// prints only the original ICMP tuple.
func finishSave(e *Entry, family []byte) string {
	if !e.Orig.Src.IsValid() {
		return "missing -s"
	}
	if !e.Orig.Dst.IsValid() {
		return "missing -d"
	}
	if !e.Reply.Src.IsValid() {
		return "missing -r"
	}
	if !e.Reply.Dst.IsValid() {
		return "missing -q"
	}
	if isICMP(e.Proto) {
		if !e.Orig.ICMPType.Valid || !e.Orig.ICMPCode.Valid {
			return "missing --icmp-type/--icmp-code"
		}
		e.Reply.ICMPType, e.Reply.ICMPCode, e.Reply.ICMPID = sql.Null[int32]{}, sql.Null[int32]{}, e.Orig.ICMPID
		save := *e
		save.Reply.ICMPType = e.Orig.ICMPType
		save.Reply.ICMPCode = e.Orig.ICMPCode
		if r := finish(&save, 1); r != "" {
			return r
		}
		e.Family = save.Family
	} else if r := finish(e, 1); r != "" {
		return r
	}
	if len(family) > 0 && string(family) != e.Family {
		return fmt.Sprintf("-f %s but %s addresses", family, e.Family)
	}
	return ""
}

func setAddr(dst *netip.Addr, opt, val []byte) string {
	a, ok := parseAddr(val)
	if !ok {
		return fmt.Sprintf("bad %s address %q", opt, val)
	}
	*dst = a
	return ""
}
