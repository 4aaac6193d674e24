package conntrack

import (
	"fmt"
	"os"
	"testing"
)

type bad struct {
	Line   int
	Off    int64
	Reason string
	Text   string
}

type collect struct {
	entries []Entry
	events  []Event
	stats   []Stat
	limits  []Limits
	kernel  []KernelEvent
	bad     []bad
	skipped int
}

func (c *collect) Entry(e *Entry) error             { c.entries = append(c.entries, *e); return nil }
func (c *collect) Event(e *Event) error             { c.events = append(c.events, *e); return nil }
func (c *collect) Stat(s *Stat) error               { c.stats = append(c.stats, *s); return nil }
func (c *collect) Limits(l *Limits) error           { c.limits = append(c.limits, *l); return nil }
func (c *collect) KernelEvent(k *KernelEvent) error { c.kernel = append(c.kernel, *k); return nil }
func (c *collect) Skipped(line int, reason string)  { c.skipped++ }
func (c *collect) Bad(line int, off int64, reason, text string) {
	c.bad = append(c.bad, bad{line, off, reason, text})
}

func (c *collect) records() int {
	return len(c.entries) + len(c.events) + len(c.stats) + len(c.limits) + len(c.kernel)
}

func parseFile(t testing.TB, path string, f Format) *collect {
	t.Helper()
	fh, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer fh.Close()
	c := &collect{}
	if f == FormatUnknown {
		head := make([]byte, 8192)
		n, _ := fh.Read(head)
		var ok bool
		f, ok = DetectFormat(head[:n])
		if !ok {
			t.Fatalf("%s: format not detected", path)
		}
		if _, err := fh.Seek(0, 0); err != nil {
			t.Fatal(err)
		}
	}
	if err := (Options{}).Parse(fh, f, c); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return c
}

func (b bad) String() string { return fmt.Sprintf("line %d: %s: %q", b.Line, b.Reason, b.Text) }
