package conntrack

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func seedLines(f *testing.F) {
	files, _ := filepath.Glob("testdata/real/*/*.txt")
	more, _ := filepath.Glob("testdata/fragments/*.txt")
	files = append(append(files, more...), "testdata/real/events_E_timestamp.txt")
	for _, p := range files {
		if strings.Contains(p, "EXCERPTS") {
			continue
		}
		b, err := os.ReadFile(p)
		if err != nil {
			continue
		}
		lines := strings.Split(string(b), "\n")
		for i, l := range lines {
			if i < 3 || i == len(lines)-2 || strings.Contains(l, "conntrack v") {
				f.Add([]byte(l))
			}
		}
	}
}

// checkInvariants parses in as every line format and checks that nothing
// panics, every record or Bad comes from a line of the input, and that every
// record's Values has the table's width.
func checkInvariants(t *testing.T, in []byte, formats []Format) {
	lines := bytes.Count(in, []byte("\n")) + 1
	for _, f := range formats {
		c := &collect{}
		if err := (Options{}).Parse(bytes.NewReader(in), f, c); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		n := c.records() + len(c.bad)
		if f == FormatSysctl {
			n = len(c.bad)
			for _, l := range c.limits {
				n += len(l.Settings)
			}
		}
		if n > lines+1 { // +1: a spliced trailer line can be both Bad and rejoined
			t.Fatalf("%s: %d records+bad from %d lines", f, n, lines)
		}
		for i := range c.entries {
			e := &c.entries[i]
			if len(e.Values()) != 36 || e.Line < 1 || int(e.Line) > lines {
				t.Fatalf("%s: bad entry %+v", f, e)
			}
			if !e.Orig.Src.IsValid() || !e.Reply.Dst.IsValid() || (e.Family != "ipv4" && e.Family != "ipv6") {
				t.Fatalf("%s: entry without tuple %+v", f, e)
			}
		}
		for i := range c.events {
			if len(c.events[i].Values()) != 38 || c.events[i].Type == "" {
				t.Fatalf("%s: bad event %+v", f, c.events[i])
			}
		}
		for _, b := range c.bad {
			if b.Reason == "" || b.Line < 1 || b.Line > lines {
				t.Fatalf("%s: bad Bad %+v", f, b)
			}
		}
		for i := range c.stats {
			_ = c.stats[i].Values()
		}
		for i := range c.limits {
			_ = c.limits[i].Values()
		}
		for i := range c.kernel {
			_ = c.kernel[i].Values()
		}
	}
}

func FuzzParseLine(f *testing.F) {
	seedLines(f)
	all := []Format{FormatList, FormatSave, FormatStats, FormatProcStat, FormatCount, FormatSysctl, FormatKernelLog}
	f.Fuzz(func(t *testing.T, in []byte) {
		DetectFormat(in)
		checkInvariants(t, in, all)
	})
}

func FuzzParseXML(f *testing.F) {
	for _, p := range []string{"testdata/fragments/conntrack-xml__misc.good.xml", "testdata/fragments/conntrack-xml__misc.bad.xml"} {
		b, _ := os.ReadFile(p)
		f.Add(b)
	}
	f.Add([]byte("<conntrack><flow><meta direction=\"original\"><layer3 protonum=\"2\" protoname=\"ipv4\"><src>1.1.1.1</src><dst>1.1.1.2</dst></layer3><layer4 protonum=\"1\" protoname=\"icmp\"><type>8</type><code>0</code><id>1</id></layer4></meta></flow></conntrack>"))
	f.Fuzz(func(t *testing.T, in []byte) {
		c := &collect{}
		done := make(chan error, 1)
		go func() { done <- (Options{}).Parse(bytes.NewReader(in), FormatXML, c) }()
		select {
		case err := <-done:
			if err != nil {
				t.Fatalf("%v", err)
			}
		case <-time.After(5 * time.Second):
			t.Fatalf("Parse did not return within 5s")
		}
		for i := range c.entries {
			if len(c.entries[i].Values()) != 36 {
				t.Fatal("width")
			}
		}
	})
}
