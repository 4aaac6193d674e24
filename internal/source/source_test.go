package source

import (
	"bytes"
	"context"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/klauspost/compress/gzip"
	"golang.org/x/text/encoding"
	"golang.org/x/text/encoding/unicode"
)

func gzipped(t *testing.T, members ...string) []byte {
	t.Helper()
	var b bytes.Buffer
	for _, m := range members {
		zw := gzip.NewWriter(&b)
		if _, err := zw.Write([]byte(m)); err != nil {
			t.Fatal(err)
		}
		if err := zw.Close(); err != nil {
			t.Fatal(err)
		}
	}
	return b.Bytes()
}

func writeFile(t *testing.T, name string, data []byte) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

func openFile(t *testing.T, path string) *Source {
	t.Helper()
	s, err := Open(context.Background(), path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// TestOpenUndoesGzip: a gzipped file reads as its text, every member of a multi-member file (as
// rotation tools and `cat a.gz b.gz` make) in turn; the head and the identity are the
// decompressed text's, so a plain file and its gzipped copy are one file.
func TestOpenUndoesGzip(t *testing.T) {
	text := "line 1\nline 2\nline 3\n"
	plain := openFile(t, writeFile(t, "audit.log", []byte(text)))
	zipped := openFile(t, writeFile(t, "audit.log.1.gz", gzipped(t, "line 1\nline 2\n", "line 3\n")))
	if plain.Compression != "" || zipped.Compression != "gzip" {
		t.Errorf("compression: plain %q, gzipped %q", plain.Compression, zipped.Compression)
	}
	for _, s := range []*Source{plain, zipped} {
		if string(s.Head) != text {
			t.Errorf("%s: head %q", s.Name, s.Head)
		}
		got, err := io.ReadAll(s)
		if err != nil || string(got) != text {
			t.Errorf("%s: read %q, %v", s.Name, got, err)
		}
		if s.LinesRead() != 3 {
			t.Errorf("%s: %d lines read", s.Name, s.LinesRead())
		}
	}
	if plain.Identity != zipped.Identity || plain.Identity == "" {
		t.Errorf("identities %q and %q", plain.Identity, zipped.Identity)
	}
	if plain.Size != int64(len(text)) || plain.DiskBytesRead() != plain.Size || zipped.DiskBytesRead() != zipped.Size {
		t.Errorf("sizes: plain %d read %d, gzipped %d read %d", plain.Size, plain.DiskBytesRead(), zipped.Size, zipped.DiskBytesRead())
	}
}

// TestOpenIdentityIsTheFirstLine: the identity stays while a file grows and changes with its
// first line.
func TestOpenIdentityIsTheFirstLine(t *testing.T) {
	first := openFile(t, writeFile(t, "a.log", []byte("event 1\n")))
	grown := openFile(t, writeFile(t, "b.log", []byte("event 1\nevent 2\nevent 3\n")))
	other := openFile(t, writeFile(t, "c.log", []byte("event 0\nevent 1\n")))
	if first.Identity != grown.Identity {
		t.Errorf("a grown file changed identity: %s, %s", first.Identity, grown.Identity)
	}
	if first.Identity == other.Identity {
		t.Errorf("another first line kept the identity %s", first.Identity)
	}
}

// TestOpenHead: the head holds the first 64 KiB of the decompressed text and no more, however
// the file is read afterwards.
func TestOpenHead(t *testing.T) {
	text := strings.Repeat("0123456789abcde\n", 10000) // 160,000 bytes
	for _, data := range [][]byte{[]byte(text), gzipped(t, text)} {
		s := openFile(t, writeFile(t, "big.log", data))
		if len(s.Head) != HeadBytes || string(s.Head) != text[:HeadBytes] {
			t.Errorf("compression %q: head of %d bytes", s.Compression, len(s.Head))
		}
		got, err := io.ReadAll(s)
		if err != nil || string(got) != text {
			t.Errorf("compression %q: read %d bytes, %v", s.Compression, len(got), err)
		}
	}
}

// TestSkipTo: reading resumes at a decompressed offset, by seeking in a plain file and by
// reading on in a gzipped one; the disk bytes count from there.
func TestSkipTo(t *testing.T) {
	text := "first line\nsecond line\nthird line\n"
	offset := int64(len("first line\n"))
	for _, data := range [][]byte{[]byte(text), gzipped(t, text)} {
		s := openFile(t, writeFile(t, "audit.log", data))
		if err := s.SkipTo(offset); err != nil {
			t.Fatal(err)
		}
		got, err := io.ReadAll(s)
		if err != nil || string(got) != text[offset:] {
			t.Errorf("compression %q: after SkipTo(%d) read %q, %v", s.Compression, offset, got, err)
		}
		if s.Compression == "" && s.DiskBytesRead() != int64(len(text)) {
			t.Errorf("plain: %d disk bytes read after the seek, want %d", s.DiskBytesRead(), len(text))
		}
	}
}

// TestMayGrow: a plain file changed within QuietPeriod may still be written; an older one or a
// gzipped one may not.
func TestMayGrow(t *testing.T) {
	fresh := openFile(t, writeFile(t, "fresh.log", []byte("a\n")))
	oldPath := writeFile(t, "old.log", []byte("a\n"))
	long := time.Now().Add(-2 * QuietPeriod)
	if err := os.Chtimes(oldPath, long, long); err != nil {
		t.Fatal(err)
	}
	old := openFile(t, oldPath)
	zipped := openFile(t, writeFile(t, "fresh.log.gz", gzipped(t, "a\n")))
	if !fresh.MayGrow() || old.MayGrow() || zipped.MayGrow() {
		t.Errorf("MayGrow: fresh %v, old %v, gzipped %v", fresh.MayGrow(), old.MayGrow(), zipped.MayGrow())
	}
}

func TestOpenErrors(t *testing.T) {
	dir := t.TempDir()
	if _, err := Open(context.Background(), dir); err == nil || !strings.Contains(err.Error(), "is a directory") {
		t.Errorf("a directory: %v", err)
	}
	if _, err := Open(context.Background(), filepath.Join(dir, "missing.log")); !os.IsNotExist(err) {
		t.Errorf("a missing file: %v", err)
	}
	empty := openFile(t, writeFile(t, "empty.log", nil))
	if len(empty.Head) != 0 || empty.Compression != "" || empty.Size != 0 {
		t.Errorf("an empty file: head %q, compression %q, size %d", empty.Head, empty.Compression, empty.Size)
	}
}

// TestOpenDecodesUTF16: a file that starts with a UTF-16 byte order mark (PowerShell's > writes
// UTF-16LE) reads as its UTF-8 text, without the mark, in both byte orders; its offsets are those
// of the text, so it is read again from the start instead of sought, as a compressed file is.
func TestOpenDecodesUTF16(t *testing.T) {
	text := "{\"kind\": \"List\", \"items\": [\"é\"]}\nline 2\n"
	for name, enc := range map[string]encoding.Encoding{
		"utf-16le": unicode.UTF16(unicode.LittleEndian, unicode.UseBOM),
		"utf-16be": unicode.UTF16(unicode.BigEndian, unicode.UseBOM),
	} {
		data, err := enc.NewEncoder().Bytes([]byte(text))
		if err != nil {
			t.Fatal(err)
		}
		s := openFile(t, writeFile(t, name+".json", data))
		out, err := io.ReadAll(s)
		if err != nil || string(out) != text || string(s.Head) != text || s.Encoding != name || !s.Decoded() || s.MayGrow() {
			t.Errorf("%s: encoding %q, head %q, read %q, %v", name, s.Encoding, s.Head, out, err)
		}
	}
	plain := openFile(t, writeFile(t, "plain.json", []byte(text)))
	if plain.Encoding != "" || plain.Decoded() {
		t.Errorf("a UTF-8 file: encoding %q", plain.Encoding)
	}
}
