package conntrack

import (
	"bytes"
	"fmt"
	"os"
	"strings"
	"testing"
)

type countHandler struct{ n, bad int }

func (c *countHandler) Entry(*Entry) error             { c.n++; return nil }
func (c *countHandler) Event(*Event) error             { c.n++; return nil }
func (c *countHandler) Stat(*Stat) error               { c.n++; return nil }
func (c *countHandler) Limits(*Limits) error           { c.n++; return nil }
func (c *countHandler) KernelEvent(*KernelEvent) error { c.n++; return nil }
func (c *countHandler) Bad(int, int64, string, string) { c.bad++ }

// gen1M builds a 1,000,000-line conntrack -L dump from the real lines of the
// captures (default and accounting+timestamp), varying the ports.
func gen1M(b *testing.B) []byte {
	var templates []string
	for _, p := range []string{real + "default/conntrack_L.txt", real + "acct_timestamp/conntrack_L_ktimestamp.txt", real + "default/conntrack_L_id.txt"} {
		raw, err := os.ReadFile(p)
		if err != nil {
			b.Fatal(err)
		}
		lines := strings.Split(string(raw), "\n")
		for i := 0; i < len(lines) && i < 40; i += 7 {
			templates = append(templates, lines[i])
		}
	}
	var buf bytes.Buffer
	buf.Grow(1_000_000 * 200)
	for i := 0; i < 1_000_000; i++ {
		t := templates[i%len(templates)]
		// vary the client port of the original tuple
		j := strings.Index(t, "sport=") + len("sport=")
		k := j + strings.IndexByte(t[j:], ' ')
		buf.WriteString(t[:j])
		fmt.Fprint(&buf, 1024+i%60000)
		buf.WriteString(t[k:])
		buf.WriteByte('\n')
	}
	buf.WriteString("conntrack v1.4.7 (conntrack-tools): 1000000 flow entries have been shown.\n")
	return buf.Bytes()
}

func BenchmarkParse1M(b *testing.B) {
	data := gen1M(b)
	b.SetBytes(int64(len(data)))
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		h := &countHandler{}
		if err := (Options{}).Parse(bytes.NewReader(data), FormatList, h); err != nil {
			b.Fatal(err)
		}
		if h.n != 1_000_000 || h.bad != 0 {
			b.Fatalf("entries %d bad %d", h.n, h.bad)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/1e6, "ns/entry")
}
