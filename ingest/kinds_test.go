package ingest

import (
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/kubesift/kubesift/store"
)

// TestLoadersCoverTheEvidenceTables: every table that holds evidence is written by a loader, and
// each loader's kind is its own and detects its committed samples.
func TestLoadersCoverTheEvidenceTables(t *testing.T) {
	declared := map[string]bool{}
	var kinds []string
	for _, l := range loaders {
		if slices.Contains(kinds, l.Kind()) {
			t.Errorf("kind %s registered twice", l.Kind())
		}
		kinds = append(kinds, l.Kind())
		for _, tb := range l.Tables() {
			declared[tb.Name] = true
		}
	}
	for _, tb := range store.Tables {
		if tb.Evidence != "" && !declared[tb.Name] {
			t.Errorf("no loader declares %s", tb.Name)
		}
	}
	if _, err := ParseKind("pcap"); err == nil || !strings.Contains(err.Error(), "auto, audit, endpoints, conntrack") {
		t.Errorf("ParseKind(pcap) = %v, want the kinds listed", err)
	}
	for path, want := range map[string]Kind{
		"testdata/audit-v1.good.log":          "audit",
		"testdata/eventlist-pretty.good.json": "audit",
		"testdata/eventlist.good.ndjson":      "audit",
		"testdata/prefixed.good.log":          "audit",
		"../samples/flapping/snapshots":       "endpoints",
		"../samples/healthy/conntrack/lab-node-1/2026-11-21T06:01:30Z/conntrack_L.txt": "conntrack",
		"../samples/healthy/conntrack/lab-node-1/2026-11-21T06:01:30Z/dmesg.txt":       "conntrack",
	} {
		inputs, err := ExpandPaths([]string{path})
		if err != nil || len(inputs) == 0 {
			t.Fatalf("%s: %v", path, err)
		}
		head, err := os.ReadFile(inputs[0].Path)
		if err != nil {
			t.Fatal(err)
		}
		if got, ok := DetectKind(inputs[0].Path, head[:min(len(head), 64<<10)]); !ok || got != want {
			t.Errorf("DetectKind(%s) = %q, %v; want %s", inputs[0].Path, got, ok, want)
		}
	}
}
