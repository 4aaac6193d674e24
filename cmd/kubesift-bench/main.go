// Command kubesift-bench measures kubesift's ingestion against a bare DuckDB load of the same
// file (with DuckDB's defaults and with kubesift's settings), in the same run. It generates its input (internal/auditgen for audit logs) and lives
// outside the kubesift binary, which therefore links no generator. Run it from the repository:
//
//	go run -tags duckdb_arrow ./cmd/kubesift-bench --size 1GB
//	go run -tags duckdb_arrow ./cmd/kubesift-bench --kind conntrack
//	go run -tags duckdb_arrow ./cmd/kubesift-bench --generate-only --dir /tmp/bench --size 2GB
//
// Every load runs in a process of its own, so that each has its own peak memory: the program
// re-executes itself as `kubesift-bench kubesift ingest ...` (the kubesift command line) and as
// `kubesift-bench baseline ...` (the bare DuckDB load).
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

// baselineArg as the first argument makes this program run one baseline load (runBaseline):
// baseline SETTINGS MEMORY-LIMIT STATEMENT DB INPUT (STATEMENT names one of baselineStatements).
const baselineArg = "baseline"

func main() {
	// the measured loads and baselines run with the memory settings of kubesift itself
	if err := cli.SetDuckDBAllocator(); err != nil {
		fmt.Fprintf(os.Stderr, "kubesift-bench: warning: %v\n", err)
	}
	cli.SetGoMemoryLimit()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if len(os.Args) > 1 && os.Args[1] == kubesiftArg {
		os.Exit(cli.Run(ctx, os.Args[2:], os.Stdout, os.Stderr))
	}
	if len(os.Args) == 7 && os.Args[1] == baselineArg {
		if err := runBaseline(ctx, os.Args[2], os.Args[3], os.Args[4], os.Args[5], os.Args[6]); err != nil {
			fmt.Fprintf(os.Stderr, "kubesift-bench: %v\n", err)
			os.Exit(cli.ExitError)
		}
		return
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
	mix, samples, baseDB                string
	entries, runs, copies, chainLength  int
	shift                               time.Duration
	gzip, generateOnly                  bool
	largeBodies                         float64
}

// The generated audit mixes (--mix).
const (
	mixBench        = "bench"
	mixSamples      = "samples"
	mixWatchStreams = "watchstreams"
)

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
	fs.StringVar(&o.mix, "mix", mixBench, "generated audit log: bench (internal/auditgen), samples (the recordings under --samples, replicated with fresh audit IDs and shifted times) or watchstreams (long-lived clients re-watching one collection each, --chain-length watches per client)")
	fs.IntVar(&o.chainLength, "chain-length", 1000, "watches per client of --mix watchstreams")
	fs.StringVar(&o.samples, "samples", "samples", "directory of recordings for --mix samples (its */audit.log and */audit.log.gz)")
	fs.StringVar(&o.baseDB, "base-db", "", "kubesift's loads append to a copy of this database instead of an empty one (the baselines still load into an empty file)")
	fs.IntVar(&o.copies, "copies", 0, "with --generate-only and --input: write this many copies of the input into --dir, copy N with fresh audit IDs and times shifted by N × --shift")
	fs.DurationVar(&o.shift, "shift", 24*time.Hour, "time shift between the copies of --copies")
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
	case o.mix != mixBench && o.mix != mixSamples && o.mix != mixWatchStreams:
		return o, usagef("unknown --mix %q (want %s, %s or %s)", o.mix, mixBench, mixSamples, mixWatchStreams)
	case o.chainLength < 1 || (fs.Changed("chain-length") && o.mix != mixWatchStreams):
		return o, usagef("--chain-length must be at least 1, and only with --mix %s", mixWatchStreams)
	case o.copies < 0 || o.shift <= 0:
		return o, usagef("--copies must not be negative and --shift must be positive")
	case o.copies > 0 && (!o.generateOnly || o.input == "" || o.dir == ""):
		return o, usagef("--copies needs --generate-only, --input and --dir")
	case o.generateOnly && (o.dir == "" || (o.input != "") != (o.copies > 0)):
		return o, usagef("--generate-only needs --dir, and --input only with --copies")
	case o.input != "" && fs.Changed("mix"):
		return o, usagef("--mix generates an input: not with --input")
	}
	return o, nil
}

