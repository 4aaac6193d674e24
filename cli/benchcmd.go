package cli

import (
	"bufio"
	"context"
	"database/sql"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/klauspost/compress/gzip"

	"github.com/kubesift/kubesift/ingest/auditgen"
)

// baselineColumns are the audit event's top-level fields as read_ndjson would read them
// with explicit columns: the bare DuckDB load kubesift's ingestion is measured against.
const baselineColumns = `{kind: 'VARCHAR', apiVersion: 'VARCHAR', level: 'VARCHAR', auditID: 'VARCHAR', stage: 'VARCHAR',
 requestURI: 'VARCHAR', verb: 'VARCHAR', user: 'STRUCT(username VARCHAR, uid VARCHAR, groups VARCHAR[])',
 impersonatedUser: 'STRUCT(username VARCHAR)', sourceIPs: 'VARCHAR[]', userAgent: 'VARCHAR',
 objectRef: 'STRUCT(resource VARCHAR, namespace VARCHAR, name VARCHAR, uid VARCHAR, apiGroup VARCHAR, apiVersion VARCHAR, resourceVersion VARCHAR, subresource VARCHAR)',
 responseStatus: 'STRUCT(code INTEGER, status VARCHAR, reason VARCHAR, message VARCHAR)',
 requestObject: 'JSON', responseObject: 'JSON', requestReceivedTimestamp: 'TIMESTAMPTZ', stageTimestamp: 'TIMESTAMPTZ',
 annotations: 'MAP(VARCHAR, VARCHAR)'}`

func runBench(ctx context.Context, e *env, args []string) error {
	fs, c := newFlags(e, "bench", "[--kind audit|conntrack] [--input FILE]",
		"Measure ingestion against a bare DuckDB load of the same file into a database file, in the\n"+
			"same run: read_ndjson with explicit columns for audit logs, read_csv of whole lines into one\n"+
			"column for conntrack dumps. Without --input it first generates a realistic input. Each run\n"+
			"loads into fresh database files; the order of the two alternates between runs. Prints MB/s\n"+
			"of both, their ratio (audit target >= 0.8) and kubesift's peak RSS, per run and as medians.\n"+
			"For audit logs it also times a load of the events alone (--audit-endpoints=false).")
	kind := fs.String("kind", "audit", "what to benchmark: audit or conntrack")
	size := fs.String("size", "1GB", "size of the generated audit log (e.g. 256MB, 1GB, 2GB)")
	entries := fs.Int("entries", 1_000_000, "entries of the generated conntrack -L dump")
	input := fs.String("input", "", "benchmark this file instead of a generated one")
	gz := fs.Bool("gzip", false, "gzip the generated audit log (both loaders then read the .gz)")
	runs := fs.Int("runs", 3, "number of runs of each loader")
	dir := fs.String("dir", "", "directory for the generated input and databases (default: a temporary directory, removed afterwards)")
	largeBodies := fs.Float64("large-body-fraction", 0.002, "share of generated audit events with a 64-512 KB body")
	if err := parse(fs, args); err != nil {
		return err
	}
	bytes, err := parseSize(*size)
	if err != nil {
		return usageError{err}
	}
	if *runs < 1 || *entries < 1 {
		return usagef("--runs and --entries must be at least 1")
	}
	if *kind != "audit" && *kind != "conntrack" {
		return usagef("unknown --kind %q (want audit or conntrack)", *kind)
	}
	work := *dir
	if work == "" {
		work, err = os.MkdirTemp("", "kubesift-bench-")
		if err != nil {
			return err
		}
		defer os.RemoveAll(work)
	}
	path := *input
	switch {
	case path != "":
	case *kind == "audit":
		path, err = generateBenchLog(e, work, bytes, *gz, *largeBodies)
	default:
		path, err = generateConntrackDump(e, work, *entries)
	}
	if err != nil {
		return err
	}
	st, err := os.Stat(path)
	if err != nil {
		return err
	}
	mb := float64(st.Size()) / 1e6
	self, err := os.Executable()
	if err != nil {
		return err
	}
	baseline, baseName := timeBaseline, "read_ndjson"
	ingestArgs := []string{"--kind", "audit"}
	if *kind == "conntrack" {
		baseline, baseName = timeLinesBaseline, "read_csv"
		ingestArgs = []string{"--kind", "conntrack", "--node", "bench", "--at", "2026-11-21T00:00:00Z"}
	}
	fmt.Fprintf(e.stdout, "input %s: %.0f MB on disk\n", path, mb)
	// For audit logs the second kubesift column is the load of audit_events alone, without the
	// endpoint states derived from audit bodies.
	variant := map[bool][]string{true: {"--audit-endpoints=false"}, false: nil}[*kind == "audit"]
	fmt.Fprintf(e.stdout, "%-4s %14s %14s %7s %12s %14s %7s %12s\n", "run", baseName, "kubesift", "ratio", "peak RSS", "events only", "ratio", "peak RSS")
	var base, ours, ratios, ours2, ratios2, rss, rss2 []float64
	for i := 0; i < *runs; i++ {
		var b, k, k2 time.Duration
		var peak, peak2 int64
		bench := func() error {
			db := filepath.Join(work, "baseline.duckdb")
			removeDB(db)
			defer removeDB(db)
			b, err = baseline(ctx, db, path)
			return err
		}
		mine := func() error {
			db := filepath.Join(work, "kubesift.duckdb")
			removeDB(db)
			defer removeDB(db)
			k, peak, err = timeIngest(ctx, self, append(ingestArgs, "--quiet", "--memory-limit", c.memoryLimit, "--db", db, path))
			return err
		}
		mineOnly := func() error {
			if variant == nil {
				return nil
			}
			db := filepath.Join(work, "kubesift-events.duckdb")
			removeDB(db)
			defer removeDB(db)
			k2, peak2, err = timeIngest(ctx, self, append(append(ingestArgs, variant...), "--quiet", "--memory-limit", c.memoryLimit, "--db", db, path))
			return err
		}
		order := []func() error{bench, mine, mineOnly}
		if i%2 == 1 {
			order = []func() error{mineOnly, mine, bench}
		}
		for _, f := range order {
			if err := f(); err != nil {
				return err
			}
		}
		base = append(base, mb/b.Seconds())
		ours = append(ours, mb/k.Seconds())
		ratios = append(ratios, b.Seconds()/k.Seconds())
		rss = append(rss, float64(peak)/(1<<20))
		if variant != nil {
			ours2 = append(ours2, mb/k2.Seconds())
			ratios2 = append(ratios2, b.Seconds()/k2.Seconds())
			rss2 = append(rss2, float64(peak2)/(1<<20))
		}
		fmt.Fprintf(e.stdout, "%-4d %s\n", i+1, benchRow(base[i], ours[i], ratios[i], rss[i], ours2, ratios2, rss2, i))
	}
	fmt.Fprintf(e.stdout, "%-4s %s\n", "med", benchRow(median(base), median(ours), median(ratios), median(rss),
		[]float64{median(ours2)}, []float64{median(ratios2)}, []float64{median(rss2)}, 0))
	return nil
}

