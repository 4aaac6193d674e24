// Command kubesift-bench measures kubesift's ingestion against a bare DuckDB load of the same
// file, in the same run. It generates its input (internal/auditgen for audit logs) and lives
// outside the kubesift binary, which therefore links no generator. Run it from the repository:
//
//	go run -tags duckdb_arrow ./cmd/kubesift-bench --size 1GB
//	go run -tags duckdb_arrow ./cmd/kubesift-bench --kind conntrack
//	go run -tags duckdb_arrow ./cmd/kubesift-bench --generate-only --dir /tmp/bench --size 2GB
//
// It loads with kubesift's own code: the program re-executes itself as
// `kubesift-bench kubesift ingest ...`, which runs the kubesift command line, so peak memory is
// measured in a process of its own.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/pflag"

	"github.com/kubesift/kubesift/cli"
	"github.com/kubesift/kubesift/store"
)

// kubesiftArg as the first argument makes this program run the kubesift command line with the
// remaining arguments: the child process whose ingestion is measured.
const kubesiftArg = "kubesift"

// childMemoryLimit is the Go heap limit kubesift's main sets when GOMEMLIMIT is unset; the
// measured child gets the same through GOMEMLIMIT.
const childMemoryLimit = "256MiB"

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if len(os.Args) > 1 && os.Args[1] == kubesiftArg {
		os.Exit(cli.Run(ctx, os.Args[2:], os.Stdout, os.Stderr))
	}
	err := run(ctx, os.Args[1:], os.Stdout)
	switch {
	case err == nil, errors.Is(err, pflag.ErrHelp):
	case errors.As(err, new(usageError)):
		fmt.Fprintf(os.Stderr, "kubesift-bench: %v\nRun 'kubesift-bench -h' for usage.\n", err)
		os.Exit(cli.ExitUsage)
	default:
		fmt.Fprintf(os.Stderr, "kubesift-bench: %v\n", err)
		os.Exit(cli.ExitError)
	}
}

// usageError marks errors in the command line itself.
type usageError struct{ err error }

func (u usageError) Error() string { return u.err.Error() }
func (u usageError) Unwrap() error { return u.err }

func usagef(format string, args ...any) error { return usageError{fmt.Errorf(format, args...)} }

type options struct {
	kind, size, input, dir, memoryLimit string
	entries, runs                       int
	gzip, generateOnly                  bool
	largeBodies                         float64
}

func parseFlags(args []string, stdout io.Writer) (options, error) {
	var o options
	fs := pflag.NewFlagSet("kubesift-bench", pflag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.Usage = func() {
		fmt.Fprintf(stdout, "Usage: go run -tags duckdb_arrow ./cmd/kubesift-bench [flags]\n\n%s\n\nFlags:\n%s", doc, fs.FlagUsages())
	}
	fs.StringVar(&o.kind, "kind", "audit", "what to benchmark: audit or conntrack")
	fs.StringVar(&o.size, "size", "1GB", "size of the generated audit log (e.g. 256MB, 1GB, 2GB)")
	fs.IntVar(&o.entries, "entries", 1_000_000, "entries of the generated conntrack -L dump")
	fs.StringVar(&o.input, "input", "", "benchmark this file instead of a generated one")
	fs.BoolVar(&o.gzip, "gzip", false, "gzip the generated audit log (both loaders then read the .gz)")
	fs.IntVar(&o.runs, "runs", 3, "number of runs of each loader")
	fs.StringVar(&o.dir, "dir", "", "directory for the generated input and databases (default: a temporary directory, removed afterwards)")
	fs.Float64Var(&o.largeBodies, "large-body-fraction", 0.002, "share of generated audit events with a 64-512 KB body")
	fs.BoolVar(&o.generateOnly, "generate-only", false, "write the generated input into --dir and stop")
	fs.StringVar(&o.memoryLimit, "memory-limit", store.DefaultMemoryLimit, "kubesift's --memory-limit for the measured loads")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, pflag.ErrHelp) {
			return o, err
		}
		return o, usageError{err}
	}
	switch {
	case fs.NArg() > 0:
		return o, usagef("unexpected argument %q", fs.Arg(0))
	case o.runs < 1 || o.entries < 1:
		return o, usagef("--runs and --entries must be at least 1")
	case o.kind != "audit" && o.kind != "conntrack":
		return o, usagef("unknown --kind %q (want audit or conntrack)", o.kind)
	case o.generateOnly && (o.dir == "" || o.input != ""):
		return o, usagef("--generate-only needs --dir and no --input")
	}
	return o, nil
}