const doc = "Measure kubesift's ingestion against a bare DuckDB load of the same file into a database file,\n" +
	"in the same run. For audit logs two baselines: read_ndjson building the audit_events table (39 of\n" +
	"the 50 it stores, the same names, types and SQL expressions; see BENCHMARKS.md) and read_ndjson of\n" +
	"the 17 top-level fields; for conntrack dumps read_csv of whole lines into one column. Each runs once\n" +
	"with DuckDB's defaults and once with kubesift's settings (attach options, row group size,\n" +
	"--memory-limit; the audit_events table itself, with its columns' compressions). Without --input\n" +
	"it first generates the input: --mix bench (internal/auditgen) or\n" +
	"--mix samples (the real recordings replicated with fresh audit IDs and shifted times).\n" +
	"Each load runs in its own process into a fresh database file (kubesift's into a copy of --base-db\n" +
	"when given); the order of the loaders alternates between runs. Prints each load's wall time, MB/s\n" +
	"(of the file on disk), peak RSS and CPU time, kubesift's speed relative to the faster baseline of\n" +
	"each kind (audit target >= 0.8) and its CPU time relative to theirs, per run and as medians. For\n" +
	"audit logs it also times a load of the events alone (--audit-endpoints=false)."

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
	case o.copies > 0:
		return generateCopies(stdout, work, o)
	case path != "":
	case o.kind == "audit":
		path, err = generateAuditLog(stdout, work, bytes, o)
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

// loader is one way of loading the input, run in a child process of its own (args for a database
// file). A baseline belongs to a group (its statement); kubesift's loads have none.
type loader struct {
	name, group string
	args        func(db string) []string
}

// loaders returns the baselines, each with DuckDB's defaults and with kubesift's settings, and
// kubesift's ingest; for audit logs the baselines are the audit_events table and the 17
// top-level fields, and kubesift's load of the events alone, without the endpoint states derived
// from audit bodies, is timed too.
func loaders(o options, path string) []loader {
	groups, ingestArgs := []string{"audit-table", "audit-17"}, []string{"--kind", "audit"}
	if o.kind == "conntrack" {
		groups, ingestArgs = []string{"conntrack"}, []string{"--kind", "conntrack", "--node", "bench", "--at", "2026-11-21T00:00:00Z"}
	}
	var ls []loader
	for _, g := range groups {
		for _, settings := range []string{settingsDefaults, settingsProduct} {
			ls = append(ls, loader{g + " " + settings, g, func(db string) []string {
				return []string{baselineArg, settings, o.memoryLimit, g, db, path}
			}})
		}
	}
	ingest := func(name string, extra ...string) loader {
		return loader{name, "", func(db string) []string {
			args := append([]string{kubesiftArg, "ingest"}, ingestArgs...)
			return append(append(args, extra...), "--quiet", "--memory-limit", o.memoryLimit, "--db", db, path)
		}}
	}
	ls = append(ls, ingest("kubesift"))
	if o.kind == "audit" {
		ls = append(ls, ingest("kubesift events only", "--audit-endpoints=false"))
	}
	return ls
}

