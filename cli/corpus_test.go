package cli

import (
	"bufio"
	"bytes"
	"cmp"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestHostileCorpus loads each hostile input, made in a temporary directory (the big ones are
// sparse or written at test time, and only with KUBESIFT_BIG_INPUTS=1, as .ci/reliability sets), in a process of its own: none
// panics, each keeps the good events around the bad part, accounts for every bad line in
// ingest_errors, exits with the documented code, and stays within a generous bound of peak
// memory (the child's maximum resident set size): a 128 MB YAML List, decoded whole, would
// take several times that.
func TestHostileCorpus(t *testing.T) {
	good := readAll(t, "../ingest/testdata/audit-v1.good.log") // 6 events
	lines := bytes.SplitAfter(good, []byte("\n"))
	around := func(bad []byte) []byte { // 3 events, the bad line, 3 events
		return bytes.Join([][]byte{bytes.Join(lines[:3], nil), bad, bytes.Join(lines[3:6], nil)}, nil)
	}
	tests := []struct {
		name     string
		big      bool
		make     func(t *testing.T, path string)
		code     int
		rows     int64
		rejected int64
		stderr   string
		table    string // where the rows go, audit_events when empty
	}{
		{name: "empty", make: write(nil), code: ExitOK, stderr: "skipped 1 empty file"},
		{name: "whitespace", make: write([]byte(" \n\t\n\r\n")), code: ExitOK, stderr: "skipped 1 empty file"},
		{name: "crlf", make: write(bytes.ReplaceAll(good, []byte("\n"), []byte("\r\n"))), code: ExitOK, rows: 6},
		{name: "bom", make: write(append([]byte("\xEF\xBB\xBF"), good...)), code: ExitOK, rows: 6},
		{name: "nul", make: write(around([]byte("\x00\x00{\"kind\":\x00\"Event\"}\x00\n"))), code: ExitOK, rows: 6, rejected: 1},
		{name: "deep-nesting", make: write(around([]byte(`{"kind":"Event","auditID":"x","a":` + strings.Repeat("[", 100000) + strings.Repeat("]", 100000) + "}\n"))), code: ExitOK, rows: 6, rejected: 1},
		{name: "all-rejected", make: write([]byte("{\"auditID\":1,\"apiVersion\":\"audit.k8s.io/v1\"}\n{}\n")), code: ExitAllRejected, rejected: 2},
		{name: "symlink-loop", make: func(t *testing.T, path string) {
			os.Mkdir(path, 0o755)
			os.WriteFile(filepath.Join(path, "audit.log"), good, 0o644)
			os.Symlink("loop", filepath.Join(path, "loop"))
		}, code: ExitPartial, rows: 6, stderr: "loop"},
		{name: "100MB-line", big: true, make: write(around(append(bytes.Repeat([]byte("x"), 100<<20), '\n'))), code: ExitOK, rows: 6, rejected: 1},
		{name: "yaml-list-128MB", big: true, make: yamlList(128 << 20), code: ExitOK, table: "endpoint_addresses", rows: yamlListItems(128 << 20)},
		{name: "1GB-sparse", big: true, make: func(t *testing.T, path string) {
			write(good)(t, path)
			if err := os.Truncate(path, 1<<30); err != nil { // a hole of NULs after the 6 events, without a newline
				t.Fatal(err)
			}
		}, code: ExitOK, rows: 6, rejected: 1},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if tc.big && (testing.Short() || os.Getenv("KUBESIFT_BIG_INPUTS") != "1") {
				t.Skip("a big input: only with KUBESIFT_BIG_INPUTS=1 (.ci/reliability) and without -short")
			}
			dir := t.TempDir()
			path := filepath.Join(dir, "input.log")
			tc.make(t, path)
			db, rssFile := filepath.Join(dir, "k.duckdb"), filepath.Join(dir, "peak-rss")
			cmd := kubesift("ingest", "--db", db, path)
			cmd.Env = append(cmd.Env, peakRSSEnv+"="+rssFile)
			var stderr bytes.Buffer
			cmd.Stderr = &stderr
			began := time.Now()
			cmd.Run()
			wall := time.Since(began)
			if code := cmd.ProcessState.ExitCode(); code != tc.code || !strings.Contains(stderr.String(), tc.stderr) || strings.Contains(stderr.String(), "panic") {
				t.Fatalf("exit %d, stderr %q; want %d and %q", code, stderr.String(), tc.code, tc.stderr)
			}
			rss := readPeakRSS(t, rssFile)
			if rss > 1<<30 {
				t.Errorf("peak RSS %d MiB, over 1 GiB", rss>>20)
			}
			t.Logf("exit %d, peak RSS %d MiB, wall %.1fs", cmd.ProcessState.ExitCode(), rss>>20, wall.Seconds())
			table := cmp.Or(tc.table, "audit_events")
			r := runCLI(t, "query", "--db", db, "-o", "csv", "SELECT (SELECT count(*) FROM "+table+") AS events, (SELECT count(*) FROM ingest_errors WHERE severity = 'error') AS errors")
			if want := fmt.Sprintf("events,errors\n%d,%d\n", tc.rows, tc.rejected); r.stdout != want {
				t.Errorf("loaded %q, want %q", r.stdout, want)
			}
		})
	}
}

