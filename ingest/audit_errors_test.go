package ingest

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestRejectedLineAccounting: N good and M bad lines in give N rows and M ingest_errors, each
// naming its line, and the good lines around the bad ones are kept.
func TestRejectedLineAccounting(t *testing.T) {
	db := openTestDB(t)
	var log bytes.Buffer
	res := ingestFiles(t, db, Options{Log: &log}, "testdata/mixed.bad.log")
	if res[0].Rows != 10 || res[0].Rejected != 6 || res[0].Lines != 18 {
		t.Fatalf("result %+v, want 10 rows, 6 rejected of 18 lines", res[0])
	}
	if n := queryInt(t, db, "SELECT count(*) FROM audit_events"); n != 10 {
		t.Errorf("%d rows, want 10", n)
	}
	if got := queryInts(t, db, "SELECT source_line FROM audit_events ORDER BY 1"); !slices.Equal(got, []int64{1, 2, 4, 7, 9, 11, 13, 14, 16, 18}) {
		t.Errorf("kept lines %v", got)
	}
	wantReasons := map[int64]string{
		3:  "unexpected end of JSON",
		6:  "no JSON object on the line",
		10: `not an audit event (kind "Event", apiVersion "v1")`,
		12: `not an audit event (kind "", apiVersion "")`,
		15: "audit event without auditID",
		17: "invalid JSON at byte",
	}
	rows, err := db.Query("SELECT line, byte_offset, reason, excerpt, source_file FROM ingest_errors ORDER BY line")
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	content := readFile(t, "testdata/mixed.bad.log")
	lineStarts := []int64{0}
	for i, c := range content {
		if c == '\n' {
			lineStarts = append(lineStarts, int64(i+1))
		}
	}
	seen := 0
	for rows.Next() {
		var line, offset int64
		var reason, excerpt, file string
		if err := rows.Scan(&line, &offset, &reason, &excerpt, &file); err != nil {
			t.Fatal(err)
		}
		seen++
		want, ok := wantReasons[line]
		if !ok || !strings.Contains(reason, want) {
			t.Errorf("line %d rejected with %q, want %q", line, reason, want)
		}
		if offset != lineStarts[line-1] {
			t.Errorf("line %d: byte_offset %d, want %d", line, offset, lineStarts[line-1])
		}
		if file != "testdata/mixed.bad.log" || excerpt == "" {
			t.Errorf("line %d: file %q excerpt %q", line, file, excerpt)
		}
	}
	if seen != 6 {
		t.Errorf("%d ingest_errors rows, want 6", seen)
	}
	if !strings.Contains(log.String(), "mixed.bad.log: 6 lines rejected, first at line 3: unexpected end of JSON") {
		t.Errorf("summary %q does not name the first rejected line", log.String())
	}
}

// TestCorruptGzipMemberIsSkipped: a damaged middle gzip member costs its own events only: the
// members after it load, the damaged compressed byte range is one row in ingest_errors, and a
// second load of the file adds nothing (a compressed file never grows).
func TestCorruptGzipMemberIsSkipped(t *testing.T) {
	path := "testdata/corrupt-middle-member.bad.log.gz" // three members of two events, the second damaged
	db := openTestDB(t)
	var log bytes.Buffer
	res := ingestFiles(t, db, Options{Log: &log}, path)
	if res[0].Rows != 4 || res[0].Rejected != 1 || res[0].Note != "" {
		t.Fatalf("result %+v: want the 4 events of the first and last members, and the damage rejected", res[0])
	}
	got := queryStrings(t, db, "SELECT line || ' ' || byte_offset || ' ' || reason FROM ingest_errors")
	if len(got) != 1 || !strings.HasPrefix(got[0], "3 1766 corrupt gzip at byte 637: ") || !strings.HasSuffix(got[0], "(the lines before line 3 were read; reading went on at byte 1300)") {
		t.Errorf("ingest_errors %q, want line 3 (offset 1766, after the first member) with the damaged range 637 to 1300", got)
	}
	if ids := queryStrings(t, db, "SELECT source_line FROM audit_events ORDER BY 1"); strings.Join(ids, " ") != "1 2 3 4" {
		t.Errorf("lines loaded %v, want 1 2 3 4 (the last member's events follow the damage)", ids)
	}
	res = ingestFiles(t, db, Options{}, path)
	if res[0].Rows != 0 || res[0].Rejected != 0 || res[0].Skipped != "no new data since the last load" {
		t.Errorf("second load %+v, want nothing new", res[0])
	}
	if n := queryInt(t, db, "SELECT count(*) FROM ingest_errors"); n != 1 {
		t.Errorf("%d ingest_errors rows after the second load, want 1", n)
	}
}