const doc = "Measure kubesift's ingestion against a bare DuckDB load of the same file into a database file,\n" +
	"in the same run: read_ndjson with explicit columns for audit logs, read_csv of whole lines into one\n" +
	"column for conntrack dumps. Without --input it first generates a realistic input. Each run\n" +
	"loads into fresh database files; the order of the loaders alternates between runs. Prints MB/s\n" +
	"of both, their ratio (audit target >= 0.8) and kubesift's peak RSS, per run and as medians.\n" +
	"For audit logs it also times a load of the events alone (--audit-endpoints=false)."

func run(ctx context.Context, args []string, stdout io.Writer) error {
	o, err := parseFlags(args, stdout)
	if err != nil {
		return err
	}
	bytes, err := parseSize(o.size)
	if err != nil {
		return usageError{err}
	}
	work := o.dir
	if work == "" {
		if work, err = os.MkdirTemp("", "kubesift-bench-"); err != nil {
			return err
		}
		defer os.RemoveAll(work)
	} else if err := os.MkdirAll(work, 0o755); err != nil {
		return err
	}
	path := o.input
	switch {
	case path != "":
	case o.kind == "audit":
		path, err = generateAuditLog(stdout, work, bytes, o.gzip, o.largeBodies)
	default:
		path, err = generateConntrackDump(stdout, work, o.entries)
	}
	if err != nil || o.generateOnly {
		return err
	}
	st, err := os.Stat(path)
	if err != nil {
		return err
	}
	self, err := os.Executable()
	if err != nil {
		return err
	}
	return measure(ctx, stdout, o, self, work, path, float64(st.Size())/1e6)
}

// measure loads path o.runs times with each loader and prints a row per run and the medians.
func measure(ctx context.Context, stdout io.Writer, o options, self, work, path string, mb float64) error {
	baseline, baseName := auditBaseline, "read_ndjson"
	ingestArgs := []string{"--kind", "audit"}
	if o.kind == "conntrack" {
		baseline, baseName = conntrackBaseline, "read_csv"
		ingestArgs = []string{"--kind", "conntrack", "--node", "bench", "--at", "2026-11-21T00:00:00Z"}
	}
	fmt.Fprintf(stdout, "input %s: %.0f MB on disk\n", path, mb)
	// For audit logs the second kubesift column is the load of audit_events alone, without the
	// endpoint states derived from audit bodies.
	variant := map[bool][]string{true: {"--audit-endpoints=false"}, false: nil}[o.kind == "audit"]
	fmt.Fprintf(stdout, "%-4s %14s %14s %7s %12s %14s %7s %12s\n", "run", baseName, "kubesift", "ratio", "peak RSS", "events only", "ratio", "peak RSS")
	var base, ours, ratios, ours2, ratios2, rss, rss2 []float64
	for i := 0; i < o.runs; i++ {
		var b, k, k2 time.Duration
		var peak, peak2 int64
		var err error
		bench := func() error {
			db := filepath.Join(work, "baseline.duckdb")
			removeDB(db)
			defer removeDB(db)
			b, err = timeBaseline(ctx, baseline, db, path)
			return err
		}
		mine := func() error {
			db := filepath.Join(work, "kubesift.duckdb")
			removeDB(db)
			defer removeDB(db)
			k, peak, err = timeIngest(ctx, self, append(ingestArgs, "--quiet", "--memory-limit", o.memoryLimit, "--db", db, path))
			return err
		}
		mineOnly := func() error {
			if variant == nil {
				return nil
			}
			db := filepath.Join(work, "kubesift-events.duckdb")
			removeDB(db)
			defer removeDB(db)
			k2, peak2, err = timeIngest(ctx, self, append(append(ingestArgs, variant...), "--quiet", "--memory-limit", o.memoryLimit, "--db", db, path))
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
		fmt.Fprintf(stdout, "%-4d %s\n", i+1, benchRow(base[i], ours[i], ratios[i], rss[i], ours2, ratios2, rss2, i))
	}
	fmt.Fprintf(stdout, "%-4s %s\n", "med", benchRow(median(base), median(ours), median(ratios), median(rss),
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
