package audit

import (
	"bytes"
	"testing"

	"github.com/kubesift/kubesift/internal/source"
)

// FuzzCRIJoin feeds container-log lines, cut into two chunks at a newline, to one criJoiner:
// the lines come out in order, each at a line and offset of the input; a rejoined line is one
// line no longer than the limit, and a reject or unfinished run is at a line of the input.
func FuzzCRIJoin(f *testing.F) {
	f.Add([]byte("t stdout P {\"a\":\nt stderr F {}\nt stdout P 1,\nt stdout F \"b\":2}\nt stdout F {}\n"), uint(20), uint(8))
	f.Add([]byte("t stdout P:x aaaa\nt stdout P bbbb\nt stderr P cc\n"), uint(30), uint(5))
	f.Fuzz(func(t *testing.T, in []byte, cut, maxLine uint) {
		j := criJoiner{maxLine: int(maxLine%64) + 1}
		lines := int64(bytes.Count(in, []byte{'\n'})) + 1
		at := int(cut % uint(len(in)+1))
		if i := bytes.IndexByte(in[at:], '\n'); i >= 0 {
			at += i + 1
		} else {
			at = len(in)
		}
		first := &source.Chunk{Data: bytes.Clone(in[:at]), Base: 0, FirstLine: 1}
		second := &source.Chunk{Data: bytes.Clone(in[at:]), Base: int64(at), FirstLine: 1 + int64(bytes.Count(in[:at], []byte{'\n'}))}
		var parts []*source.Chunk
		for _, c := range []*source.Chunk{first, second} {
			p, rejects := j.split(c)
			parts = append(parts, p...)
			for _, r := range rejects {
				if r.Line < 1 || r.Line > lines || r.Offset < 0 || r.Offset >= int64(len(in)) {
					t.Fatalf("reject %+v outside the input", r)
				}
			}
		}
		for _, r := range j.unfinished() {
			if r.line < 1 || r.line > lines || r.offset < 0 || r.offset >= int64(len(in)) {
				t.Fatalf("unfinished run at line %d, offset %d: outside the input", r.line, r.offset)
			}
		}
		for _, p := range parts {
			if p.FirstLine < 1 || p.FirstLine > lines || p.Base < 0 || p.Base > int64(len(in)) {
				t.Fatalf("part at line %d, offset %d: outside the input", p.FirstLine, p.Base)
			}
			if end := p.Base + int64(len(p.Data)); end <= int64(len(in)) && bytes.Equal(in[p.Base:end], p.Data) {
				continue // lines passed on in place
			}
			if len(p.Data) == 0 || len(p.Data) > j.maxLine+1 || bytes.IndexByte(p.Data, '\n') != len(p.Data)-1 {
				t.Fatalf("rejoined line %q is not one line of at most %d bytes", p.Data, j.maxLine)
			}
		}
	})
}
