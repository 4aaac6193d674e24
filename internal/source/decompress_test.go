package source

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/klauspost/compress/gzip"
	"github.com/klauspost/compress/zstd"
	"github.com/ulikunitz/xz"
)

// member compresses text into one gzip member.
func member(t testing.TB, text string) []byte {
	var b bytes.Buffer
	zw := gzip.NewWriter(&b)
	zw.Write([]byte(text))
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

func lines(from, to int) string {
	var b strings.Builder
	for i := from; i <= to; i++ {
		fmt.Fprintf(&b, "line %d\n", i)
	}
	return b.String()
}

func writeTemp(t *testing.T, name string, data []byte) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

func readFileSource(t *testing.T, path string) (*Source, string) {
	t.Helper()
	src, err := Open(context.Background(), path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { src.Close() })
	out, err := io.ReadAll(src)
	if err != nil {
		t.Fatal(err)
	}
	return src, string(out)
}

// corruptMiddle returns three gzip members whose second is damaged, and where the second and
// third start.
func corruptMiddle(t testing.TB) (data []byte, second, third int64) {
	m1, m2, m3 := member(t, lines(1, 100)), member(t, lines(101, 200)), member(t, lines(201, 300))
	m2 = bytes.Clone(m2)
	for i := 20; i < 40; i++ {
		m2[i] ^= 0x5a
	}
	data = append(append(append([]byte(nil), m1...), m2...), m3...)
	return data, int64(len(m1)), int64(len(m1) + len(m2))
}

// TestGzipResyncsAtNextMember: a damaged member in the middle costs that member only; the
// members after it are read, and the damaged compressed range is recorded exactly.
func TestGzipResyncsAtNextMember(t *testing.T) {
	data, second, third := corruptMiddle(t)
	src, out := readFileSource(t, writeTemp(t, "audit.log.gz", data))
	if !strings.HasPrefix(out, lines(1, 100)) || !strings.HasSuffix(out, lines(201, 300)) {
		t.Fatalf("members around the damage not read whole:\n%s", out)
	}
	dmg := src.Damage()
	if len(dmg) != 1 || dmg[0].From != second || dmg[0].To != third || dmg[0].Format != "gzip" || dmg[0].Line < 101 {
		t.Fatalf("damage = %+v, want one gzip stretch [%d, %d) from line 101 on", dmg, second, third)
	}
	if !strings.Contains(dmg[0].Error(), fmt.Sprintf("corrupt gzip at byte %d", second)) {
		t.Errorf("damage reads %q", dmg[0].Error())
	}
	if strings.Count(out, "line 201\n") != 1 || !strings.Contains(out, "\nline 201\n") {
		t.Errorf("the member after the damage does not start a line of its own:\n%s", out)
	}
}

// TestGzipStreamResyncs: read as a stream (no seeking), the damage is skipped from where the
// decoder stopped, and the next member is still found.
func TestGzipStreamResyncs(t *testing.T) {
	data, _, _ := corruptMiddle(t)
	c := &countingReader{r: bytes.NewReader(data)}
	in := bufio.NewReaderSize(c, HeadBytes)
	d := newDecompressor("gzip", in, func() int64 { return c.n.Load() - int64(in.Buffered()) }, nil)
	out, err := io.ReadAll(d)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(string(out), lines(1, 100)) || !strings.HasSuffix(string(out), lines(201, 300)) || len(d.damage) != 1 {
		t.Fatalf("stream: damage %+v, output:\n%s", d.damage, out)
	}
}

func TestGzipHeaderThenGarbage(t *testing.T) {
	junk := bytes.Repeat([]byte{0xde, 0xad, 0xbe, 0xef, 0x11}, 200)
	data := append(member(t, "x")[:10], junk...)
	src, out := readFileSource(t, writeTemp(t, "audit.log.gz", data))
	dmg := src.Damage()
	if out != "" || len(dmg) != 1 || dmg[0].From != 0 || dmg[0].To != int64(len(data)) {
		t.Fatalf("output %q, damage %+v; want nothing and damage over the whole file", out, dmg)
	}
}

func TestGzipTruncatedLastMember(t *testing.T) {
	m1, m2 := member(t, lines(1, 10)), member(t, lines(11, 2000))
	data := append(append([]byte(nil), m1...), m2[:len(m2)/2]...)
	src, out := readFileSource(t, writeTemp(t, "audit.log.gz", data))
	if !strings.HasPrefix(out, lines(1, 10)) || !strings.HasSuffix(out, "\n") {
		t.Fatalf("output:\n%.300s", out)
	}
	dmg := src.Damage()
	if len(dmg) != 1 || dmg[0].From != int64(len(m1)) || dmg[0].To != int64(len(data)) || !dmg[0].End || !strings.Contains(dmg[0].Error(), "unexpected EOF") {
		t.Fatalf("damage = %+v, want [%d, %d) unexpected EOF", dmg, len(m1), len(data))
	}
	// the message says what was read of the cut member, not that all of it was skipped
	read := int64(strings.Count(out, "\n"))
	if want := fmt.Sprintf("(the lines before line %d were read; nothing after it could be read)", read); dmg[0].Line != read || !strings.HasSuffix(dmg[0].Error(), want) {
		t.Errorf("damage %q at line %d, want %q: %d lines were read", dmg[0].Error(), dmg[0].Line, want, read-1)
	}
	if src.MayGrow() {
		t.Error("a compressed file is never growing")
	}
}

func TestOtherCompressions(t *testing.T) {
	want := lines(1, 50)
	var zs, xzb bytes.Buffer
	zw, _ := zstd.NewWriter(&zs)
	zw.Write([]byte(want))
	zw.Close()
	xw, err := xz.NewWriter(&xzb)
	if err != nil {
		t.Fatal(err)
	}
	xw.Write([]byte(want))
	xw.Close()
	bz, err := os.ReadFile("testdata/lines.txt.bz2")
	if err != nil {
		t.Fatal(err)
	}
	for format, data := range map[string][]byte{"zstd": zs.Bytes(), "xz": xzb.Bytes(), "bzip2": bz} {
		src, out := readFileSource(t, writeTemp(t, "audit.log."+format, data))
		if format == "bzip2" {
			want = strings.ReplaceAll(lines(1, 50), "\n", " of a bzip2 file\n")
		} else {
			want = lines(1, 50)
		}
		if src.Compression != format || out != want || len(src.Damage()) != 0 {
			t.Errorf("%s: compression %q, damage %v, output:\n%s", format, src.Compression, src.Damage(), out)
		}
		// Cut short, it is damage (an error when nothing at all could be read), never an
		// empty file.
		cut := data[:len(data)*2/3]
		src, err := Open(context.Background(), writeTemp(t, "cut."+format, cut))
		if err == nil {
			_, err = io.ReadAll(src)
			if dmg := src.Damage(); err == nil && len(dmg) == 1 && dmg[0].To == int64(len(cut)) {
				err = dmg[0]
			}
			src.Close()
		}
		if err == nil || !strings.Contains(err.Error(), "corrupt "+format+" at byte") {
			t.Errorf("%s cut short: %v", format, err)
		}
	}
}

// TestParkedFileReadsOn: a compressed file parked before its first read, and again halfway, reads
// on as if it had not been: the same bytes, lines, damage and tail hash; parked, it still reports
// the damage met so far. Read to its end, it lets its decompressor go and keeps answering io.EOF.
func TestParkedFileReadsOn(t *testing.T) {
	data, second, third := corruptMiddle(t)
	path := writeTemp(t, "audit.log.gz", data)
	whole, want := readFileSource(t, path)

	src, err := Open(context.Background(), path)
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	src.Park()
	var got bytes.Buffer
	buf := make([]byte, 1000)
	for parks := 0; ; {
		n, err := src.Read(buf)
		got.Write(buf[:n])
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		if got.Len() > len(want)/2 && parks == 0 {
			dmg := src.Damage()
			src.Park()
			if parked := src.Damage(); len(parked) != len(dmg) || src.decomp != nil || src.reader != nil {
				t.Fatalf("parked: damage %+v (was %+v), decompressor freed %v", parked, dmg, src.decomp == nil && src.reader == nil)
			}
			parks++
		}
	}
	if got.String() != want {
		t.Fatalf("parked twice, read %d bytes that differ from the %d read straight", got.Len(), len(want))
	}
	if src.LinesRead() != whole.LinesRead() || src.pos != whole.pos {
		t.Errorf("lines %d, position %d; read straight %d, %d", src.LinesRead(), src.pos, whole.LinesRead(), whole.pos)
	}
	if dmg := src.Damage(); len(dmg) != 1 || dmg[0].From != second || dmg[0].To != third {
		t.Errorf("damage %+v, want [%d, %d)", dmg, second, third)
	}
	h, ok := src.TailHash(src.pos)
	if wh, wok := whole.TailHash(whole.pos); h != wh || ok != wok || !ok {
		t.Errorf("tail hash %q %v, read straight %q %v", h, ok, wh, wok)
	}
	if src.decomp != nil || src.reader != nil {
		t.Error("read to its end, the file still holds its decompressor")
	}
	if n, err := src.Read(buf); n != 0 || err != io.EOF {
		t.Errorf("a read after the end: %d, %v", n, err)
	}
}