// TestGzipHeaderThenGarbage: a gzip header followed by random bytes is a corrupt file, named
// with the byte where the damage starts, not an empty one.
func TestGzipHeaderThenGarbage(t *testing.T) {
	db := openTestDB(t)
	inputs, err := ExpandPaths([]string{"testdata/gzip-header-garbage.bad.log.gz"})
	if err != nil {
		t.Fatal(err)
	}
	_, err = New(db, Options{}).Ingest(context.Background(), inputs)
	if err == nil || !strings.Contains(err.Error(), "gzip-header-garbage.bad.log.gz: corrupt gzip at byte 0") {
		t.Errorf("error %v, want corrupt gzip at byte 0", err)
	}
}

// TestCompressedFormats: bzip2, xz and zstd files load like gzip ones.
func TestCompressedFormats(t *testing.T) {
	for _, ext := range []string{"bz2", "xz", "zst"} {
		db := openTestDB(t)
		res := ingestFiles(t, db, Options{}, "testdata/audit-v1.good.log."+ext)
		if len(res) != 1 || res[0].Rows != 6 || res[0].Rejected != 0 || res[0].Kind != "audit" {
			t.Errorf("%s: %+v, want 6 events", ext, res)
		}
	}
}

// TestNoDuplicates: the same file twice, the same content under another name, rotated files
// that overlap, and a file that holds events twice add each event once.
func TestNoDuplicates(t *testing.T) {
	src := readFile(t, "../samples/real-lab/audit.log")
	dir := t.TempDir()
	lines := bytes.SplitAfter(src, []byte("\n"))
	lines = lines[:len(lines)-1]
	older := filepath.Join(dir, "audit-2026-11-21T05-31-30.000.log")
	current := filepath.Join(dir, "audit.log")
	os.WriteFile(older, bytes.Join(lines[:700], nil), 0o644)
	os.WriteFile(current, bytes.Join(lines[500:], nil), 0o644) // 200 lines overlap
	copyPath := filepath.Join(dir, "copy-of-audit.log")
	os.WriteFile(copyPath, bytes.Join(lines[500:], nil), 0o644)
	dupInside := filepath.Join(dir, "concatenated.log")
	os.WriteFile(dupInside, append(bytes.Join(lines[:50], nil), bytes.Join(lines[:60], nil)...), 0o644)

	db := openTestDB(t)
	res := ingestFiles(t, db, Options{}, older, current, older, copyPath, dupInside)
	if n := queryInt(t, db, "SELECT count(*) FROM audit_events"); n != int64(len(lines)) {
		t.Fatalf("%d rows, want %d (one per event)", n, len(lines))
	}
	if n := queryInt(t, db, "SELECT count(*) FROM (SELECT audit_id, stage FROM audit_events GROUP BY ALL HAVING count(*) > 1)"); n != 0 {
		t.Errorf("%d duplicated keys", n)
	}
	if res[1].Duplicates != 200 || res[1].Rows != int64(len(lines)-700) {
		t.Errorf("overlapping file: %+v, want 200 duplicates", res[1])
	}
	if res[2].Skipped == "" || res[3].Skipped == "" {
		t.Errorf("a file loaded before was not skipped: %+v / %+v", res[2], res[3])
	}
	if res[4].Rows != 0 || res[4].Duplicates != 110 {
		t.Errorf("concatenated copies: %+v, want 0 rows and 110 duplicates", res[4])
	}

	// the same copies as the first load of a database: the second copy of each event is a
	// duplicate inside the load, not of an earlier one
	first := openTestDB(t)
	res = ingestFiles(t, first, Options{}, dupInside)
	if res[0].Rows != 60 || res[0].Duplicates != 50 {
		t.Errorf("concatenated copies as the first load: %+v, want 60 rows and 50 duplicates", res[0])
	}
	if n := queryInt(t, first, "SELECT count(*) FROM (SELECT audit_id, stage FROM audit_events GROUP BY ALL HAVING count(*) > 1)"); n != 0 {
		t.Errorf("concatenated copies as the first load: %d duplicated keys", n)
	}
	if n := queryInt(t, first, "SELECT count(*) FROM audit_events WHERE source_line > 50"); n != 10 {
		t.Errorf("concatenated copies as the first load: %d rows from the second copy, want its last 10 (the first copy of each is kept)", n)
	}
}