// peakRSSEnv names the file where the CLI in a child process (TestMain) writes its peak
// resident set size, VmHWM of /proc/self/status. The child's rusage is no measure of it: Go
// starts a child with vfork, and Linux carries the parent's peak RSS over exec into the child's
// ru_maxrss, which so reported this test process's peak (418 MiB for an empty file).
const peakRSSEnv = "KUBESIFT_TEST_PEAK_RSS"

// writePeakRSS writes the process's peak RSS to the file $KUBESIFT_TEST_PEAK_RSS names, when
// it is set and the system has /proc.
func writePeakRSS() {
	path := os.Getenv(peakRSSEnv)
	status, err := os.ReadFile("/proc/self/status")
	if path == "" || err != nil {
		return
	}
	for line := range strings.Lines(string(status)) {
		if hwm, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			os.WriteFile(path, []byte(strings.TrimSpace(hwm)), 0o644)
		}
	}
}

// readPeakRSS returns the peak RSS in bytes that a child wrote to path (in kB, as /proc says),
// 0 where there is no /proc to read it from.
func readPeakRSS(t *testing.T, path string) int64 {
	t.Helper()
	hwm, err := os.ReadFile(path)
	if os.IsNotExist(err) && runtime.GOOS != "linux" {
		t.Log("peak RSS not measured: no /proc")
		return 0
	}
	kb, ok := strings.CutSuffix(string(hwm), " kB")
	n, perr := strconv.ParseInt(kb, 10, 64)
	if err != nil || !ok || perr != nil {
		t.Fatalf("peak RSS the child wrote: %q, %v", hwm, cmp.Or(err, perr))
	}
	return n << 10
}

