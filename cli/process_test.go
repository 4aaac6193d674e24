package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/kubesift/kubesift/ingest"
	"github.com/kubesift/kubesift/internal/auditgen"
	"github.com/kubesift/kubesift/store"
)

// kubesift returns the CLI as a child process (this test binary re-executed, see TestMain).
func kubesift(args ...string) *exec.Cmd {
	cmd := exec.Command(os.Args[0], args...)
	cmd.Env = append(os.Environ(), "KUBESIFT_TEST_MAIN=1")
	return cmd
}

// startHoldingIngest starts `kubesift ingest --db db -` and feeds it part of data; the
// process then waits for more input in the middle of its file's transaction.
func startHoldingIngest(t *testing.T, db string, partial []byte) (*exec.Cmd, io.WriteCloser, *bytes.Buffer) {
	t.Helper()
	cmd := kubesift("ingest", "--db", db, "-")
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	if _, err := stdin.Write(partial); err != nil {
		t.Fatal(err)
	}
	// The database file appears once the process has opened it and holds its lock.
	for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		if _, err := os.Stat(db); err == nil {
			time.Sleep(300 * time.Millisecond)
			return cmd, stdin, &stderr
		}
	}
	t.Fatal("ingest did not open its database")
	return nil, nil, nil
}

func generated(t *testing.T, events int) []byte {
	t.Helper()
	var data bytes.Buffer
	if _, err := auditgen.Generate(&data, auditgen.Options{Seed: 7, MaxEvents: int64(events), LargeBodyFraction: -1}); err != nil {
		t.Fatal(err)
	}
	return data.Bytes()
}

// TestSecondProcessGetsClearError: while one process writes, another gets "in use", not a hang.
func TestSecondProcessGetsClearError(t *testing.T) {
	db := filepath.Join(t.TempDir(), "busy.duckdb")
	data := generated(t, 2000)
	writer, stdin, stderr := startHoldingIngest(t, db, data[:len(data)/2])

	for _, args := range [][]string{
		{"query", "--db", db, "SELECT count(*) FROM audit_events"},
		{"ingest", "--db", db, realAuditLog},
	} {
		cmd := kubesift(args...)
		var out bytes.Buffer
		cmd.Stderr = &out
		done := make(chan error, 1)
		go func() { done <- cmd.Run() }()
		select {
		case err := <-done:
			if cmd.ProcessState.ExitCode() != ExitError || !strings.Contains(out.String(), "database is in use by another kubesift process") {
				t.Errorf("%v: exit %d (%v), stderr %q", args, cmd.ProcessState.ExitCode(), err, out.String())
			}
		case <-time.After(30 * time.Second):
			cmd.Process.Kill()
			t.Fatalf("%v hung on a busy database", args)
		}
	}

	stdin.Write(data[len(data)/2:])
	stdin.Close()
	if err := writer.Wait(); err != nil {
		t.Fatalf("the writer failed: %v\n%s", err, stderr)
	}
	r := runCLI(t, "query", "--db", db, "-o", "csv", "SELECT count(*) AS n FROM audit_events")
	if r.stdout != "n\n2000\n" {
		t.Errorf("after the writer finished: %q %q", r.stdout, r.stderr)
	}
}

// TestKillMidFileLeavesDatabaseAsBefore: a process killed in the middle of a file leaves the
// rows of earlier files and none of the interrupted one; running again completes it.
func TestKillMidFileLeavesDatabaseAsBefore(t *testing.T) {
	dir := t.TempDir()
	db := filepath.Join(dir, "k.duckdb")
	if r := runCLI(t, "ingest", "--db", db, realAuditLog); r.code != ExitOK {
		t.Fatal(r)
	}
	data := generated(t, 3000)
	cmd, stdin, _ := startHoldingIngest(t, db, data[:len(data)*2/3])
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	cmd.Wait()
	stdin.Close()

	r := runCLI(t, "query", "--db", db, "-o", "csv", "SELECT (SELECT count(*) FROM audit_events) AS events, (SELECT count(*) FROM ingest_files) AS files")
	if r.stdout != "events,files\n1204,1\n" {
		t.Fatalf("after the kill: %q %q", r.stdout, r.stderr)
	}
	path := filepath.Join(dir, "generated.log")
	os.WriteFile(path, data, 0o644)
	if r := runCLI(t, "ingest", "--db", db, path); r.code != ExitOK {
		t.Fatal(r)
	}
	r = runCLI(t, "query", "--db", db, "-o", "csv", "SELECT (SELECT count(*) FROM audit_events) AS events, (SELECT count(*) FROM ingest_files) AS files")
	if r.stdout != "events,files\n4204,2\n" {
		t.Errorf("after the rerun: %q %q", r.stdout, r.stderr)
	}
}

