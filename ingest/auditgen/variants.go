package auditgen

import (
	"bytes"
	"compress/gzip"
	"fmt"
	"io"
	"sort"
	"time"
)

// WriteGzip gzips data to w. With members > 1 the data is split at line
// boundaries into that many roughly equal parts, each its own gzip member,
// concatenated — what `cat audit.log.1.gz audit.log.gz` or a rotating
// writer produces. gzip readers must read all members (Go's gzip.Reader does
// by default).
func WriteGzip(w io.Writer, data []byte, members int) error {
	if members < 1 {
		members = 1
	}
	for m := 0; m < members; m++ {
		end := len(data)
		if m < members-1 {
			end = len(data) / (members - m)
			if i := bytes.IndexByte(data[end:], '\n'); i >= 0 {
				end += i + 1
			} else {
				end = len(data)
			}
		}
		zw, err := gzip.NewWriterLevel(w, gzip.BestSpeed)
		if err != nil {
			return err
		}
		zw.Name = fmt.Sprintf("audit-%d.log", m)
		zw.ModTime = time.Unix(0, 0)
		if _, err := zw.Write(data[:end]); err != nil {
			return err
		}
		if err := zw.Close(); err != nil {
			return err
		}
		data = data[end:]
	}
	return nil
}

// Damage is a kind of line corruption for InjectMalformed.
type Damage int

const (
	// Truncated: the line is cut mid-JSON (a torn write). Malformed.
	Truncated Damage = iota
	// Garbage: non-JSON bytes (binary noise, a stack trace line). Malformed.
	Garbage
	// NotAnEvent: a valid JSON object that is not an audit event (another
	// component's structured log). Malformed for an audit ingester.
	NotAnEvent
	// SyslogPrefixed: the event is prefixed with a syslog header
	// ("Nov 21 05:31:08 cp-1 kube-apiserver[2121]: "), as when audit logs are
	// shipped through syslog. GOOD data: the JSON after the prefix is a
	// complete event.
	SyslogPrefixed
)

func (d Damage) String() string {
	switch d {
	case Truncated:
		return "truncated"
	case Garbage:
		return "garbage"
	case NotAnEvent:
		return "not-an-event"
	case SyslogPrefixed:
		return "syslog-prefixed"
	}
	return fmt.Sprintf("Damage(%d)", int(d))
}

// Injection damages source line Line (1-based). With Insert the damaged
// line is a new line placed before source line Line (a truncated copy for
// Truncated, a prefixed copy for SyslogPrefixed) and the source line is kept
// intact; otherwise the source line itself is replaced (Truncated,
// Garbage, NotAnEvent lose that event; SyslogPrefixed keeps it).
type Injection struct {
	Line   int
	Damage Damage
	Insert bool
}

// InjectResult is the exact accounting of an InjectMalformed output. All
// line numbers are 1-based lines of the output.
type InjectResult struct {
	Lines      int   // lines written
	GoodEvents int   // lines that hold a complete audit event (incl. prefixed)
	Bad        []int // malformed lines, ascending
	Prefixed   []int // syslog-prefixed good lines, ascending
	// LostEvents counts source events destroyed by replacement.
	LostEvents int
}

// InjectMalformed copies NDJSON src to w applying injections, and returns
// which output lines are malformed. Injections past the end of src are an
// error; several injections on one line apply in order (inserts first).
func InjectMalformed(w io.Writer, src []byte, injections []Injection) (InjectResult, error) {
	inj := append([]Injection(nil), injections...)
	sort.SliceStable(inj, func(i, j int) bool {
		if inj[i].Line != inj[j].Line {
			return inj[i].Line < inj[j].Line
		}
		return inj[i].Insert && !inj[j].Insert
	})
	var res InjectResult
	var out bytes.Buffer
	line := 0
	k := 0
	for len(src) > 0 {
		i := bytes.IndexByte(src, '\n')
		var l []byte
		if i < 0 {
			l, src = src, nil
		} else {
			l, src = src[:i], src[i+1:]
		}
		line++
		replaced := false
		for ; k < len(inj) && inj[k].Line == line; k++ {
			in := inj[k]
			if !in.Insert && replaced {
				return res, fmt.Errorf("auditgen: line %d replaced twice", line)
			}
			res.Lines++
			bad := in.Damage != SyslogPrefixed
			if bad {
				res.Bad = append(res.Bad, res.Lines)
			} else {
				res.Prefixed = append(res.Prefixed, res.Lines)
				res.GoodEvents++
			}
			out.Write(damage(l, in.Damage, line))
			out.WriteByte('\n')
			if !in.Insert {
				replaced = true
				if bad {
					res.LostEvents++
				}
			}
		}
		if !replaced {
			res.Lines++
			res.GoodEvents++
			out.Write(l)
			out.WriteByte('\n')
		}
		if out.Len() >= 1<<20 {
			if _, err := w.Write(out.Bytes()); err != nil {
				return res, err
			}
			out.Reset()
		}
	}
	if k < len(inj) {
		return res, fmt.Errorf("auditgen: injection at line %d beyond end of input (%d lines)", inj[k].Line, line)
	}
	_, err := w.Write(out.Bytes())
	return res, err
}

func damage(l []byte, d Damage, n int) []byte {
	switch d {
	case Truncated:
		cut := len(l) / 2
		if cut < 1 {
			cut = 1
		}
		if cut > len(l) {
			cut = len(l)
		}
		// Never end on a complete document.
		return append([]byte(nil), l[:cut]...)
	case Garbage:
		g := [][]byte{
			[]byte("\x00\x00\x00\x00\x00\x00\x00\x00\x1f\x8b\x08\x00\xfe\xff"),
			[]byte("goroutine 1 [running]: panic: runtime error: invalid memory address or nil pointer dereference"),
			[]byte(`{"kind":"Event","apiVersion":"audit.k8s.io/v1","level":"Metadata","auditID":`),
			[]byte("E1121 05:31:08.312540    2121 audit.go:84] Error in audit plugin 'log' affecting 1 audit events: write /var/log/kubernetes/audit.log: no space left on device"),
		}
		return g[n%len(g)]
	case NotAnEvent:
		return []byte(fmt.Sprintf(`{"level":"info","ts":"2026-11-21T05:31:08.312Z","logger":"fluent-bit","msg":"flush chunk","chunk":%d,"retry":false}`, n))
	case SyslogPrefixed:
		ts := time.Date(2026, 11, 21, 5, 31, 8, 0, time.UTC)
		if i := bytes.Index(l, []byte(`"stageTimestamp":"`)); i >= 0 && len(l) >= i+18+27 {
			if t, err := time.Parse(time.RFC3339Nano, string(l[i+18:i+18+27])); err == nil {
				ts = t
			}
		}
		p := ts.Format(time.Stamp) + " cp-1 kube-apiserver[2121]: "
		return append([]byte(p), l...)
	}
	return l
}
