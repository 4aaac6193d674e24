package ingest

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/klauspost/compress/gzip"

	"github.com/kubesift/kubesift/store"
)

func openTestDB(t *testing.T) *store.DB {
	t.Helper()
	db, err := store.Open(context.Background(), filepath.Join(t.TempDir(), "test.duckdb"), Schema(), store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

func ingestFiles(t *testing.T, db *store.DB, opt Options, paths ...string) []FileResult {
	t.Helper()
	inputs, err := ExpandPaths(paths)
	if err != nil {
		t.Fatal(err)
	}
	res, err := New(db, opt).Ingest(context.Background(), inputs)
	if err != nil {
		t.Fatalf("ingest %v: %v", paths, err)
	}
	return res
}

func queryInt(t *testing.T, db *store.DB, q string, args ...any) int64 {
	t.Helper()
	var n int64
	if err := db.QueryRow(q, args...).Scan(&n); err != nil {
		t.Fatalf("%s: %v", q, err)
	}
	return n
}

func queryStrings(t *testing.T, db *store.DB, q string, args ...any) []string {
	t.Helper()
	rows, err := db.Query(q, args...)
	if err != nil {
		t.Fatalf("%s: %v", q, err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var s string
		if err := rows.Scan(&s); err != nil {
			t.Fatal(err)
		}
		out = append(out, s)
	}
	return out
}

func writeGzip(t *testing.T, path string, members ...[]byte) {
	t.Helper()
	var buf bytes.Buffer
	for _, m := range members {
		zw := gzip.NewWriter(&buf)
		zw.Write(m)
		zw.Close()
	}
	if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
}

func readFile(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestAuditInputVariants loads every input shape real clusters produce and checks that each
// event becomes exactly one row with its line number.
func TestAuditInputVariants(t *testing.T) {
	dir := t.TempDir()
	v1 := readFile(t, "testdata/audit-v1.good.log")
	half := bytes.Index(v1[1:], []byte("\n{")) + 2 // split after the first line
	writeGzip(t, filepath.Join(dir, "audit-2026-11-20T10-00-00.000.log.gz"), v1)
	writeGzip(t, filepath.Join(dir, "multi-member.log.gz"), v1[:half], v1[half:])
	noNewline := filepath.Join(dir, "no-trailing-newline.log")
	os.WriteFile(noNewline, bytes.TrimRight(v1, "\n"), 0o644)
	crlf := filepath.Join(dir, "crlf.log")
	os.WriteFile(crlf, bytes.ReplaceAll(v1, []byte("\n"), []byte("\r\n")), 0o644)

	tests := []struct {
		path      string
		rows      int64
		lines     []int64 // expected source_line values, sorted
		apiVer    string
		receivedN int64 // rows with received_at
	}{
		{"testdata/audit-v1.good.log", 6, []int64{1, 2, 3, 4, 5, 6}, "audit.k8s.io/v1", 6},
		{"testdata/audit-v1beta1.good.log", 4, []int64{1, 2, 3, 4}, "audit.k8s.io/v1beta1", 4},
		{"testdata/eventlist.good.ndjson", 6, []int64{1, 1, 1, 2, 2, 2}, "audit.k8s.io/v1", 6},
		{"testdata/eventlist-pretty.good.json", 5, nil, "audit.k8s.io/v1", 5},
		{"testdata/prefixed.good.log", 6, []int64{1, 2, 3, 4, 5, 6}, "audit.k8s.io/v1", 6},
		{filepath.Join(dir, "audit-2026-11-20T10-00-00.000.log.gz"), 6, []int64{1, 2, 3, 4, 5, 6}, "audit.k8s.io/v1", 6},
		{filepath.Join(dir, "multi-member.log.gz"), 6, []int64{1, 2, 3, 4, 5, 6}, "audit.k8s.io/v1", 6},
		{noNewline, 6, []int64{1, 2, 3, 4, 5, 6}, "audit.k8s.io/v1", 6},
		{crlf, 6, []int64{1, 2, 3, 4, 5, 6}, "audit.k8s.io/v1", 6},
	}
	for _, tt := range tests {
		t.Run(filepath.Base(tt.path), func(t *testing.T) {
			db := openTestDB(t)
			res := ingestFiles(t, db, Options{}, tt.path)
			if len(res) != 1 || res[0].Kind != "audit" || res[0].Rows != tt.rows || res[0].Rejected != 0 {
				t.Fatalf("result %+v, want %d rows, 0 rejected", res, tt.rows)
			}
			if n := queryInt(t, db, "SELECT count(*) FROM audit_events"); n != tt.rows {
				t.Fatalf("%d rows in audit_events, want %d", n, tt.rows)
			}
			if n := queryInt(t, db, "SELECT count(*) FROM audit_events WHERE audit_api_version = $1 AND audit_id IS NOT NULL AND stage IS NOT NULL AND verb IS NOT NULL AND username IS NOT NULL", tt.apiVer); n != tt.rows {
				t.Errorf("%d rows with %s and identity fields, want %d", n, tt.apiVer, tt.rows)
			}
			if n := queryInt(t, db, "SELECT count(received_at) FROM audit_events"); n != tt.receivedN {
				t.Errorf("%d rows with received_at, want %d", n, tt.receivedN)
			}
			if tt.lines != nil {
				if got := queryInts(t, db, "SELECT source_line FROM audit_events ORDER BY source_line"); !slices.Equal(got, tt.lines) {
					t.Errorf("source lines %v, want %v", got, tt.lines)
				}
			}
		})
	}
}

func queryInts(t *testing.T, db *store.DB, q string, args ...any) []int64 {
	t.Helper()
	rows, err := db.Query(q, args...)
	if err != nil {
		t.Fatalf("%s: %v", q, err)
	}
	defer rows.Close()
	var out []int64
	for rows.Next() {
		var n int64
		if err := rows.Scan(&n); err != nil {
			t.Fatal(err)
		}
		out = append(out, n)
	}
	return out
}

// lastProgress keeps what a progress display was last told.
type lastProgress struct {
	name         string
	bytes, lines int64
}

func (p *lastProgress) Begin(name string, _ int64)    { p.name = name }
func (p *lastProgress) Update(diskBytes, lines int64) { p.bytes, p.lines = diskBytes, lines }
func (p *lastProgress) End()                          {}

// TestProgressCountsTheLines: a progress display is last told every line and byte of the file.
func TestProgressCountsTheLines(t *testing.T) {
	path := "testdata/audit-v1.good.log"
	text := readFile(t, path)
	var p lastProgress
	res := ingestFiles(t, openTestDB(t), Options{Progress: &p}, path)
	if p.name != path || p.lines != int64(bytes.Count(text, []byte("\n"))) || p.bytes != int64(len(text)) {
		t.Errorf("progress of %s: %+v, want %d lines and %d bytes", path, p, bytes.Count(text, []byte("\n")), len(text))
	}
	if res[0].Rows == 0 {
		t.Errorf("result %+v, want its events loaded", res[0])
	}
}