// benchRow formats one line of results; the events-only columns are "-" when not measured.
func benchRow(base, ours, ratio, rss float64, ours2, ratios2, rss2 []float64, i int) string {
	only := fmt.Sprintf("%14s %7s %12s", "-", "-", "-")
	if i < len(ours2) && ours2[i] > 0 {
		only = fmt.Sprintf("%9.0f MB/s %7.2f %8.0f MiB", ours2[i], ratios2[i], rss2[i])
	}
	return fmt.Sprintf("%9.0f MB/s %9.0f MB/s %7.2f %8.0f MiB %s", base, ours, ratio, rss, only)
}

func removeDB(path string) {
	os.Remove(path)
	os.Remove(path + ".wal")
}

func generateBenchLog(e *env, dir string, size int64, gz bool, largeBodies float64) (string, error) {
	path := filepath.Join(dir, "audit-bench.log")
	if gz {
		path += ".gz"
	}
	f, err := os.Create(path)
	if err != nil {
		return "", err
	}
	var w io.Writer = f
	var zw *gzip.Writer
	if gz {
		zw = gzip.NewWriter(f)
		w = zw
	}
	bw := bufio.NewWriterSize(w, 1<<20)
	start := time.Now()
	st, err := auditgen.Generate(bw, auditgen.Options{Seed: 1, TargetBytes: size, LargeBodyFraction: largeBodies})
	if err == nil {
		err = bw.Flush()
	}
	if zw != nil && err == nil {
		err = zw.Close()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return "", fmt.Errorf("generating %s: %w", path, err)
	}
	fmt.Fprintf(e.stdout, "generated %s: %d events, %d bytes (uncompressed) in %.1fs\n", path, st.Events, st.Bytes, time.Since(start).Seconds())
	return path, nil
}

// timeBaseline loads path with read_ndjson into a new table of a new database file.
func timeBaseline(ctx context.Context, dbPath, path string) (time.Duration, error) {
	db, err := sql.Open("duckdb", dbPath)
	if err != nil {
		return 0, err
	}
	defer db.Close()
	start := time.Now()
	_, err = db.ExecContext(ctx, "CREATE TABLE baseline AS SELECT * FROM read_ndjson($1, columns = "+baselineColumns+")", path)
	if err == nil {
		_, err = db.ExecContext(ctx, "CHECKPOINT")
	}
	if err != nil {
		return 0, fmt.Errorf("baseline read_ndjson of %s: %w", path, err)
	}
	return time.Since(start), nil
}

