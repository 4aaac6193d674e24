package audit

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"testing"

	"github.com/kubesift/kubesift/internal/load"
	"github.com/kubesift/kubesift/internal/source"
)

// writeEventLines writes a log of about size bytes: audit events, with a line that is not JSON
// every 10,000 lines. It returns the path and the number of lines.
func writeEventLines(t *testing.T, size int) (string, int) {
	t.Helper()
	var b strings.Builder
	lines := 0
	for b.Len() < size {
		lines++
		if lines%10000 == 0 {
			fmt.Fprintf(&b, "not an event %d\n", lines)
			continue
		}
		fmt.Fprintf(&b, `{"kind":"Event","apiVersion":"audit.k8s.io/v1","level":"Metadata","auditID":"id-%d","stage":"ResponseComplete",`+
			`"requestURI":"/api/v1/namespaces/ns/pods?watch=true&resourceVersion=%d","verb":"watch","user":{"username":"u"},`+
			`"objectRef":{"resource":"pods","namespace":"ns"},"stageTimestamp":"2026-11-27T00:00:00Z"}`+"\n", lines, lines)
	}
	path := filepath.Join(t.TempDir(), "audit.log")
	if err := os.WriteFile(path, []byte(b.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	return path, lines
}

func openLines(t *testing.T, path string) *load.File {
	t.Helper()
	src, err := source.Open(context.Background(), path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { src.Close() })
	return &load.File{Src: src, Settings: load.Settings{MaxLineBytes: source.DefaultMaxLineBytes}}
}

// TestDecodeLinesKeepsTheFileOrder: the chunks are cut into batches side by side, yet the
// batches and the rejected lines come out in the file's order, every line once.
func TestDecodeLinesKeepsTheFileOrder(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(4)) // chunks cut side by side on any machine
	path, lines := writeEventLines(t, 8*source.ChunkBytes)
	f := openLines(t, path)
	var rows []int64
	out := &events{tail: -1, send: func(b *batch) bool {
		for i := range b.rows() {
			rows = append(rows, b.line.Value(i))
		}
		return true
	}}
	if err := decodeLines(f, out, false); err != nil {
		t.Fatal(err)
	}
	for i := 1; i < len(rows); i++ {
		if rows[i] <= rows[i-1] {
			t.Fatalf("row %d is line %d after line %d: out of the file's order", i, rows[i], rows[i-1])
		}
	}
	for i := 1; i < len(out.rejects); i++ {
		if out.rejects[i].Line <= out.rejects[i-1].Line {
			t.Fatalf("rejected line %d after line %d: out of the file's order", out.rejects[i].Line, out.rejects[i-1].Line)
		}
	}
	if len(rows)+len(out.rejects) != lines || len(out.rejects) != lines/10000 || f.Lines != int64(lines) {
		t.Errorf("%d rows and %d rejects of %d lines (f.Lines %d), want every line once and every 10,000th rejected",
			len(rows), len(out.rejects), lines, f.Lines)
	}
}

// TestDecodeLinesStopsWithTheLoad: when DuckDB stops taking batches (a failed load), reading
// stops within a few chunks (those in line, two per CPU, the one handed on, and one more)
// instead of going through the rest of the file.
func TestDecodeLinesStopsWithTheLoad(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(2)) // two workers, whatever the machine
	path, _ := writeEventLines(t, 16*source.ChunkBytes)
	f := openLines(t, path)
	sent := 0
	out := &events{tail: -1, send: func(*batch) bool { sent++; return false }}
	if err := decodeLines(f, out, false); err != nil {
		t.Fatal(err)
	}
	info, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	limit := int64(2*runtime.GOMAXPROCS(0)+4) * source.ChunkBytes
	if read := f.Src.DiskBytesRead(); sent != 1 || read > limit {
		t.Errorf("%d batches sent, %d of %d bytes read; want 1 sent and at most %d read", sent, read, info.Size(), limit)
	}
}

// TestDocumentsStopWithTheLoad: the documents of a cloud envelope or an EventList file stop being
// read, as JSON lines do, when DuckDB stops taking batches: within a few runs of about a chunk
// instead of the rest of the file.
func TestDocumentsStopWithTheLoad(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(2)) // two workers, whatever the machine
	path, _ := writeEventLines(t, 12*source.ChunkBytes)
	text, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	// the lines that are not events would end the documents' decoding by themselves
	text = regexp.MustCompile(`(?m)^not an event.*\n`).ReplaceAll(text, nil)
	if err := os.WriteFile(path, text, 0o600); err != nil {
		t.Fatal(err)
	}
	f := openLines(t, path)
	sent := 0
	out := &events{tail: -1, send: func(*batch) bool { sent++; return false }}
	if err := (documents{}).decode(f, out); err != nil {
		t.Fatal(err)
	}
	limit := int64(2*runtime.GOMAXPROCS(0)+4) * source.ChunkBytes
	if read := f.Src.DiskBytesRead(); sent != 1 || read > limit {
		t.Errorf("%d batches sent, %d of %d bytes read; want 1 sent and at most %d read", sent, read, len(text), limit)
	}
	if len(out.rejects) != 0 {
		t.Errorf("rejects %v, want none", out.rejects)
	}
}