// TestCronJobFlow runs kubesift the way the CronJob does: the same database every time, a
// growing and then rotated audit log. Each run loads only what is new, analyzes what arrived since
// the previous run, writes a one-line JSON summary and a metrics file, and prunes old rows.
func TestCronJobFlow(t *testing.T) {
	dir := t.TempDir()
	logs := filepath.Join(dir, "audit")
	os.MkdirAll(logs, 0o755)
	db := filepath.Join(dir, "k.duckdb")
	metrics := filepath.Join(dir, "metrics", "kubesift.prom") // the directory does not exist yet
	real := strings.SplitAfter(string(readAll(t, realAuditLog)), "\n")
	real = real[:len(real)-1]
	live := filepath.Join(logs, "audit.log")
	os.WriteFile(live, []byte(strings.Join(real[:600], "")), 0o644)

	type summary struct {
		Since    *time.Time     `json:"since"`
		Started  time.Time      `json:"started"`
		Files    int            `json:"files"`
		Rows     int64          `json:"rows"`
		Findings map[string]int `json:"findings"`
		ExitCode int            `json:"exit_code"`
	}
	run := func(extra ...string) summary {
		t.Helper()
		r := runCLI(t, append([]string{"run", "--db", db, "--summary", "json", "--metrics-file", metrics, "-o", "json"}, append(extra, logs)...)...)
		if r.code != ExitOK {
			t.Fatalf("run: %+v", r)
		}
		var s summary
		if err := json.Unmarshal([]byte(strings.TrimSpace(r.stderr)), &s); err != nil {
			t.Fatalf("stderr is not one JSON line: %q", r.stderr)
		}
		return s
	}
	first := run()
	if first.Rows != 600 || first.Since != nil {
		t.Fatalf("first run: %+v", first)
	}
	os.WriteFile(live, []byte(strings.Join(real[:900], "")), 0o644) // grown
	// the HTML report's charts query the database, which run analyses read-only once the load's
	// instance is closed
	report := filepath.Join(dir, "report.html")
	second := run("--html", report)
	if html := string(readAll(t, report)); !strings.Contains(html, "<svg") {
		t.Errorf("run --db --html wrote no chart: %.200q", html)
	}
	if second.Rows != 300 || second.Since == nil || !second.Since.Before(first.Started) {
		t.Fatalf("second run: %+v (want 300 new rows, analyzed from the recorded time of the first of them, before the first run)", second)
	}
	os.Rename(live, filepath.Join(logs, "audit-2026-11-21T05-31-40.000.log"))
	os.WriteFile(filepath.Join(logs, "audit-2026-11-21T05-31-40.000.log"), []byte(strings.Join(real[:1000], "")), 0o644) // the rest before rotation
	os.WriteFile(live, []byte(strings.Join(real[1000:], "")), 0o644)
	third := run("--since", "2026-11-21T00:00:00Z") // the recording is older than the previous runs
	if third.Rows != int64(len(real)-900) || third.Findings["warning"] != 2 {
		t.Fatalf("third run after rotation: %+v, want %d new rows", third, len(real)-900)
	}
	r := runCLI(t, "query", "--db", db, "-o", "csv", "SELECT count(*) AS n, count(DISTINCT (audit_id, stage)) AS distinct_events, (SELECT count(*) FROM runs) AS runs FROM audit_events")
	if r.stdout != fmt.Sprintf("n,distinct_events,runs\n%d,%d,3\n", len(real), len(real)) {
		t.Errorf("after three runs: %q", r.stdout)
	}
	prom := string(readAll(t, metrics))
	for _, want := range []string{
		`kubesift_findings{cluster="",rule="election-lock-churn",severity="warning"} 2`,
		`kubesift_rule_evaluated{rule="probe-conntrack-exhaustion"} 0`,
		`kubesift_table_rows{table="audit_events"} 1204`,
		"kubesift_last_success_timestamp_seconds ",
	} {
		if !strings.Contains(prom, want) {
			t.Errorf("metrics file lacks %q:\n%s", want, prom)
		}
	}
	// The recording is from 2026-11-21 05:31; keeping one hour from now drops all of it.
	r = runCLI(t, "run", "--db", db, "--summary", "none", "--retain", "1h", logs)
	if r.code != ExitOK {
		t.Fatalf("run --retain: %+v", r)
	}
	r = runCLI(t, "query", "--db", db, "-o", "csv", "SELECT count(*) AS n FROM audit_events")
	if r.stdout != "n\n0\n" {
		t.Errorf("after --retain 1h: %q", r.stdout)
	}
	if r := runCLI(t, "run", "--retain", "7d", logs); r.code != ExitUsage {
		t.Errorf("--retain without --db: exit %d", r.code)
	}
}

