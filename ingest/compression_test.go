package ingest

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/kubesift/kubesift/store"
)

// TestDeclaredCompressionsAreStored: the columns of audit_events whose schema names a compression
// are stored with it in a new database. Left to choose, DuckDB stores a rarely set subresource
// with FSST, which the rules' scans decompress value by value, and bodies that one event in ten
// carries uncompressed (the column's average length, NULLs counted, is under its zstd threshold).
func TestDeclaredCompressionsAreStored(t *testing.T) {
	var log strings.Builder
	body := `{"kind":"Pod","apiVersion":"v1","metadata":{"name":"p","namespace":"ns","labels":{"app":"web","tier":"frontend"}},` +
		`"spec":{"containers":[{"name":"web","image":"registry.example/web:1.2.3","ports":[{"containerPort":8080}]}]}}`
	for i := range 20000 {
		subresource, bodies := "", ""
		if i%50 == 0 {
			subresource = `,"subresource":"status"`
		}
		if i%10 == 0 {
			bodies = `,"requestObject":` + body + `,"responseObject":` + body
		}
		fmt.Fprintf(&log, `{"kind":"Event","apiVersion":"audit.k8s.io/v1","level":"RequestResponse","auditID":"id-%d","stage":"ResponseComplete",`+
			`"requestURI":"/api/v1/namespaces/ns/pods/p%d","verb":"update","user":{"username":"u"},"sourceIPs":["10.0.0.1"],`+
			`"objectRef":{"resource":"pods","namespace":"ns","name":"p%d","apiVersion":"v1"%s},"responseStatus":{"metadata":{},"code":200}%s,`+
			`"requestReceivedTimestamp":"2026-01-01T00:00:00.000000Z","stageTimestamp":"2026-01-01T00:00:00.001000Z"}`+"\n",
			i, i, i, subresource, bodies)
	}
	path := filepath.Join(t.TempDir(), "audit.log")
	if err := os.WriteFile(path, []byte(log.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	db := openTestDB(t)
	ingestFiles(t, db, Options{}, path)
	stored := map[string]string{store.Vocabulary: "DICT_FSST", store.Documents: "ZSTD"}
	table, _ := Schema().Lookup("audit_events")
	declared := map[string][]string{}
	for _, c := range table.Columns {
		if c.Compression != "" {
			if _, ok := stored[c.Compression]; !ok {
				t.Fatalf("column %s: compression %s; this test knows %v", c.Name, c.Compression, stored)
			}
			declared[c.Compression] = append(declared[c.Compression], c.Name)
		}
	}
	for column, compression := range map[string]string{"subresource": store.Vocabulary, "request_object": store.Documents, "response_object": store.Documents} {
		if !slices.Contains(declared[compression], column) {
			t.Errorf("column %s is not declared %s: %v", column, compression, declared)
		}
	}
	for compression, columns := range declared {
		other := queryStrings(t, db, `SELECT DISTINCT column_name || ' ' || compression FROM pragma_storage_info('audit_events')
			WHERE segment_type IN ('VARCHAR', 'JSON') AND list_contains($1, column_name) AND compression <> $2 ORDER BY 1`,
			columns, stored[compression])
		if len(other) > 0 {
			t.Errorf("segments of columns declared %s are not %s: %v", compression, stored[compression], other)
		}
	}
	for _, column := range []string{"subresource", "request_object", "response_object"} {
		if n := queryInt(t, db, `SELECT count(*) FROM pragma_storage_info('audit_events') WHERE column_name = $1 AND segment_type IN ('VARCHAR', 'JSON')`, column); n == 0 {
			t.Errorf("no segment of %s", column)
		}
	}
}
