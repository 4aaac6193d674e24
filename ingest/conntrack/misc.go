package conntrack

import (
	"bytes"
	"database/sql"
	"fmt"
	"io"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"time"
)

// parseMisc handles the small line formats: conntrack -S,
// /proc/net/stat/nf_conntrack, conntrack -C, sysctl output and kernel logs.
func parseMisc(r io.Reader, f Format, o Options, h Handler) error {
	p := &miscParser{f: f, o: o, h: h}
	lr := newLineReader(r)
	for {
		raw, err := lr.read()
		if err == io.EOF {
			return p.flushLimits()
		}
		if err != nil {
			return fmt.Errorf("read line %d: %w", lr.lineNo+1, err)
		}
		ln, off := lr.lineNo, lr.off
		line := bytes.TrimSpace(raw)
		if len(line) == 0 || p.trailer(ln, off, line) {
			continue
		}
		reason, err := p.parseLine(ln, line)
		if reason != "" {
			p.h.Bad(ln, off, reason, excerpt(line))
		}
		if err != nil {
			return err
		}
	}
}

// miscParser keeps what spans lines: the /proc/net/stat header and row number, and the sysctl
// snapshot being gathered.
type miscParser struct {
	f      Format
	o      Options
	h      Handler
	header [][]byte // /proc/net/stat column names
	row    int
	lim    *Limits
}

func (p *miscParser) skip(line int, reason string) {
	if s, ok := p.h.(Skipper); ok {
		s.Skipped(line, reason)
	}
}

// trailer reports (and handles) a line that is conntrack's stderr trailer or error message.
func (p *miscParser) trailer(ln int, off int64, line []byte) bool {
	if p.f == FormatKernelLog {
		return false
	}
	i, msg, harmless := findTrailer(line)
	if i != 0 {
		return false
	}
	if harmless {
		p.skip(ln, "conntrack trailer: "+string(msg))
	} else {
		p.h.Bad(ln, off, "conntrack error message: "+excerpt(msg), excerpt(line))
	}
	return true
}

// parseLine parses one non-blank line. It returns why the line is bad, or an error that stops
// parsing.
func (p *miscParser) parseLine(ln int, line []byte) (reason string, err error) {
	var herr error
	switch p.f {
	case FormatStats:
		s, r := parseStatsLine(line)
		if r != "" {
			return r, nil
		}
		s.Line = int64(ln)
		herr = p.h.Stat(s)
	case FormatProcStat:
		s, r := p.procStatLine(ln, line)
		if s == nil {
			return r, nil
		}
		herr = p.h.Stat(s)
	case FormatCount:
		n, ok := parseUint(line, 1<<63-1)
		if !ok {
			return fmt.Sprintf("conntrack -C: not a number: %q", excerpt(line)), nil
		}
		herr = p.h.Limits(&Limits{Format: FormatCount, Count: sql.Null[int64]{V: int64(n), Valid: true}, Line: int64(ln)})
	case FormatSysctl:
		return p.sysctlLine(ln, line)
	case FormatKernelLog:
		k, r, relevant := parseKernelLine(line, p.o)
		if !relevant {
			p.skip(ln, "not a conntrack kernel message")
			return "", nil
		}
		if r != "" {
			return r, nil
		}
		k.Raw, k.Line = string(line), int64(ln)
		herr = p.h.KernelEvent(k)
	default:
		return "", fmt.Errorf("%w %q", ErrUnknownFormat, string(p.f))
	}
	if herr != nil {
		return "", fmt.Errorf("line %d: %w", ln, herr)
	}
	return "", nil
}

// procStatLine reads the header or a CPU's row of /proc/net/stat/nf_conntrack (hex values). It
// returns nil for the header and for a bad row, with the reason.
func (p *miscParser) procStatLine(ln int, line []byte) (*Stat, string) {
	if bytes.HasPrefix(line, []byte("entries")) {
		p.header = bytes.Fields(line)
		p.row = 0
		p.skip(ln, "header")
		return nil, ""
	}
	if p.header == nil {
		return nil, "data row before the \"entries ...\" header"
	}
	vals := bytes.Fields(line)
	if len(vals) != len(p.header) {
		return nil, fmt.Sprintf("%d values for %d columns", len(vals), len(p.header))
	}
	s := &Stat{Format: FormatProcStat, CPU: sql.Null[int64]{V: int64(p.row), Valid: true}, Line: int64(ln)}
	for i, v := range vals {
		n, err := strconv.ParseUint(string(v), 16, 64)
		if err != nil || n > 1<<63-1 {
			return nil, fmt.Sprintf("bad hex value %q for %s", v, p.header[i])
		}
		name := string(p.header[i])
		if fp := s.field(name); fp != nil {
			*fp = sql.Null[int64]{V: int64(n), Valid: true}
		} else {
			if s.Other == nil {
				s.Other = map[string]int64{}
			}
			s.Other[name] = int64(n)
		}
	}
	p.row++
	return s, ""
}