// measure loads path o.runs times with each loader, each into a fresh database file (kubesift's
// loads into a copy of o.baseDB when given), alternating the order between runs, and prints each
// load's speed, peak RSS and CPU time, and per kubesift loader its speed relative to the faster
// baseline of each group in the same run, and the least CPU time of the group's baselines over
// its own; then the medians.
func measure(ctx context.Context, stdout io.Writer, o options, self, work, path string, mb float64) error {
	fmt.Fprintf(stdout, "input %s: %.0f MB on disk\n", path, mb)
	ls := loaders(o, path)
	var groups []string
	for _, l := range ls {
		if l.group != "" && !slices.Contains(groups, l.group) {
			groups = append(groups, l.group)
		}
	}
	speed := make([][]float64, len(ls))
	wall := make([][]float64, len(ls))
	rss := make([][]float64, len(ls))
	cpu := make([][]float64, len(ls))
	ratio := make([][][]float64, len(ls))    // [loader][group][run]
	cpuRatio := make([][][]float64, len(ls)) // [loader][group][run]
	for i, l := range ls {
		if l.group == "" {
			ratio[i] = make([][]float64, len(groups))
			cpuRatio[i] = make([][]float64, len(groups))
		}
	}
	header := fmt.Sprintf("%-4s %-24s %9s %12s %12s %9s", "run", "loader", "wall", "speed", "peak RSS", "CPU")
	for _, g := range groups {
		header += fmt.Sprintf(" %14s", "vs "+g)
	}
	for _, g := range groups {
		header += fmt.Sprintf(" %18s", "CPU vs "+g)
	}
	fmt.Fprintln(stdout, header)
	for run := 0; run < o.runs; run++ {
		took := make([]childRun, len(ls))
		for k := range ls {
			i := k
			if run%2 == 1 {
				i = len(ls) - 1 - k
			}
			db := filepath.Join(work, fmt.Sprintf("load-%d.duckdb", i))
			removeDB(db)
			if o.baseDB != "" && ls[i].group == "" {
				if err := store.CopyDatabase(db, o.baseDB); err != nil {
					return err
				}
			}
			r, err := timeChild(ctx, self, ls[i].args(db))
			removeDB(db)
			if err != nil {
				return err
			}
			took[i] = r
			wall[i] = append(wall[i], r.wall.Seconds())
			speed[i] = append(speed[i], mb/r.wall.Seconds())
			rss[i] = append(rss[i], float64(r.peak)/(1<<20))
			cpu[i] = append(cpu[i], r.cpu.Seconds())
		}
		for i, l := range ls {
			line := fmt.Sprintf("%-4d %-24s %7.1f s %7.1f MB/s %8.0f MiB %7.1f s", run+1, l.name, wall[i][run], speed[i][run], rss[i][run], cpu[i][run])
			if l.group == "" {
				least := func(group string, of func(childRun) time.Duration) float64 {
					var m time.Duration
					for j, b := range ls {
						if b.group == group && (m == 0 || of(took[j]) < m) {
							m = of(took[j])
						}
					}
					return m.Seconds() / of(took[i]).Seconds()
				}
				for g, group := range groups {
					ratio[i][g] = append(ratio[i][g], least(group, func(r childRun) time.Duration { return r.wall }))
					line += fmt.Sprintf(" %14.2f", ratio[i][g][run])
				}
				for g, group := range groups {
					cpuRatio[i][g] = append(cpuRatio[i][g], least(group, func(r childRun) time.Duration { return r.cpu }))
					line += fmt.Sprintf(" %18.2f", cpuRatio[i][g][run])
				}
			}
			fmt.Fprintln(stdout, line)
		}
	}
	for i, l := range ls {
		line := fmt.Sprintf("%-4s %-24s %7.1f s %7.1f MB/s %8.0f MiB %7.1f s", "med", l.name, median(wall[i]), median(speed[i]), median(rss[i]), median(cpu[i]))
		for g := range ratio[i] {
			line += fmt.Sprintf(" %14.2f", median(ratio[i][g]))
		}
		for g := range cpuRatio[i] {
			line += fmt.Sprintf(" %18.2f", median(cpuRatio[i][g]))
		}
		fmt.Fprintln(stdout, line)
	}
	fmt.Fprintln(stdout, "(ratio: kubesift's speed over the faster baseline of the group in the same run; audit target >= 0.8;")
	fmt.Fprintln(stdout, " CPU: the least CPU time, user and system, of the group's baselines in the same run over kubesift's)")
	return nil
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