func readAll(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// loadState counts what a kill could leave half-done, through a read-write open (which
// removes the rows of interrupted loads, and says whether it had to).
func loadState(t *testing.T, path string) (state string, repaired bool) {
	t.Helper()
	db, err := store.Open(context.Background(), path, ingest.Schema(), store.Options{})
	if err != nil {
		t.Fatalf("opening %s: %v", path, err)
	}
	defer db.Close()
	var events, distinct, addresses, files, errs int64
	err = db.QueryRow(`SELECT (SELECT count(*) FROM audit_events), (SELECT count(DISTINCT (audit_id, stage)) FROM audit_events),
		(SELECT count(*) FROM endpoint_addresses), (SELECT count(*) FROM ingest_files), (SELECT count(*) FROM ingest_errors)`).Scan(&events, &distinct, &addresses, &files, &errs)
	if err != nil {
		t.Fatal(err)
	}
	return fmt.Sprintf("%d events (%d distinct), %d addresses, %d files, %d errors", events, distinct, addresses, files, errs), len(db.Repaired) > 0
}

// TestKillDuringCommitIsRepaired: a kill while COMMIT writes the WAL leaves a torn WAL, and
// DuckDB's replay keeps the records before the tear. Cut a committed load's WAL at many
// lengths (every kill point of the WAL write): each leaves the database as before the load or
// after it, never between, and loading the file again gives exact counts without duplicates.
// The same for a run of small files committed together.
func TestKillDuringCommitIsRepaired(t *testing.T) {
	// past a row group (16,384 rows): DuckDB writes those at once, and logs only pointers
	t.Run("one file", func(t *testing.T) { testKillDuringCommit(t, 17000, generated(t, 17000)) })
	// four files of 16.5 MB, one run (16 MiB or less each, 256 MiB together), again past a row group
	lines := bytes.SplitAfter(generated(t, 16600), []byte("\n"))
	var files [][]byte
	for i := 0; i < 16600; i += 4150 {
		files = append(files, bytes.Join(lines[i:i+4150], nil))
	}
	t.Run("a run of four small files", func(t *testing.T) { testKillDuringCommit(t, 16600, files...) })
}

// testKillDuringCommit is TestKillDuringCommitIsRepaired for files of events in all.
func testKillDuringCommit(t *testing.T, events int, files ...[]byte) {
	dir := t.TempDir()
	db := filepath.Join(dir, "k.duckdb")
	if r := runCLI(t, "ingest", "--db", db, realAuditLog); r.code != ExitOK {
		t.Fatal(r)
	}
	before, _ := loadState(t, db)
	var paths []string
	for i, data := range files {
		path := filepath.Join(dir, fmt.Sprintf("generated-%d.log", i))
		if err := os.WriteFile(path, data, 0o600); err != nil {
			t.Fatal(err)
		}
		paths = append(paths, path)
	}

	// The load of the files commits, then the process waits on stdin in its next load: killed
	// there, the committed load is in the WAL only.
	cmd := kubesift(append(append([]string{"ingest", "--db", db}, paths...), "-")...)
	stdin, _ := cmd.StdinPipe()
	stderr, _ := cmd.StderrPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	said := ""
	for strings.Count(said, " rows loaded") < len(files) {
		line := make([]byte, 4096)
		n, err := stderr.Read(line)
		if err != nil {
			t.Fatalf("ingest said %q, then: %v", said, err)
		}
		said += string(line[:n])
	}
	time.Sleep(200 * time.Millisecond) // past the next load's id, into its transaction
	cmd.Process.Signal(syscall.SIGKILL)
	cmd.Wait()
	stdin.Close()
	image, wal := readAll(t, db), readAll(t, db+".wal")

	crash := filepath.Join(t.TempDir(), "c.duckdb")
	restore := func(walBytes int) {
		os.RemoveAll(crash + ".tmp")
		os.WriteFile(crash, image, 0o600)
		os.WriteFile(crash+".wal", wal[:walBytes], 0o600)
	}
	restore(len(wal))
	after, _ := loadState(t, crash)
	if want := fmt.Sprintf("%[1]d events (%[1]d distinct)", 1204+events); before == after || !strings.HasPrefix(after, want) {
		t.Fatalf("the whole WAL: %q (before the load %q)", after, before)
	}
	var cuts []int
	for i := 0; i < 2; i++ {
		cuts = append(cuts, len(wal)*i/2)
	}
	for _, i := range []int{1, 5, 9, 13, 17, 25, 40, 80, 160} { // the last records: the load's biggest table, ingest_files, the commit marker
		cuts = append(cuts, len(wal)-i)
	}
	rerun := false
	repairs := 0
	for _, cut := range cuts {
		restore(cut)
		got, repaired := loadState(t, crash)
		if repaired {
			repairs++
		}
		if got != before && got != after {
			t.Errorf("WAL cut at %d of %d bytes: %q, want %q (before) or %q (after)", cut, len(wal), got, before, after)
			continue
		}
		// Load the files again after the first repaired cut.
		if repaired && !rerun {
			rerun = true
			if r := runCLI(t, append([]string{"ingest", "--db", crash}, paths...)...); r.code != ExitOK {
				t.Fatalf("re-run after the cut at %d: %+v", cut, r)
			}
			if again, _ := loadState(t, crash); again != after {
				t.Errorf("re-run after the cut at %d: %q, want %q", cut, again, after)
			}
		}
	}
	if repairs == 0 {
		t.Errorf("none of %d cuts needed a repair", len(cuts))
	}
}
