package k8sobj

import (
	"bytes"
	"io"
)

// tracker reads an input once and keeps the bytes from a movable mark on, so that the decoder can
// ask for the line of any offset at or after the mark, take an object's bytes back out, and restart
// a json.Decoder at an arbitrary offset after a syntax error. Offsets are absolute input offsets.
type tracker struct {
	r       io.Reader
	win     []byte // input bytes [winStart, winStart+len(win))
	winOff  int64
	winLine int64 // 1-based line number at winOff
	pos     int64 // next offset served by Read
	err     error // sticky error from r
}

func newTracker(r io.Reader) *tracker { return &tracker{r: r, winLine: 1} }

func (t *tracker) end() int64 { return t.winOff + int64(len(t.win)) }

// fill reads more input into the window; it returns false at the end of input or on error.
func (t *tracker) fill() bool {
	if t.err != nil {
		return false
	}
	if cap(t.win)-len(t.win) < 4096 {
		nw := make([]byte, len(t.win), 2*cap(t.win)+32*1024)
		copy(nw, t.win)
		t.win = nw
	}
	n, err := t.r.Read(t.win[len(t.win):cap(t.win)])
	t.win = t.win[:len(t.win)+n]
	if err != nil {
		t.err = err
	}
	return n > 0 || err == nil
}

// Read serves bytes from pos on.
func (t *tracker) Read(p []byte) (int, error) {
	for t.pos >= t.end() {
		if !t.fill() {
			return 0, t.err
		}
	}
	n := copy(p, t.win[t.pos-t.winOff:])
	t.pos += int64(n)
	return n, nil
}

// readErr is the error that ended the input, other than io.EOF.
func (t *tracker) readErr() error {
	if t.err == io.EOF {
		return nil
	}
	return t.err
}

// line returns the 1-based line of offset off (off >= mark).
func (t *tracker) line(off int64) int64 {
	if off < t.winOff {
		return t.winLine
	}
	if off > t.end() {
		off = t.end()
	}
	return t.winLine + int64(bytes.Count(t.win[:off-t.winOff], []byte{'\n'}))
}

// bytes returns the retained bytes [from, to).
func (t *tracker) slice(from, to int64) []byte {
	if from < t.winOff {
		from = t.winOff
	}
	if to > t.end() {
		to = t.end()
	}
	if to < from {
		return nil
	}
	return t.win[from-t.winOff : to-t.winOff]
}

// mark drops the bytes before off.
func (t *tracker) mark(off int64) {
	if off <= t.winOff {
		return
	}
	if off > t.end() {
		off = t.end()
	}
	n := off - t.winOff
	t.winLine += int64(bytes.Count(t.win[:n], []byte{'\n'}))
	rest := t.win[n:]
	if int64(cap(t.win)) > 1<<20 && int64(len(rest)) < int64(cap(t.win))/4 {
		// Shrink after a large object so that one big value does not pin its memory.
		nw := make([]byte, len(rest), max(2*len(rest), 64*1024))
		copy(nw, rest)
		t.win = nw
	} else {
		copy(t.win, rest)
		t.win = t.win[:len(rest)]
	}
	t.winOff = off
}

// excerpt returns up to n retained bytes from off, on one line.
func (t *tracker) excerpt(off int64, n int) string {
	for t.end() < off+int64(n) && t.fill() {
	}
	return excerptOf(t.slice(off, off+int64(n)), n)
}

// seekLineStart moves pos to the start of the next line at or after off that begins with one of
// starts (e.g. '{'), reading more input as needed, and returns that offset; ok is false at the end.
func (t *tracker) seekLineStart(off int64, starts string) (int64, bool) {
	atLineStart := off == 0 || (off > t.winOff && off-1 < t.end() && t.win[off-1-t.winOff] == '\n')
	for i := off; ; i++ {
		for i >= t.end() {
			if !t.fill() {
				t.pos = t.end()
				return t.end(), false
			}
		}
		c := t.win[i-t.winOff]
		if atLineStart && bytes.IndexByte([]byte(starts), c) >= 0 {
			t.pos = i
			return i, true
		}
		atLineStart = c == '\n'
		if i-t.winOff > 1<<20 && i-t.winOff > int64(len(t.win))/2 {
			// Do not keep skipped garbage around.
			t.mark(i - 1)
		}
	}
}

func excerptOf(b []byte, n int) string {
	if len(b) > n {
		b = b[:n]
	}
	s := string(bytes.ToValidUTF8(b, []byte("?")))
	r := []rune(s)
	out := make([]rune, 0, len(r))
	for _, c := range r {
		switch c {
		case '\n', '\r', '\t':
			c = ' '
		}
		out = append(out, c)
	}
	return string(out)
}