// write returns a maker of a file holding data.
func write(data []byte) func(t *testing.T, path string) {
	return func(t *testing.T, path string) {
		if err := os.WriteFile(path, data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// yamlItem is one item of the YAML List yamlList writes: an Endpoints with one address.
const yamlItem = `- apiVersion: v1
  kind: Endpoints
  metadata:
    name: web-%07d
    namespace: shop
    resourceVersion: "%d"
  subsets:
  - addresses:
    - ip: 10.%d.%d.%d
      nodeName: n1
    ports:
    - port: 8080
      protocol: TCP
`

// yamlListItems is how many items a YAML List of about size bytes holds.
func yamlListItems(size int) int64 { return int64(size / len(fmt.Sprintf(yamlItem, 0, 1, 0, 0, 0))) }

// yamlList returns a maker of a kubectl-style YAML List of about size bytes.
func yamlList(size int) func(t *testing.T, path string) {
	return func(t *testing.T, path string) {
		f, err := os.Create(path)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		w := bufio.NewWriter(f)
		fmt.Fprintln(w, "apiVersion: v1\nkind: List\nitems:")
		for i := range yamlListItems(size) {
			fmt.Fprintf(w, yamlItem, i, i+1, i>>16&255, i>>8&255, i&255)
		}
		if err := w.Flush(); err != nil {
			t.Fatal(err)
		}
	}
}

// TestHostileGrowingFile ingests an audit log while it grows: every write appends the rest of
// the half-written last line, one complete line (now and then one that is not an event) and
// the first half of the next line, so the file always ends in a half line. Once the first
// ingest has exited the writer stops, completes the last line, and a second ingest resumes.
// Whatever the first process saw, no half line is rejected, and the two runs together load
// every complete line exactly once and reject exactly the bad ones.
func TestHostileGrowingFile(t *testing.T) {
	template := bytes.SplitAfter(readAll(t, "../ingest/testdata/audit-v1.good.log"), []byte("\n"))[0]
	auditID := regexp.MustCompile(`"auditID":"[^"]*"`)
	bad := []byte(`{"kind":"Event","apiVersion":"audit.k8s.io/v1","stage":"ResponseComplete"}` + "\n") // no auditID
	var good int64
	var badLines []int64
	line := int64(0)
	next := func(i int) []byte { // the line to write after line, a bad one every 7th
		line++
		if i%7 == 3 {
			badLines = append(badLines, line)
			return bad
		}
		good++
		return auditID.ReplaceAll(template, fmt.Appendf(nil, `"auditID":"grow-%06d"`, i))
	}
	dir := t.TempDir()
	path, db := filepath.Join(dir, "audit.log"), filepath.Join(dir, "k.duckdb")
	var start []byte
	for i := range 10 {
		start = append(start, next(i)...)
	}
	half := next(10)
	start = append(start, half[:len(half)/2]...)
	write(start)(t, path)
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()

	cmd := kubesift("ingest", "--db", db, path)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	go func() { cmd.Wait(); close(exited) }()
	written := 0
	for i := 11; ; i += 2 {
		select {
		case <-exited:
		default:
			if written < 600 { // a bound on the file, whatever the speed of the reader
				rest := half[len(half)/2:]
				complete := next(i)
				half = next(i + 1)
				if _, err := f.Write(slices.Concat(rest, complete, half[:len(half)/2])); err != nil {
					t.Fatal(err)
				}
				written += 2
			}
			time.Sleep(5 * time.Millisecond)
			continue
		}
		break
	}
	if code := cmd.ProcessState.ExitCode(); code != ExitOK || strings.Contains(stderr.String(), "panic") {
		t.Fatalf("first ingest: exit %d, stderr %q", code, stderr.String())
	}
	r := runCLI(t, "query", "--db", db, "-o", "csv", "SELECT rows, note FROM ingest_files")
	t.Logf("%d lines appended while the first ingest ran, which loaded: %s", written, r.stdout)
	r = runCLI(t, "query", "--db", db, "-o", "csv", "SELECT line FROM ingest_errors ORDER BY line")
	for _, l := range strings.Fields(strings.TrimPrefix(r.stdout, "line\n")) {
		if n, err := strconv.ParseInt(l, 10, 64); err != nil || !slices.Contains(badLines, n) {
			t.Errorf("first ingest rejected line %s, which is not a bad line (a half-written one?): %s", l, r.stdout)
		}
	}

	if _, err := f.Write(half[len(half)/2:]); err != nil {
		t.Fatal(err)
	}
	if r := runCLI(t, "ingest", "--db", db, path); r.code != ExitOK {
		t.Fatalf("second ingest: %+v", r)
	}
	r = runCLI(t, "query", "--db", db, "-o", "csv", `SELECT (SELECT count(*) FROM audit_events) AS events,
		(SELECT count(DISTINCT audit_id) FROM audit_events) AS ids,
		(SELECT sum(rows) FROM ingest_files) AS rows, (SELECT sum(duplicates) FROM ingest_files) AS duplicates`)
	if want := fmt.Sprintf("events,ids,rows,duplicates\n%d,%d,%d,0\n", good, good, good); r.stdout != want {
		t.Errorf("loaded %q, want %q", r.stdout, want)
	}
	r = runCLI(t, "query", "--db", db, "-o", "csv", "SELECT line FROM ingest_errors ORDER BY line")
	want := "line\n"
	for _, l := range badLines {
		want += fmt.Sprintln(l)
	}
	if r.stdout != want {
		t.Errorf("ingest_errors lines:\n%s\nwant\n%s", r.stdout, want)
	}
}
