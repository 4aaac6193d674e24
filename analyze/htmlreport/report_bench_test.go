package htmlreport

import (
	"fmt"
	"testing"
	"time"

	"github.com/kubesift/kubesift/analyze"
	"github.com/kubesift/kubesift/rules"
)

// BenchmarkReport100kEvidenceRows builds and writes the page of a flapping finding with 100,000
// evidence rows (1,000 addresses × 100 state changes) and reports its size.
func BenchmarkReport100kEvidenceRows(b *testing.B) {
	start := time.Date(2026, 11, 21, 5, 0, 0, 0, time.UTC)
	var items []map[string]any
	for i := range 1000 {
		var seq []map[string]any
		for j := range 100 {
			state := []string{"ready", "notReady", "absent"}[(i+j)%3]
			seq = append(seq, map[string]any{"at": start.Add(time.Duration(j*36+i%36) * time.Second), "state": state})
		}
		items = append(items, map[string]any{"ip": fmt.Sprintf("10.1.%d.%d", i/250, i%250), "pod": fmt.Sprintf("web-%d", i), "sequence": seq})
	}
	f := finding(b, "endpoint-flapping", items)
	rs, err := rules.Builtin()
	if err != nil {
		b.Fatal(err)
	}
	var outcomes []analyze.Outcome
	for _, r := range rs {
		outcomes = append(outcomes, analyze.Outcome{Rule: r, Evaluated: true})
	}
	rep := analyze.NewReport(outcomes, []analyze.Finding{f})
	var size int64
	for b.Loop() {
		w := &countingWriter{}
		doc, err := Build(rep, nil, ChartsPerRule)
		if err != nil {
			b.Fatal(err)
		}
		if err := Write(w, doc); err != nil {
			b.Fatal(err)
		}
		size = w.n
	}
	b.ReportMetric(float64(size), "bytes/page")
}

type countingWriter struct{ n int64 }

func (c *countingWriter) Write(p []byte) (int, error) {
	c.n += int64(len(p))
	return len(p), nil
}