// TestVeryLargeEvents: a 12 MB event is kept whole; a line over --max-line-bytes is rejected
// with a reason and the lines after it still load.
func TestVeryLargeEvents(t *testing.T) {
	v1 := readFile(t, "testdata/audit-v1.good.log")
	lines := bytes.SplitAfter(v1, []byte("\n"))
	big := fmt.Sprintf(`{"kind":"Event","apiVersion":"audit.k8s.io/v1","level":"RequestResponse","auditID":"big-1","stage":"ResponseComplete","requestURI":"/api/v1/namespaces/lab/configmaps/huge","verb":"update","user":{"username":"admin"},"requestObject":{"kind":"ConfigMap","data":{"blob":"%s"}},"requestReceivedTimestamp":"2026-11-21T05:31:08.312540Z","stageTimestamp":"2026-11-21T05:31:08.412540Z"}`+"\n", strings.Repeat("x", 12<<20))
	path := filepath.Join(t.TempDir(), "audit.log")
	os.WriteFile(path, slices.Concat(lines[0], []byte(big), lines[1], lines[2]), 0o644)

	db := openTestDB(t)
	res := ingestFiles(t, db, Options{}, path)
	if res[0].Rows != 4 || res[0].Rejected != 0 {
		t.Fatalf("result %+v, want 4 rows", res[0])
	}
	if n := queryInt(t, db, "SELECT strlen(request_object->>'$.data.blob') FROM audit_events WHERE audit_id = 'big-1'"); n != 12<<20 {
		t.Errorf("big body has %d bytes, want %d", n, 12<<20)
	}

	db2 := openTestDB(t)
	res = ingestFiles(t, db2, Options{MaxLineBytes: 1 << 20}, path)
	if res[0].Rows != 3 || res[0].Rejected != 1 || !strings.Contains(res[0].FirstError, "line 2: line is 12583") {
		t.Fatalf("result %+v, want 3 rows and line 2 rejected as too long", res[0])
	}
	if got := queryInts(t, db2, "SELECT source_line FROM audit_events ORDER BY 1"); !slices.Equal(got, []int64{1, 3, 4}) {
		t.Errorf("kept lines %v, want [1 3 4]", got)
	}
}

// TestSecretBodiesRedacted: bodies of Secrets and token requests never reach the database
// unless asked for.
func TestSecretBodiesRedacted(t *testing.T) {
	ev := func(id, resource, sub string) string {
		return fmt.Sprintf(`{"kind":"Event","apiVersion":"audit.k8s.io/v1","level":"RequestResponse","auditID":"%s","stage":"ResponseComplete","requestURI":"/api/v1/namespaces/lab/%s/x","verb":"create","user":{"username":"admin"},"objectRef":{"resource":"%s","subresource":"%s","namespace":"lab","name":"x"},"requestObject":{"data":{"password":"aHVudGVyMg=="}},"responseObject":{"status":{"token":"eyJhbGciOi"}},"requestReceivedTimestamp":"2026-11-21T05:31:08Z","stageTimestamp":"2026-11-21T05:31:08Z"}`, id, resource, resource, sub)
	}
	content := strings.Join([]string{ev("s", "secrets", ""), ev("t", "serviceaccounts", "token"), ev("r", "tokenreviews", ""), ev("c", "configmaps", "")}, "\n") + "\n"
	path := filepath.Join(t.TempDir(), "audit.log")
	os.WriteFile(path, []byte(content), 0o644)

	db := openTestDB(t)
	ingestFiles(t, db, Options{}, path)
	if got := queryStrings(t, db, "SELECT audit_id FROM audit_events WHERE redacted AND request_object IS NULL AND response_object IS NULL ORDER BY 1"); !slices.Equal(got, []string{"r", "s", "t"}) {
		t.Errorf("redacted events %v, want [r s t]", got)
	}
	if n := queryInt(t, db, "SELECT count(*) FROM audit_events WHERE audit_id = 'c' AND NOT redacted AND request_object IS NOT NULL"); n != 1 {
		t.Error("a ConfigMap body was redacted")
	}
	db2 := openTestDB(t)
	ingestFiles(t, db2, Options{KeepSecrets: true}, path)
	if n := queryInt(t, db2, "SELECT count(request_object) FROM audit_events WHERE NOT redacted"); n != 4 {
		t.Errorf("--keep-secrets kept %d bodies, want 4", n)
	}
}

