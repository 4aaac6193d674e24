package source

import (
	"bufio"
	"bytes"
	"io"
	"os"
	"testing"
)

// decompressAll reads data through a decompressor of the format its magic says (gzip when
// none), as a file (seekable) or as a stream.
func decompressAll(t *testing.T, data []byte, seekable bool) ([]byte, []Damage) {
	format := compressionOf(data)
	if format == "" {
		format = "gzip"
	}
	r := bytes.NewReader(data)
	c := &countingReader{r: r}
	in := bufio.NewReaderSize(c, HeadBytes)
	var seek func(int64) error
	if seekable {
		seek = func(offset int64) error {
			if _, err := r.Seek(offset, io.SeekStart); err != nil {
				return err
			}
			c.n.Store(offset)
			in.Reset(c)
			return nil
		}
	}
	d := newDecompressor(format, in, func() int64 { return c.n.Load() - int64(in.Buffered()) }, seek)
	defer func() {
		if d.zstd != nil {
			d.zstd.Close()
		}
	}()
	out, err := io.ReadAll(io.LimitReader(d, 64<<20))
	if err != nil {
		t.Fatalf("read error %v: damage must be recorded, not returned", err)
	}
	return out, d.damage
}

// FuzzDecompress: whatever the bytes, decompressing ends without an error, the damage lies
// inside the file in order, and a damaged stretch never hides the lines decoded before it.
func FuzzDecompress(f *testing.F) {
	data, _, _ := corruptMiddle(f)
	f.Add(data)
	f.Add(append(member(f, "a\nb\n"), member(f, "c\n")...))
	f.Add(member(f, "x")[:10])
	if bz, err := os.ReadFile("testdata/lines.txt.bz2"); err == nil {
		f.Add(bz)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		for _, seekable := range []bool{true, false} {
			out, damage := decompressAll(t, data, seekable)
			last := int64(0)
			for _, d := range damage {
				if d.From < last || d.To < d.From || d.To > int64(len(data)) || d.Offset > int64(len(out)) || d.Line < 1 {
					t.Fatalf("seekable %v: damage %+v out of order or outside the %d-byte file", seekable, d, len(data))
				}
				if d.Offset > 0 && d.Offset < int64(len(out)) && out[d.Offset-1] != '\n' && out[d.Offset] != '\n' {
					t.Fatalf("seekable %v: the stream goes on inside the line the damage cut at %d", seekable, d.Offset)
				}
				last = d.To
			}
		}
	})
}
