package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/KimMachineGun/automemlimit/memlimit"
	"github.com/dustin/go-humanize"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/kubesift/kubesift/ingest"
	"github.com/kubesift/kubesift/store"
)

// DefaultDB is the database file used when neither --db nor $KUBESIFT_DB is set.
const DefaultDB = "kubesift.duckdb"

// Version is set at build time with -ldflags "-X github.com/kubesift/kubesift/cli.Version=...".
var Version = "dev"

type env struct {
	stdout, stderr io.Writer
	stdin          io.Reader
	getenv         func(string) string
	isTerminal     func(fd uintptr) bool
	// describe, when set, receives a verb's flag set on -h instead of the usage text being
	// printed: docs/cli.md is generated from it.
	describe func(name, args, doc string, fs *pflag.FlagSet)
	// containerMemory returns the memory the process's container allows (its memory cgroup's
	// limit), to fit DuckDB's default memory limit to; nil leaves the default as it is.
	containerMemory func() (uint64, error)
}

type verb struct {
	name    string
	summary string
	run     func(ctx context.Context, e *env, args []string) error
}

func verbs() []verb {
	return []verb{
		{"ingest", "load evidence files into a database", runIngest},
		{"query", "run SQL over the loaded tables", runQuery},
		{"run", "ingest into a temporary database (or --db) and analyze it", runRun},
		{"analyze", "run the rules over a database and report findings", runAnalyze},
		{"rules", "list the rules, or show one", runRules},
		{"policy", "print the audit policy under which every rule sees what it needs; with --db, check the loaded logs against it", runPolicy},
		{"timeline", "everything known about one object, in time order", runTimeline},
		{"schema", "document every table and column", runSchema},
		{"snapshot", "take a live snapshot of Endpoints, EndpointSlices, Services, Pods, Leases and leader-lock ConfigMaps", runSnapshot},
		{"export", "export the tables to csv, xlsx or parquet", runExport},
		{"version", "print the version", runVersion},
		{"completion", "print the shell completion script (bash, zsh or fish)", runCompletion},
	}
}

// usageError marks errors in the command line itself.
type usageError struct{ err error }

func (u usageError) Error() string { return u.err.Error() }
func (u usageError) Unwrap() error { return u.err }

func usagef(format string, args ...any) error { return usageError{fmt.Errorf(format, args...)} }

// Run runs kubesift with args (without the program name) and returns the exit code.
func Run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	e := &env{stdout: stdout, stderr: stderr, stdin: os.Stdin, getenv: os.Getenv, isTerminal: isTerminal, containerMemory: memlimit.FromCgroup}
	if f, ok := stdout.(interface{ Fd() uintptr }); ok && e.isTerminal(f.Fd()) {
		e.stdout = terminal{stdout} // binary formats refuse to write to it
	}
	return e.main(ctx, args)
}

func (e *env) main(ctx context.Context, args []string) int {
	if len(args) == 0 || args[0] == "-h" || args[0] == "--help" || args[0] == "help" {
		e.usage(e.stdout)
		if len(args) == 0 {
			return ExitUsage
		}
		return ExitOK
	}
	if args[0] == cobra.ShellCompRequestCmd || args[0] == cobra.ShellCompNoDescRequestCmd {
		return e.complete(ctx, args)
	}
	if args[0] == "--version" {
		args[0] = "version"
	}
	for _, v := range verbs() {
		if v.name != args[0] {
			continue
		}
		err := v.run(ctx, e, args[1:])
		code := exitCode(err)
		if err != nil && ctx.Err() != nil && code != ExitUsage {
			code, err = ExitInterrupted, fmt.Errorf("interrupted: %w", err)
		}
		switch {
		case err == nil || errors.Is(err, pflag.ErrHelp):
			return ExitOK
		case code == ExitFindings:
			fmt.Fprintln(e.stderr, "kubesift:", err)
		case code == ExitUsage:
			fmt.Fprintf(e.stderr, "kubesift %s: %v\nRun 'kubesift %s -h' for usage.\n", v.name, err, v.name)
		default:
			fmt.Fprintf(e.stderr, "kubesift %s: %v\n", v.name, err)
		}
		return code
	}
	fmt.Fprintf(e.stderr, "kubesift: unknown command %q\n", args[0])
	e.usage(e.stderr)
	return ExitUsage
}

func (e *env) usage(w io.Writer) {
	fmt.Fprintln(w, "kubesift sifts Kubernetes audit logs, conntrack dumps and endpoint snapshots for traffic pathologies.")
	fmt.Fprintln(w, "\nUsage: kubesift COMMAND [flags] [args]\n\nCommands:")
	for _, v := range verbs() {
		fmt.Fprintf(w, "  %-10s %s\n", v.name, v.summary)
	}
	fmt.Fprintln(w, "\nRun 'kubesift COMMAND -h' for a command's flags.")
	printExitCodes(w)
}