func TestUnknownInputIsAnError(t *testing.T) {
	path := filepath.Join(t.TempDir(), "notes.txt")
	os.WriteFile(path, []byte("just some text\n"), 0o644)
	db := openTestDB(t)
	_, err := New(db, Options{}).Ingest(context.Background(), []Input{{Path: path}})
	if err == nil || !strings.Contains(err.Error(), "notes.txt: cannot tell what kind of evidence") {
		t.Fatalf("err = %v", err)
	}
}

// TestOversizedLineInsideChunk: a too-long line between normal ones in one chunk is rejected
// and its neighbours load intact.
func TestOversizedLineInsideChunk(t *testing.T) {
	v1 := readFile(t, "testdata/audit-v1.good.log")
	lines := bytes.SplitAfter(v1, []byte("\n"))
	long := `{"kind":"Event","apiVersion":"audit.k8s.io/v1","auditID":"long","stage":"ResponseComplete","requestObject":{"x":"` + strings.Repeat("y", 4000) + `"}}` + "\n"
	path := filepath.Join(t.TempDir(), "audit.log")
	os.WriteFile(path, slices.Concat(lines[0], []byte(long), lines[1], lines[2], []byte(long), lines[3]), 0o644)
	db := openTestDB(t)
	res := ingestFiles(t, db, Options{MaxLineBytes: 3000}, path)
	if res[0].Rows != 4 || res[0].Rejected != 2 {
		t.Fatalf("result %+v, want 4 rows and 2 rejected", res[0])
	}
	if got := queryInts(t, db, "SELECT source_line FROM audit_events ORDER BY 1"); !slices.Equal(got, []int64{1, 3, 4, 6}) {
		t.Errorf("kept lines %v, want [1 3 4 6]", got)
	}
}

// TestFieldOfTheWrongTypeIsAWarning: an event with a field of the wrong type is kept with the
// field NULL, and a warning row in ingest_errors names the field; warnings are not rejected
// lines.
func TestFieldOfTheWrongTypeIsAWarning(t *testing.T) {
	db := openTestDB(t)
	var log bytes.Buffer
	res := ingestFiles(t, db, Options{Log: &log}, "testdata/bad-field-types.bad.log")
	if res[0].Rows != 6 || res[0].Rejected != 0 || res[0].Warnings != 5 {
		t.Fatalf("result %+v: want 6 rows, nothing rejected, 5 warnings", res[0])
	}
	got := queryStrings(t, db, "SELECT line || ' ' || severity || ' ' || reason FROM ingest_errors ORDER BY line")
	const prefix = " warning unreadable field, loaded as NULL (the event is kept): "
	want := []string{
		"2" + prefix + "user is VARCHAR, not OBJECT",
		"3" + prefix + "sourceIPs is VARCHAR, not ARRAY",
		"4" + prefix + "responseStatus.code 99999999999 is not a 32-bit integer",
		"5" + prefix + `stageTimestamp "yesterday" is not an RFC 3339 time`,
		"6" + prefix + `requestReceivedTimestamp "soon" is not an RFC 3339 time`,
	}
	if !slices.Equal(got, want) {
		t.Errorf("ingest_errors:\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if n := queryInt(t, db, "SELECT count(*) FROM audit_events WHERE username IS NULL OR source_ips IS NULL OR code IS NULL OR stage_at IS NULL OR received_at IS NULL"); n != 5 {
		t.Errorf("%d events with the bad field NULL, want 5", n)
	}
	if got := queryInts(t, db, "SELECT warnings FROM ingest_files"); !slices.Equal(got, []int64{5}) {
		t.Errorf("ingest_files.warnings %v, want [5]", got)
	}
	if !strings.Contains(log.String(), "5 rows kept with a field that could not be read") {
		t.Errorf("log %q does not count the warnings", log.String())
	}
}
