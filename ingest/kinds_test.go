package ingest

import (
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// TestLoadersCoverTheEvidenceTables: the schema holds every loader's tables and kubesift's own,
// and each loader's kind is its own and detects its committed samples.
func TestLoadersCoverTheEvidenceTables(t *testing.T) {
	schema := Schema()
	var kinds []string
	for _, l := range loaders {
		if slices.Contains(kinds, l.Kind()) {
			t.Errorf("kind %s registered twice", l.Kind())
		}
		kinds = append(kinds, l.Kind())
		for _, tb := range l.Tables() {
			if tb.Evidence == "" {
				t.Errorf("%s: table %s names no evidence", l.Kind(), tb.Name)
			}
			if _, ok := schema.Lookup(tb.Name); !ok {
				t.Errorf("%s: table %s is not in the schema", l.Kind(), tb.Name)
			}
		}
	}
	for _, name := range []string{"audit_events", "conntrack_entries", "endpoint_addresses", "ingest_errors", "ingest_files", "runs"} {
		if _, ok := schema.Lookup(name); !ok {
			t.Errorf("the schema lacks %s", name)
		}
	}
	if _, err := ParseKind("no-such-kind"); err == nil || !strings.Contains(err.Error(), "auto, audit, endpoints, conntrack") {
		t.Errorf("ParseKind(no-such-kind) = %v, want the kinds listed", err)
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

var aliasedColumn = regexp.MustCompile(`%\[1\]s\.(\w+)`)

// TestTableMetadata checks that every evidence table says when its rows were observed and how a
// row is told from a duplicate (but for one derived from another table's rows, which are told
// apart already), with columns the table has, and that a split of its dataset files (store.FileSplit) names a
// column and values that can name files.
func TestTableMetadata(t *testing.T) {
	for _, tb := range Schema() {
		cols := tb.ColumnNames()
		if tb.TimeColumn != "" && !slices.Contains(cols, tb.TimeColumn) {
			t.Errorf("%s: time column %s is not a column", tb.Name, tb.TimeColumn)
		}
		if tb.Evidence == "" {
			continue
		}
		if tb.TimeColumn == "" || (len(tb.DedupeKey) == 0 && tb.Derive == "") {
			t.Errorf("%s holds %s evidence but has no time column or no dedupe key", tb.Name, tb.Evidence)
		}
		for _, k := range tb.DedupeKey {
			name := k
			if m := aliasedColumn.FindStringSubmatch(k); m != nil {
				name = m[1]
			}
			if !slices.Contains(cols, name) {
				t.Errorf("%s: dedupe key item %q names no column", tb.Name, k)
			}
		}
		if split := tb.DatasetFiles; split != nil {
			if !slices.Contains(cols, split.Column) || tb.Derive != "" {
				t.Errorf("%s: dataset files split by %q, not a column of a table the dataset holds", tb.Name, split.Column)
			}
			for i, v := range split.Values {
				if !fileNamePart.MatchString(v) || slices.Contains(split.Values[:i], v) {
					t.Errorf("%s: dataset files split by value %q: want distinct lowercase words (they name files)", tb.Name, v)
				}
			}
		}
	}
}

var fileNamePart = regexp.MustCompile(`^[a-z]+$`)
