package ingest

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestVocabularyColumnsAreDictionaries: the columns of audit_events whose schema names a
// compression are stored with it, where DuckDB left to choose stores a rarely set subresource
// with FSST, which the rules' scans decompress value by value.
func TestVocabularyColumnsAreDictionaries(t *testing.T) {
	var log strings.Builder
	for i := range 20000 {
		subresource := ""
		if i%50 == 0 {
			subresource = `,"subresource":"status"`
		}
		fmt.Fprintf(&log, `{"kind":"Event","apiVersion":"audit.k8s.io/v1","level":"Metadata","auditID":"id-%d","stage":"ResponseComplete",`+
			`"requestURI":"/api/v1/namespaces/ns/pods/p%d","verb":"update","user":{"username":"u"},"sourceIPs":["10.0.0.1"],`+
			`"objectRef":{"resource":"pods","namespace":"ns","name":"p%d","apiVersion":"v1"%s},"responseStatus":{"metadata":{},"code":200},`+
			`"requestReceivedTimestamp":"2026-01-01T00:00:00.000000Z","stageTimestamp":"2026-01-01T00:00:00.001000Z"}`+"\n",
			i, i, i, subresource)
	}
	path := filepath.Join(t.TempDir(), "audit.log")
	if err := os.WriteFile(path, []byte(log.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	db := openTestDB(t)
	ingestFiles(t, db, Options{}, path)
	table, _ := Schema().Lookup("audit_events")
	var forced []string
	for _, c := range table.Columns {
		if c.Compression != "" {
			forced = append(forced, c.Name)
			if c.Compression != "dictionary" {
				t.Fatalf("column %s: compression %s; this test knows dictionary", c.Name, c.Compression)
			}
		}
	}
	if !slices.Contains(forced, "subresource") {
		t.Fatalf("columns with a compression: %v", forced)
	}
	stored := queryStrings(t, db, `SELECT DISTINCT column_name || ' ' || compression FROM pragma_storage_info('audit_events')
		WHERE segment_type = 'VARCHAR' AND list_contains($1, column_name) AND compression <> 'Dictionary' ORDER BY 1`, forced)
	if len(stored) > 0 {
		t.Errorf("segments of columns stored as dictionaries are not: %v", stored)
	}
	if n := queryInt(t, db, `SELECT count(*) FROM pragma_storage_info('audit_events') WHERE column_name = 'subresource' AND segment_type = 'VARCHAR'`); n == 0 {
		t.Error("no segment of subresource")
	}
}
