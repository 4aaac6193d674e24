package auditgen

import (
	"bytes"
	"encoding/json"
	"fmt"
	"time"
)

// Holes spliced into pre-rendered JSON bodies.
const (
	holeNone   = iota
	holeRV     // resourceVersion digits
	holeTS     // RFC3339 seconds timestamp (metav1.Time)
	holeTM     // RFC3339 microseconds timestamp (metav1.MicroTime)
	holeHolder // leader-election holder identity
	holeTrans  // leader transitions count
)

const (
	sentRV     = "@@RV@@"
	sentTS     = "@@TS@@"
	sentTM     = "@@TM@@"
	sentHolder = "@@HOLDER@@"
	sentTrans  = "@@TRANS@@"
)

// Magic times replaced by sentinels after encoding (metav1.Time and
// MicroTime cannot hold a sentinel string).
var (
	magicSec   = time.Date(2001, 2, 3, 4, 5, 6, 0, time.UTC)
	magicMicro = time.Date(2001, 2, 3, 4, 5, 6, 70809000, time.UTC)
)

type seg struct {
	lit  []byte
	hole uint8
}

// tmpl is a JSON document split at holes.
type tmpl struct {
	segs []seg
	size int // literal bytes
}

// renderCtx holds hole values for one rendering.
type renderCtx struct {
	rv     int64
	ts     []byte // seconds timestamp
	tm     []byte // micro timestamp
	holder string
	trans  int64
}

func (t *tmpl) render(dst []byte, c *renderCtx) []byte {
	for i := range t.segs {
		s := &t.segs[i]
		dst = append(dst, s.lit...)
		switch s.hole {
		case holeRV:
			dst = appendInt(dst, c.rv)
		case holeTS:
			dst = append(dst, c.ts...)
		case holeTM:
			dst = append(dst, c.tm...)
		case holeHolder:
			dst = append(dst, c.holder...)
		case holeTrans:
			dst = appendInt(dst, c.trans)
		}
	}
	return dst
}

// compileJSON encodes v with encoding/json and splits it at sentinels.
func compileJSON(v any) *tmpl {
	b, err := json.Marshal(v)
	if err != nil {
		panic(fmt.Sprintf("auditgen: encoding template: %v", err))
	}
	return compileBytes(b)
}

func compileBytes(b []byte) *tmpl {
	b = bytes.ReplaceAll(b, []byte(magicMicro.Format("2006-01-02T15:04:05.000000Z07:00")), []byte(sentTM))
	b = bytes.ReplaceAll(b, []byte(magicSec.Format(time.RFC3339)), []byte(sentTS))
	t := &tmpl{}
	sents := []struct {
		s string
		h uint8
	}{{sentRV, holeRV}, {sentTS, holeTS}, {sentTM, holeTM}, {sentHolder, holeHolder}, {sentTrans, holeTrans}}
	for len(b) > 0 {
		i := bytes.Index(b, []byte("@@"))
		if i < 0 {
			t.segs = append(t.segs, seg{lit: b})
			t.size += len(b)
			break
		}
		matched := false
		for _, s := range sents {
			if bytes.HasPrefix(b[i:], []byte(s.s)) {
				t.segs = append(t.segs, seg{lit: b[:i:i], hole: s.h})
				t.size += i
				b = b[i+len(s.s):]
				matched = true
				break
			}
		}
		if !matched {
			panic("auditgen: unknown sentinel in template: " + string(b[i:min(len(b), i+20)]))
		}
	}
	return t
}