// sysctlLine adds one setting to the snapshot being gathered; a setting seen before starts the
// next snapshot of the file.
func (p *miscParser) sysctlLine(ln int, line []byte) (reason string, err error) {
	name, val, r := splitSysctl(line)
	if p.o.Setting != "" {
		name, val, r = "net.netfilter."+p.o.Setting, strings.TrimSpace(string(line)), ""
	}
	if r != "" {
		return r, nil
	}
	short, ok := conntrackSysctl(name)
	if !ok {
		p.skip(ln, "not a conntrack sysctl: "+name)
		return "", nil
	}
	if p.lim != nil {
		if _, dup := p.lim.Settings[short]; dup {
			if err := p.flushLimits(); err != nil {
				return "", err
			}
		}
	}
	if p.lim == nil {
		p.lim = &Limits{Format: FormatSysctl, Settings: map[string]string{}, Line: int64(ln)}
	}
	if fp := p.lim.field(short); fp != nil {
		n, err := strconv.ParseInt(val, 10, 64)
		if err != nil {
			return fmt.Sprintf("bad value %q for %s", val, name), nil
		}
		*fp = sql.Null[int64]{V: n, Valid: true}
	}
	p.lim.Settings[short] = val
	return "", nil
}

// flushLimits hands over the sysctl snapshot gathered so far.
func (p *miscParser) flushLimits() error {
	if p.lim == nil {
		return nil
	}
	l := p.lim
	p.lim = nil
	if err := p.h.Limits(l); err != nil {
		return fmt.Errorf("line %d: %w", l.Line, err)
	}
	return nil
}

// parseStatsLine parses one line of conntrack -S:
// "cpu=0   \tfound=0 invalid=0 insert=0 insert_failed=0 drop=0 ...".
func parseStatsLine(line []byte) (*Stat, string) {
	s := &Stat{Format: FormatStats}
	n := 0
	for _, tok := range bytes.Fields(line) {
		eq := bytes.IndexByte(tok, '=')
		if eq <= 0 {
			return nil, fmt.Sprintf("unexpected token %q (want name=value)", tok)
		}
		k, v := tok[:eq], tok[eq+1:]
		val, ok := parseUint(v, 1<<63-1)
		if !ok {
			return nil, fmt.Sprintf("bad %s= value %q", k, v)
		}
		if string(k) == "cpu" {
			if s.CPU.Valid {
				return nil, "duplicate cpu="
			}
			s.CPU = sql.Null[int64]{V: int64(val), Valid: true}
			continue
		}
		n++
		name := string(k)
		if fp := s.field(name); fp != nil {
			if fp.Valid {
				return nil, fmt.Sprintf("duplicate %s=", k)
			}
			*fp = sql.Null[int64]{V: int64(val), Valid: true}
		} else {
			if s.Other == nil {
				s.Other = map[string]int64{}
			}
			s.Other[name] = int64(val)
		}
	}
	if n == 0 {
		return nil, "no counters"
	}
	return s, ""
}

// splitSysctl splits "net.netfilter.nf_conntrack_max = 262144",
// "net.netfilter.nf_conntrack_max=262144",
// "/proc/sys/net/netfilter/nf_conntrack_max:262144" (grep . /proc/sys/...) or
// "/proc/sys/net/netfilter/nf_conntrack_max 262144" into a dotted name and value.
func splitSysctl(line []byte) (name, val string, reason string) {
	s := string(line)
	if strings.HasPrefix(s, "sysctl: ") {
		return "", "", "sysctl error: " + s
	}
	var i int
	if j := strings.Index(s, " = "); j > 0 {
		name, val = s[:j], s[j+3:]
	} else if i = strings.IndexAny(s, "=: \t"); i > 0 {
		name, val = s[:i], strings.TrimLeft(s[i+1:], " \t=:")
	} else {
		return "", "", "not a sysctl line (want name = value)"
	}
	name = strings.TrimSpace(name)
	val = strings.TrimSpace(val)
	name = strings.TrimPrefix(name, "/proc/sys/")
	if strings.Contains(name, "/") {
		name = strings.ReplaceAll(name, "/", ".")
	}
	if name == "" || strings.ContainsAny(name, " \t") {
		return "", "", "not a sysctl line (want name = value)"
	}
	return name, val, ""
}

// SysctlFileSetting recognises a copy of one conntrack sysctl by its file name: nf_conntrack_max
// (from /proc/sys/net/netfilter), net.netfilter.nf_conntrack_max, proc_sys_net_netfilter_nf_conntrack_max,
// each also with .txt. It returns the short name (nf_conntrack_max).
func SysctlFileSetting(name string) (string, bool) {
	base := strings.TrimSuffix(strings.ToLower(filepath.Base(name)), ".txt")
	base = strings.TrimPrefix(base, "proc_sys_net_netfilter_")
	if short, ok := conntrackSysctl(base); ok {
		base = short
	}
	if !strings.HasPrefix(base, "nf_conntrack_") || strings.ContainsAny(base, ". ") {
		return "", false
	}
	return base, true
}

// conntrackSysctl maps a dotted sysctl name to the short conntrack name.
func conntrackSysctl(name string) (string, bool) {
	switch {
	case name == "net.nf_conntrack_max":
		return "nf_conntrack_max", true
	case strings.HasPrefix(name, "net.netfilter."):
		return strings.TrimPrefix(name, "net.netfilter."), true
	}
	return "", false
}