// timeLinesBaseline loads path's lines into one VARCHAR column of a new database file table.
func timeLinesBaseline(ctx context.Context, dbPath, path string) (time.Duration, error) {
	db, err := sql.Open("duckdb", dbPath)
	if err != nil {
		return 0, err
	}
	defer db.Close()
	start := time.Now()
	_, err = db.ExecContext(ctx, `CREATE TABLE baseline AS SELECT * FROM read_csv($1, columns = {'line': 'VARCHAR'},
		delim = '\x1f', quote = '', escape = '', header = false, auto_detect = false)`, path)
	if err == nil {
		_, err = db.ExecContext(ctx, "CHECKPOINT")
	}
	if err != nil {
		return 0, fmt.Errorf("baseline read_csv of %s: %w", path, err)
	}
	return time.Since(start), nil
}

// generateConntrackDump writes a conntrack -L dump of n probe-like entries, shaped like the
// real capture's lines: TIME_WAIT from many source ports to a few hundred pod ports.
func generateConntrackDump(e *env, dir string, n int) (string, error) {
	path := filepath.Join(dir, "conntrack_L.txt")
	f, err := os.Create(path)
	if err != nil {
		return "", err
	}
	w := bufio.NewWriterSize(f, 1<<20)
	states := []string{"TIME_WAIT", "TIME_WAIT", "TIME_WAIT", "TIME_WAIT", "CLOSE", "ESTABLISHED"}
	for i := 0; i < n; i++ {
		state := states[i%len(states)]
		flags := "[ASSURED] "
		timeout := 1 + i%120
		if state == "ESTABLISHED" {
			timeout = 431999 - i%1000
		}
		src := fmt.Sprintf("10.%d.%d.%d", 64+i%8, (i/8)%256, 1+(i/2048)%250)
		dst := fmt.Sprintf("10.200.%d.%d", (i/7)%16, 2+(i/11)%200)
		sport, dport := 32768+(i*7919)%28000, 8080+(i%3)
		fmt.Fprintf(w, "tcp      6 %d %s src=%s dst=%s sport=%d dport=%d src=%s dst=%s sport=%d dport=%d %smark=0 use=1\n",
			timeout, state, src, dst, sport, dport, dst, src, dport, sport, flags)
	}
	if err := w.Flush(); err != nil {
		f.Close()
		return "", err
	}
	fmt.Fprintf(e.stdout, "generated %s: %d entries\n", path, n)
	return path, f.Close()
}

// timeIngest runs `kubesift ingest args...` as a child process, for its wall time and peak
// RSS. The peak is the child's VmHWM, sampled until it exits: the rusage of a child would
// also count the memory of this process at fork time.
func timeIngest(ctx context.Context, self string, args []string) (time.Duration, int64, error) {
	path := args[len(args)-1]
	cmd := exec.CommandContext(ctx, self, append([]string{"ingest"}, args...)...)
	cmd.Stderr = os.Stderr
	start := time.Now()
	if err := cmd.Start(); err != nil {
		return 0, 0, err
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	var peak int64
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case err := <-done:
			if err != nil {
				return 0, 0, fmt.Errorf("kubesift ingest %s: %w", path, err)
			}
			return time.Since(start), peak, nil
		case <-tick.C:
			if hwm := vmHWM(cmd.Process.Pid); hwm > peak {
				peak = hwm
			}
		}
	}
}

// vmHWM returns the peak resident set size of a running process in bytes (0 if unknown).
func vmHWM(pid int) int64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			kb, _ := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
			return kb * 1024
		}
	}
	return 0
}

func median(v []float64) float64 {
	if len(v) == 0 {
		return 0
	}
	s := slices.Clone(v)
	slices.Sort(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

// parseSize parses sizes like 512MB, 1GB, 2GiB or a plain byte count.
func parseSize(s string) (int64, error) {
	units := []struct {
		suffix string
		mult   int64
	}{{"GIB", 1 << 30}, {"MIB", 1 << 20}, {"KIB", 1 << 10}, {"GB", 1e9}, {"MB", 1e6}, {"KB", 1e3}, {"B", 1}}
	u := strings.ToUpper(strings.TrimSpace(s))
	for _, unit := range units {
		if num, ok := strings.CutSuffix(u, unit.suffix); ok {
			f, err := strconv.ParseFloat(strings.TrimSpace(num), 64)
			if err != nil || f <= 0 {
				return 0, fmt.Errorf("bad size %q", s)
			}
			return int64(f * float64(unit.mult)), nil
		}
	}
	n, err := strconv.ParseInt(u, 10, 64)
	if err != nil || n <= 0 {
		return 0, fmt.Errorf("bad size %q (want e.g. 512MB or 1GB)", s)
	}
	return n, nil
}