// flags returns a flag set for a verb with the flags every verb accepts.
func newFlags(e *env, name, args, doc string) (*pflag.FlagSet, *commonFlags) {
	fs := pflag.NewFlagSet(name, pflag.ContinueOnError)
	fs.SetOutput(e.stderr)
	c := &commonFlags{stderr: e.stderr, flags: fs, containerMemory: e.containerMemory}
	fs.BoolVarP(&c.quiet, "quiet", "q", false, "no progress bars or summaries (errors still go to stderr)")
	fs.StringVar(&c.memoryLimit, "memory-limit", store.DefaultMemoryLimit, "DuckDB memory limit (e.g. 512MB, 2GB); beyond it DuckDB spills to temporary files, and rules that run in pieces use pieces in proportion to it. "+
		"Unset, in a container allowed less than the default and 640 MiB, it is the container's limit less 640 MiB (at least 200 MiB), and kubesift says so")
	fs.BoolVar(&c.hugePages, "huge-pages", true, "advise transparent huge pages for DuckDB's block pool while the rules or queries read a database of a quarter of --memory-limit or more (a dataset's Parquet files of a twelfth); false keeps it in small pages, for a host where compacting memory into huge pages stalls")
	fs.Usage = func() {
		if e.describe != nil {
			e.describe(name, args, doc, fs)
			return
		}
		fmt.Fprintf(e.stdout, "Usage: kubesift %s [flags] %s\n\n%s\n\nFlags:\n%s", name, args, doc, fs.FlagUsages())
	}
	fs.SetOutput(io.Discard) // parse errors are reported once, by main
	return fs, c
}

type commonFlags struct {
	quiet       bool
	db          string
	memoryLimit string
	hugePages   bool
	stderr      io.Writer // for warnings, printed even with --quiet
	flags       *pflag.FlagSet
	// containerMemory and containerChecked: see duckDBMemoryLimit
	containerMemory  func() (uint64, error)
	containerChecked bool
}

func (c *commonFlags) addDB(fs *pflag.FlagSet, e *env, help string) {
	def := e.getenv("KUBESIFT_DB")
	if def == "" {
		def = DefaultDB
	}
	fs.StringVar(&c.db, "db", def, help+" (default from $KUBESIFT_DB, else "+DefaultDB+")")
}

// parse parses args (pflag prints the usage for -h itself) and turns flag errors into usage
// errors.
func parse(fs *pflag.FlagSet, args []string) error {
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, pflag.ErrHelp) {
			return err
		}
		return usageError{err}
	}
	if f := fs.Lookup("memory-limit"); f != nil {
		if _, err := store.ParseMemoryLimit(f.Value.String()); err != nil {
			return usageError{fmt.Errorf("--memory-limit: %w", err)}
		}
	}
	return nil
}

// logWriter returns where summaries go: stderr, or nowhere with --quiet.
func (e *env) logWriter(quiet bool) io.Writer {
	if quiet {
		return nil
	}
	return e.stderr
}

// openDataset opens one cluster's days [from, to] of the dataset dir (store.OpenDataset) with the
// memory settings of the command line.
func (c *commonFlags) openDataset(ctx context.Context, dir, cluster string, from, to *time.Time) (*store.DB, error) {
	return store.OpenDataset(ctx, dir, ingest.Schema(), cluster, from, to, store.Options{MemoryLimit: c.duckDBMemoryLimit(), SmallPages: !c.hugePages})
}

// openDB opens the database and says when opening it removed the rows of an interrupted load or
// upgraded a database an older kubesift wrote.
func (c *commonFlags) openDB(ctx context.Context, path string, readOnly bool) (*store.DB, error) {
	db, err := store.Open(ctx, path, ingest.Schema(), store.Options{ReadOnly: readOnly, MemoryLimit: c.duckDBMemoryLimit(), SmallPages: !c.hugePages,
		BeforeRewrite: func(table string) {
			fmt.Fprintf(c.stderr, "kubesift: %s: rewriting %s for this kubesift, once (minutes for a large database)\n", path, table)
		}})
	if err != nil {
		return nil, err
	}
	if len(db.Repaired) > 0 {
		var parts []string
		for _, t := range db.Schema {
			if n := db.Repaired[t.Name]; n > 0 {
				parts = append(parts, fmt.Sprintf("%d %s", n, t.Name))
			}
		}
		fmt.Fprintf(c.stderr, "kubesift: %s: removed the rows of an interrupted load (%s); load its file again\n", path, strings.Join(parts, ", "))
	}
	if len(db.Upgraded) > 0 || len(db.Dropped) > 0 {
		var changes []string
		if len(db.Upgraded) > 0 {
			changes = append(changes, "added "+strings.Join(db.Upgraded, ", "))
		}
		if len(db.Dropped) > 0 {
			changes = append(changes, "dropped "+strings.Join(db.Dropped, ", "))
		}
		fmt.Fprintf(c.stderr, "kubesift: %s: upgraded from an older kubesift's (%s)\n", path, strings.Join(changes, "; "))
	}
	if len(db.Derived) > 0 {
		fmt.Fprintf(c.stderr, "kubesift: %s: filled %s for the loads without their rows (an ingest stopped before it derived them, or an older kubesift's)\n",
			path, strings.Join(db.Derived, ", "))
	}
	if db.Converted.From > 0 {
		fmt.Fprintf(c.stderr, "kubesift: %s: rewritten in DuckDB %s's storage format, once: %s instead of %s\n",
			path, store.StorageVersion, humanize.IBytes(uint64(db.Converted.To)), humanize.IBytes(uint64(db.Converted.From)))
	}
	if db.ConvertError != nil {
		fmt.Fprintf(c.stderr, "kubesift: %s: kept in DuckDB's older storage format, which is larger and slower to analyse: %v\n", path, db.ConvertError)
	}
	return db, nil
}

func runVersion(ctx context.Context, e *env, args []string) error {
	fs, _ := newFlags(e, "version", "", "Print kubesift's version.")
	if err := parse(fs, args); err != nil {
		return err
	}
	fmt.Fprintf(e.stdout, "kubesift %s (DuckDB %s)\n", Version, strings.TrimPrefix(store.DuckDBVersion(ctx), "v"))
	return nil
}