// parseKernelLine recognises the conntrack kernel messages:
//
//	nf_conntrack: table full, dropping packet
//	nf_conntrack: nf_conntrack: table full in netns 4026532177, dropping packet
//	nf_conntrack: expectation table full
//
// behind an optional prefix: dmesg "[  720.861746] ", dmesg -T
// "[Sat Nov 21 04:25:10 2026] ", journalctl short-iso
// "2026-11-21T04:25:10+0000 host kernel: " or syslog "Nov 21 04:25:10 host kernel: " (dated in
// the year that puts it at or before Options.CapturedAt), each of them also after dmesg -x's
// "kern  :warn  : " or /dev/kmsg's and dmesg -r's "<4>".
func parseKernelLine(line []byte, o Options) (*KernelEvent, string, bool) {
	i := bytes.Index(line, []byte("nf_conntrack: "))
	if i < 0 {
		return nil, "", false
	}
	msg := line[i:]
	k := &KernelEvent{Format: FormatKernelLog, Message: string(msg)}
	switch {
	case bytes.Contains(msg, []byte("expectation table full")):
		k.Kind = "expect_table_full"
	case bytes.Contains(msg, []byte("table full")):
		k.Kind = "table_full"
	default:
		return nil, "", false
	}
	if j := bytes.Index(msg, []byte("in netns ")); j >= 0 {
		rest := msg[j+len("in netns "):]
		e := 0
		for e < len(rest) && rest[e] >= '0' && rest[e] <= '9' {
			e++
		}
		n, ok := parseUint(rest[:e], 1<<63-1)
		if !ok {
			return nil, fmt.Sprintf("bad netns %q", rest), true
		}
		k.Netns = sql.Null[int64]{V: int64(n), Valid: true}
	}
	prefix := bytes.TrimSpace(stripLevel(line[:i]))
	if err := kernelPrefix(prefix, k, o); err != "" {
		return nil, err, true
	}
	return k, "", true
}

// stripLevel takes off what dmesg -x ("kern  :warn  : ") and /dev/kmsg or dmesg -r ("<4>") print
// before a kernel line's time.
func stripLevel(p []byte) []byte {
	if m := levelPrefix.FindIndex(p); m != nil {
		return p[m[1]:]
	}
	return p
}

var levelPrefix = regexp.MustCompile(`^\s*(?:<\d+>|[a-z]+\s*:[a-z]+\s*:)`)

// inYearBefore dates a syslog time t (year 0) in the year that puts it at or before capturedAt,
// allowing a day of clock skew; false when capturedAt is unknown.
func inYearBefore(t, capturedAt time.Time) (time.Time, bool) {
	if capturedAt.IsZero() {
		return time.Time{}, false
	}
	at := t.AddDate(capturedAt.Year(), 0, 0)
	if at.After(capturedAt.Add(24 * time.Hour)) {
		at = t.AddDate(capturedAt.Year()-1, 0, 0)
	}
	return at, true
}

func kernelPrefix(p []byte, k *KernelEvent, o Options) string {
	// journalctl / syslog: "<time> <host> kernel: [uptime]"
	if j := bytes.Index(p, []byte(" kernel:")); j >= 0 {
		ts := string(bytes.TrimSpace(p[:j]))
		if sp := strings.LastIndexByte(ts, ' '); sp > 0 {
			ts = ts[:sp] // drop the host name
		}
		var t time.Time
		var err error
		for _, layout := range []string{"2006-01-02T15:04:05-0700", "2006-01-02T15:04:05.999999999-0700",
			time.RFC3339Nano, "2006-01-02T15:04:05Z07:00"} {
			if t, err = time.Parse(layout, ts); err == nil {
				break
			}
		}
		if err == nil {
			k.At = sql.Null[time.Time]{V: t.UTC(), Valid: true}
		} else if t, err = time.ParseInLocation(time.Stamp, ts, o.Location); err != nil {
			return fmt.Sprintf("unrecognised log time %q", ts)
		} else if at, ok := inYearBefore(t, o.CapturedAt); ok {
			k.At = sql.Null[time.Time]{V: at.UTC(), Valid: true}
		} // else undated: the raw line keeps the time
		p = bytes.TrimSpace(p[j+len(" kernel:"):])
	}
	if len(p) == 0 {
		return ""
	}
	if p[0] != '[' || p[len(p)-1] != ']' {
		return fmt.Sprintf("unrecognised log prefix %q", p)
	}
	in := bytes.TrimSpace(p[1 : len(p)-1])
	if f, err := strconv.ParseFloat(string(in), 64); err == nil && f >= 0 {
		k.UptimeS = sql.Null[float64]{V: f, Valid: true}
		return ""
	}
	t, err := time.ParseInLocation(time.ANSIC, string(in), o.Location)
	if err != nil {
		return fmt.Sprintf("unrecognised log prefix %q", p)
	}
	k.At = sql.Null[time.Time]{V: t.UTC(), Valid: true}
	return ""
}
