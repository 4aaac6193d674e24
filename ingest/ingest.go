package ingest

import (
	"bytes"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/kubesift/kubesift/internal/load"
	"github.com/kubesift/kubesift/internal/source"
	"github.com/kubesift/kubesift/store"
)

// Options control a load.
type Options struct {
	Kind             Kind
	MaxLineBytes     int  // longest line kept; 0 means DefaultMaxLineBytes
	KeepSecrets      bool // load secrets unredacted (bodies of Secrets and token requests, tokens elsewhere)
	NoAuditEndpoints bool // do not derive endpoint_addresses rows from Endpoints bodies in audit events
	Progress         Progress
	Log              io.Writer // one summary line per file; nil for none
	Node             string    // node of conntrack evidence outside a <node>/<time>/ bundle
	At               time.Time // capture time of evidence without one in its path
	Cluster          string    // cluster of the evidence (of audit events: over what their envelope says)
	ClusterPerDir    bool      // the first directory level under a directory argument names the cluster
	APIServer        string    // apiserver of the audit events, over what their envelope says
	// Settling, when set, is called with the bytes read (decompressed) when a file has been read
	// and its rows are in, as the checks over them (rejected rows, duplicates) and the commit
	// begin; the function it returns, unless nil, is called when that file's load has ended: its
	// transaction committed or rolled back (which several small files may share: groupSize).
	Settling func(readBytes int64) (done func())
}

// releaseCacheBytes is how much input Ingest loads before it has the blocks DuckDB keeps cached
// of the database evicted (store.ReleaseCache), and it does so once more at its end: they would
// stay cached up to the memory limit, beside what the next load and, in kubesift run, the rules
// need. Evicting after every file of 100 MB made loading 10M events in 86 files 10-15% slower
// (peak 661-677 MiB); every 1 GiB, as fast as without (789-797 MiB, against 1,166-1,202 MiB
// without; BENCHMARKS.md).
var releaseCacheBytes int64 = 1 << 30

var errUnknownKind = errors.New("cannot tell what kind of evidence this is")

// Progress receives the progress of each file's load.
type Progress interface {
	Begin(name string, size int64) // size is -1 when unknown (stdin)
	Update(diskBytes, lines int64)
	End()
}

// FileResult says what happened to one input.
type FileResult struct {
	Path       string
	Kind       Kind
	LoadID     int64
	Lines      int64
	Rows       int64
	Rejected   int64
	Warnings   int64 // rows kept with a field that could not be read (warnings in ingest_errors)
	Duplicates int64
	FirstError string // "line N: reason" of the first rejected line
	Skipped    string // why the file was not loaded at all (e.g. already loaded, or its error)
	Err        error  // the error that kept the file from loading (also in Ingest's error)
	Note       string
	Elapsed    time.Duration // of the file's load, or of its run's (Together)
	ReadBytes  int64         // of the file (decompressed), from where its load started
	Together   int           // the files of its run, when it was loaded with others (RunLoader)
}

// Ingester loads inputs into one database.
type Ingester struct {
	db  *store.DB
	opt Options
	// starts are the first lines of the files in ingest_files (or loaded since they were read),
	// by kind and cluster: a file whose first line is not among them was not loaded before, and
	// resumePoint need not ask.
	starts map[loadStart]bool
}

// loadStart is what resumePoint looks for among the earlier loads of a file: its kind, its first
// line (source.Source.Identity) and the cluster it is loaded for.
type loadStart struct{ kind, identity, cluster string }

// New returns an Ingester writing into db.
func New(db *store.DB, opt Options) *Ingester {
	if opt.Kind == "" {
		opt.Kind = KindAuto
	}
	if opt.MaxLineBytes <= 0 {
		opt.MaxLineBytes = DefaultMaxLineBytes
	}
	return &Ingester{db: db, opt: opt}
}

// Ingest loads every file of files (see ExpandPaths), each in its own transaction but for runs
// of small files, which share one (groupSize), and has the database's cached blocks evicted (see
// releaseCacheBytes). A file that fails is reported and the others are still loaded; the
// returned error joins every failure.
// Every input that is not loaded, skipped or failed, is a result with the reason in Skipped and
// a row of ingest_files. When the database takes no more writes (a full disk: a commit or that
// row fails), Ingest stops there, and says once how many inputs after it it did not try.
func (in *Ingester) Ingest(ctx context.Context, files []Input) ([]FileResult, error) {
	var results []FileResult
	var errs []error
	var uncached int64  // bytes read since the cache was last released
	var cachedLoad bool // a file was loaded since then
	var stopped bool    // the database took no more writes
	// settle takes the result of files[i] in; it reports whether to stop.
	settle := func(i int, f Input, r FileResult) (stop bool) {
		if errors.Is(r.Err, errUnknownKind) && f.FromWalk {
			r.Skipped, r.Err = skippedNotEvidence, nil
		}
		if r.Err != nil {
			errs = append(errs, r.Err)
			r.Skipped = r.Err.Error()
		}
		stop = errors.As(r.Err, new(writeError))
		if r.Err == nil && r.Skipped == "" {
			uncached, cachedLoad = uncached+r.ReadBytes, true
			if uncached >= releaseCacheBytes {
				if err := in.db.ReleaseCache(ctx); err != nil {
					errs = append(errs, err)
				}
				uncached, cachedLoad = 0, false
			}
		}
		if r.Skipped != "" {
			if err := in.recordSkipped(ctx, r); err != nil {
				if r.Err == nil {
					errs = append(errs, fmt.Errorf("recording that %s was not loaded: %w", r.Path, err))
				}
				stop = true
			}
		}
		results = append(results, r)
		in.logResult(r)
		if stop { // the rest would fail the same way, each with the same error
			stopped = true
			if rest := len(files) - i - 1; rest > 0 {
				errs = append(errs, fmt.Errorf("the database takes no more writes: %s after %s not tried", load.Plural(rest, "input"), r.Path))
			}
		}
		return stop
	}
	alone := 0 // files before this index are loaded one by one: their group failed
	for i := 0; i < len(files) && !stopped; {
		if ctx.Err() != nil {
			errs = append(errs, ctx.Err())
			break
		}
		if i >= alone {
			if n := groupSize(files[i:]); n > 1 {
				if rs, ok := in.ingestGroup(ctx, files[i:i+n]); ok {
					for k, r := range rs {
						if settle(i+k, files[i+k], r) {
							break
						}
					}
					i += n
					continue
				}
				alone = i + n
				continue // unless interrupted, the group's files one by one
			}
		}
		f := files[i]
		r := FileResult{Path: f.Path, Skipped: f.Skip, Err: f.Err}
		if f.Err == nil && f.Skip == "" {
			r, r.Err = in.ingestFile(ctx, f.Path, in.clusterOf(f))
		}
		settle(i, f, r)
		i++
	}
	if ctx.Err() == nil && !stopped { // else the next open derives them
		if err := in.db.DeriveNewerLoads(ctx); err != nil {
			errs = append(errs, fmt.Errorf("deriving the tables derived from the loaded rows (the next open derives them): %w", err))
		}
	}
	if cachedLoad {
		if err := in.db.ReleaseCache(ctx); err != nil {
			errs = append(errs, err)
		}
	}
	in.logSkipped(results)
	return results, errors.Join(errs...)
}

// Small files share a transaction: groupSize counts the files at the start of files that are
// regular files of at most groupFileBytes on disk, up to groupBytes together and groupFiles of
// them. A file's own transaction cost more than loading it: 170 files of 5 MB of audit log loaded
// in 35.6-39.1 s against 7.0-8.6 s for them as one file, each commit 64 ms; and a group has a
// cost of its own: in groups of 64 MiB, 11.4-12.2 s (BENCHMARKS.md). A process killed in a group
// loses the whole group, so both bounds keep what it loses small: 256 MiB of audit log loads in
// about 2.5 s, 1,000 files of 200 events in about 6.5 s. A file whose load fails in a group has
// the group loaded again file by file.
const (
	groupFileBytes = 16 << 20
	groupFiles     = 1000
)

var groupBytes int64 = 256 << 20

// groupSize is the number of files at the start of files to load in one transaction: 1 when
// the first is not small (or not a regular file, or not to be read).
func groupSize(files []Input) int {
	var total int64
	for n, f := range files {
		if n == groupFiles || f.Err != nil || f.Skip != "" {
			return max(n, 1)
		}
		info, err := os.Stat(f.Path)
		if err != nil || !info.Mode().IsRegular() || info.Size() > groupFileBytes || total+info.Size() > groupBytes {
			return max(n, 1)
		}
		total += info.Size()
	}
	return max(len(files), 1)
}

// recordSkipped adds an input that was not loaded to ingest_files, with the reason.
func (in *Ingester) recordSkipped(ctx context.Context, r FileResult) error {
	_, err := in.db.ExecContext(context.WithoutCancel(ctx), `INSERT INTO ingest_files BY NAME SELECT
		$kind AS kind, $source_file AS source_file, $skipped AS skipped, now() AS started_at, now() AS finished_at`,
		sql.Named("kind", nullIfEmpty(string(r.Kind))), sql.Named("source_file", r.Path), sql.Named("skipped", r.Skipped))
	return err
}

// writeError is a failure to write the database (a full disk), not a fault of the input.
type writeError struct{ err error }

func (e writeError) Error() string { return e.err.Error() }
func (e writeError) Unwrap() error { return e.err }

const (
	skippedNotEvidence = "not evidence kubesift reads"
	skippedEmpty       = "empty file"
	skippedNotRegular  = "not a regular file (a FIFO, device or socket)"
)

// logSkipped sums up, in one line, the files of walked directories that were not evidence or
// were empty, rather than a line each.
func (in *Ingester) logSkipped(results []FileResult) {
	if in.opt.Log == nil {
		return
	}
	var notEvidence, empty []string
	for _, r := range results {
		switch r.Skipped {
		case skippedNotEvidence:
			notEvidence = append(notEvidence, r.Path)
		case skippedEmpty:
			empty = append(empty, r.Path)
		}
	}
	var parts []string
	if len(notEvidence) > 0 {
		parts = append(parts, fmt.Sprintf("%s that %s not evidence (e.g. %s)", load.Plural(len(notEvidence), "file"), map[bool]string{true: "is", false: "are"}[len(notEvidence) == 1], notEvidence[0]))
	}
	if len(empty) > 0 {
		parts = append(parts, load.Plural(len(empty), "empty file"))
	}
	if len(parts) > 0 {
		fmt.Fprintf(in.opt.Log, "skipped %s\n", strings.Join(parts, " and "))
	}
}

func (in *Ingester) logResult(r FileResult) {
	if in.opt.Log == nil {
		return
	}
	switch {
	case r.Skipped == skippedNotEvidence || r.Skipped == skippedEmpty || r.Err != nil:
		return // summed up by logSkipped, or an error the caller reports
	case r.Skipped != "":
		fmt.Fprintf(in.opt.Log, "%s: skipped: %s\n", r.Path, r.Skipped)
		return
	default:
		fmt.Fprintf(in.opt.Log, "%s: %s, %s loaded", r.Path, r.Kind, load.Plural(int(r.Rows), "row"))
		if r.Duplicates > 0 {
			fmt.Fprintf(in.opt.Log, ", %s skipped", load.Plural(int(r.Duplicates), "duplicate"))
		}
		fmt.Fprintf(in.opt.Log, " in %.1fs", r.Elapsed.Seconds())
		if r.Together > 1 {
			fmt.Fprintf(in.opt.Log, " (a run of %d files)", r.Together)
		}
		fmt.Fprintln(in.opt.Log)
	}
	if r.Rejected > 0 {
		fmt.Fprintf(in.opt.Log, "%s: %s rejected, first at %s (see table ingest_errors)\n", r.Path, load.Plural(int(r.Rejected), "line"), r.FirstError)
	}
	if r.Warnings > 0 {
		fmt.Fprintf(in.opt.Log, "%s: %s kept with a field that could not be read, now NULL (see table ingest_errors, severity warning)\n", r.Path, load.Plural(int(r.Warnings), "row"))
	}
	if r.Note != "" {
		fmt.Fprintf(in.opt.Log, "%s: %s\n", r.Path, r.Note)
	}
}

// DefaultMaxLineBytes is the longest line (one event with its bodies) kept by default.
const DefaultMaxLineBytes = source.DefaultMaxLineBytes

// ingestFile loads one file in a transaction of its own.
func (in *Ingester) ingestFile(ctx context.Context, path, cluster string) (FileResult, error) {
	start := time.Now()
	src, loader, r, err := in.open(ctx, path)
	if src == nil {
		return r, err
	}
	defer src.Close()
	conn, err := in.db.Conn(ctx)
	if err != nil {
		return r, fmt.Errorf("loading %s: %w", path, err)
	}
	defer conn.Close()
	var loaded []func()
	err = inTransaction(ctx, conn, path, func() (bool, error) {
		f, err := in.prepare(ctx, conn, map[string]any{}, src, loader, cluster, &r, &loaded)
		if f == nil || err != nil {
			return false, err
		}
		rec, err := in.settleLoad(ctx, f, start, &r, in.loadFiles(ctx, loader, []*load.File{f}))
		if rec == nil || err != nil {
			return false, err
		}
		return true, in.recordLoads(ctx, conn, []loadRecord{*rec})
	})
	r.Elapsed = time.Since(start)
	for _, done := range loaded {
		done()
	}
	return r, err
}

// runFiles bounds the files of a group loaded together by a RunLoader: each is an open file
// until the run is loaded, a compressed one parked (source.Park) without its decompressor. Each
// run costs a load's statements: 1,000 small files took 3.7-4.7 s in runs of 128, 2.9-3.5 s in
// runs of 512; gzipped and not parked, runs of 512 held 196 MB of decompressors and the garbage
// collector ran 422 times where runs of 128 ran it 23 times (BENCHMARKS.md).
var runFiles = 512

// ingestGroup loads files in one transaction, in order (see groupSize); consecutive files of a
// RunLoader's kind are loaded together, up to runFiles of them. A file it cannot open or tell the
// kind of is a result with that error, as from ingestFile. It returns false, with nothing of the
// files loaded, when a load or the commit failed: the caller loads them one by one then, so that
// the failure is its own file's and the others are kept.
func (in *Ingester) ingestGroup(ctx context.Context, inputs []Input) ([]FileResult, bool) {
	conn, err := in.db.Conn(ctx)
	if err != nil {
		return nil, false
	}
	defer conn.Close()
	shared := map[string]any{}
	results := make([]FileResult, len(inputs))
	var loaded []func()
	defer func() {
		for _, done := range loaded {
			done()
		}
	}()
	type prepared struct {
		i     int // in inputs
		f     *load.File
		start time.Time
	}
	var run []prepared // files of one loader, opened and given their load ids, to load together
	var runLoader Loader
	defer func() { // those of a group that stopped before loading them
		for _, p := range run {
			p.f.Src.Close()
		}
	}()
	loadRun := func() error {
		if len(run) == 0 {
			return nil
		}
		defer func() {
			for _, p := range run {
				p.f.Src.Close()
			}
			run = run[:0]
		}()
		files := make([]*load.File, len(run))
		for k, p := range run {
			files[k] = p.f
		}
		loadErr := in.loadFiles(ctx, runLoader, files)
		var recs []loadRecord
		for _, p := range run {
			rec, err := in.settleLoad(ctx, p.f, p.start, &results[p.i], loadErr)
			if err != nil {
				return err
			}
			if rec != nil {
				recs = append(recs, *rec)
			}
		}
		if err := in.recordLoads(ctx, conn, recs); err != nil {
			return err
		}
		for _, p := range run {
			results[p.i].Elapsed, results[p.i].Together = time.Since(run[0].start), len(run)
		}
		return nil
	}
	err = inTransaction(ctx, conn, inputs[0].Path+" and the small files after it", func() (bool, error) {
		for i, input := range inputs {
			start := time.Now()
			src, loader, r, err := in.open(ctx, input.Path)
			if src == nil {
				r.Err = err
				results[i] = r
				continue
			}
			_, together := loader.(RunLoader)
			// A file that resumePoint may find to be one of the run's is prepared after the run
			// is recorded: a resumable one with the same first line (it may continue where that
			// one stopped), another with the same name (it may be the same file again).
			seen := slices.ContainsFunc(run, func(p prepared) bool {
				if loader.Resumable() {
					return p.f.Src.Identity == src.Identity
				}
				return p.f.Src.Name == src.Name
			})
			if len(run) > 0 && (!together || loader.Kind() != runLoader.Kind() || len(run) == runFiles || seen) {
				if err := loadRun(); err != nil {
					src.Close()
					return false, err
				}
			}
			f, err := in.prepare(ctx, conn, shared, src, loader, in.clusterOf(input), &r, &loaded)
			results[i] = r
			if f == nil || err != nil {
				src.Close()
				if err != nil {
					return false, err
				}
				continue
			}
			run, runLoader = append(run, prepared{i: i, f: f, start: start}), loader
			src.Park() // a compressed file waits for its turn without its decompressor
			if !together {
				if err := loadRun(); err != nil {
					return false, err
				}
			}
		}
		return true, loadRun()
	})
	return results, err == nil
}

// open opens the file at path and finds its loader. It returns no source when the file is not
// to be loaded: the result says why (empty), or the error does.
func (in *Ingester) open(ctx context.Context, path string) (*source.Source, Loader, FileResult, error) {
	r := FileResult{Path: path}
	src, err := source.Open(ctx, path)
	if err != nil {
		return nil, nil, r, fmt.Errorf("reading %s: %w", path, err)
	}
	loader, err := in.loaderFor(src)
	if dmg := src.Damage(); len(dmg) > 0 && (err != nil || len(src.Head) == 0) {
		src.Close()
		// What little it holds is no evidence, or nothing, because it is damaged: an xz file cut
		// short, whose decoder hands out nothing before the damage, is not an empty file.
		return nil, nil, r, fmt.Errorf("reading %s: %w", path, dmg[0])
	}
	if len(bytes.TrimLeft(src.Head, " \t\r\n\ufeff")) == 0 && len(src.Head) < source.HeadBytes {
		src.Close()
		r.Skipped = skippedEmpty // nothing, or only blank lines
		return nil, nil, r, nil
	}
	if err != nil {
		src.Close()
		return nil, nil, r, err
	}
	r.Kind = Kind(loader.Kind())
	return src, loader, r, nil
}

// prepare makes the load of src with loader on conn, whose transaction the caller opened and
// ends; loadFiles gives it its load id. It returns no load when the file is not to be read
// (r.Skipped says why). shared is what the loads in that transaction keep for each other
// (load.File.Shared). What Options.Settling returns goes to loaded, for the caller to call once
// the transaction has ended.
func (in *Ingester) prepare(ctx context.Context, conn *sql.Conn, shared map[string]any, src *source.Source, loader Loader, cluster string, r *FileResult, loaded *[]func()) (*load.File, error) {
	f := &load.File{Kind: loader.Kind(), Src: src, Conn: conn, Shared: shared, Tables: loader.Tables(), Settings: in.settings(cluster), EndOffset: -1, EndLine: -1}
	if in.opt.Settling != nil {
		var settling bool
		f.OnRowsIn = func() {
			if !settling {
				settling = true
				if done := in.opt.Settling(f.ReadBytes); done != nil {
					*loaded = append(*loaded, done)
				}
			}
		}
	}
	if in.starts == nil {
		if err := in.readStarts(ctx, conn); err != nil {
			return nil, err
		}
	}
	if !in.starts[startOf(f)] {
		return f, nil // no earlier load to continue or to be
	}
	var err error
	if r.Skipped, err = resumePoint(ctx, f, loader.Resumable()); err != nil || r.Skipped != "" {
		return nil, err
	}
	return f, nil
}

func startOf(f *load.File) loadStart {
	return loadStart{kind: f.Kind, identity: f.Src.Identity, cluster: f.Settings.Cluster}
}

// readStarts reads the first lines of the files loaded before (Ingester.starts). A query per file
// cost more than a millisecond: 1.1 s of loading 1,000 small files (BENCHMARKS.md).
func (in *Ingester) readStarts(ctx context.Context, conn *sql.Conn) error {
	rows, err := conn.QueryContext(ctx, "SELECT DISTINCT kind, identity, coalesce(cluster, '') FROM ingest_files WHERE identity IS NOT NULL")
	if err != nil {
		return fmt.Errorf("reading the files loaded before: %w", err)
	}
	defer rows.Close()
	in.starts = map[loadStart]bool{}
	for rows.Next() {
		var s loadStart
		if err := rows.Scan(&s.kind, &s.identity, &s.cluster); err != nil {
			return fmt.Errorf("reading the files loaded before: %w", err)
		}
		in.starts[s] = true
	}
	return rows.Err()
}

// takeLoadIDs gives files their load ids, ascending in their order, with one statement. The ids
// come from a sequence and are committed on their own (on a connection of their own), before the
// loads: the id of a killed load is never given again (see store.Open's repair).
func (in *Ingester) takeLoadIDs(ctx context.Context, files []*load.File) error {
	rows, err := in.db.QueryContext(ctx, "SELECT nextval('"+store.LoadIDSequence+"') AS id FROM range($1) ORDER BY id", len(files))
	if err != nil {
		return fmt.Errorf("loading %s: taking load ids: %w", files[0].Src.Name, err)
	}
	defer rows.Close()
	n := 0
	for ; rows.Next() && n < len(files); n++ {
		if err := rows.Scan(&files[n].LoadID); err != nil {
			return fmt.Errorf("loading %s: taking load ids: %w", files[0].Src.Name, err)
		}
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("loading %s: taking load ids: %w", files[0].Src.Name, err)
	}
	if n < len(files) {
		return fmt.Errorf("loading %s: taking load ids: %d of %d", files[0].Src.Name, n, len(files))
	}
	return nil
}

// loadFiles gives files, prepared in the same transaction, their load ids and runs loader over
// them: Load for one file, with its progress shown, LoadRun for several.
func (in *Ingester) loadFiles(ctx context.Context, loader Loader, files []*load.File) error {
	if err := in.takeLoadIDs(ctx, files); err != nil {
		return err
	}
	if len(files) > 1 {
		return loader.(RunLoader).LoadRun(ctx, files)
	}
	stop := in.showProgress(files[0].Src)
	defer stop()
	return loader.Load(ctx, files[0])
}

// settleLoad fills r in from the load of f, which loadErr ended, and records the file's damage.
// It returns the load's row of ingest_files, for recordLoads; none when the load wrote nothing
// to commit.
func (in *Ingester) settleLoad(ctx context.Context, f *load.File, start time.Time, r *FileResult, loadErr error) (*loadRecord, error) {
	defer func() {
		r.LoadID, r.Lines, r.Rows, r.Rejected, r.Warnings, r.Duplicates = f.LoadID, f.Lines, f.Rows, f.Rejected, f.Warnings, f.Duplicates
		r.FirstError, r.Note, r.ReadBytes = f.FirstError, f.Note, f.ReadBytes
	}()
	if loadErr != nil {
		return nil, loadErr
	}
	if err := f.RecordDamage(ctx); err != nil {
		return nil, err
	}
	if f.StartOffset > 0 && f.Lines == 0 {
		r.Skipped = "no new data since the last load"
		return nil, nil // nothing to commit
	}
	rec := newLoadRecord(f, start)
	return &rec, nil
}

// loaderFor returns the loader of --kind, or of the kind DetectKind sees in src.
func (in *Ingester) loaderFor(src *source.Source) (Loader, error) {
	kind := in.opt.Kind
	if kind == KindAuto {
		k, ok := DetectKind(src.Name, src.Head)
		if !ok {
			evidence := KindNames()[1:]
			return nil, fmt.Errorf("reading %s: %w (not %s evidence); pass --kind", src.Name, errUnknownKind, strings.Join(evidence, " or "))
		}
		kind = k
	}
	loader, ok := loaderOf(kind)
	if !ok {
		return nil, fmt.Errorf("reading %s: no loader for kind %q", src.Name, kind)
	}
	return loader, nil
}

func (in *Ingester) settings(cluster string) load.Settings {
	return load.Settings{MaxLineBytes: in.opt.MaxLineBytes, KeepSecrets: in.opt.KeepSecrets,
		NoAuditEndpoints: in.opt.NoAuditEndpoints, Node: in.opt.Node, At: in.opt.At, SpillDir: in.db.TempDir(),
		Cluster: cluster, APIServer: in.opt.APIServer}
}

// inTransaction runs body in a transaction on conn; it commits when body says so and returns
// no error, and rolls back otherwise.
func inTransaction(ctx context.Context, conn *sql.Conn, name string, body func() (commit bool, err error)) error {
	if _, err := conn.ExecContext(ctx, "BEGIN TRANSACTION"); err != nil {
		return fmt.Errorf("loading %s: %w", name, err)
	}
	commit, err := body()
	if err != nil || !commit {
		conn.ExecContext(context.WithoutCancel(ctx), "ROLLBACK")
		return err
	}
	if _, err := conn.ExecContext(ctx, "COMMIT"); err != nil {
		return fmt.Errorf("committing %s: %w", name, writeError{err})
	}
	return nil
}

// showProgress reports the progress of reading src until the returned function is called.
func (in *Ingester) showProgress(src *source.Source) (stop func()) {
	if in.opt.Progress == nil {
		return func() {}
	}
	in.opt.Progress.Begin(src.Name, src.Size)
	done := make(chan struct{})
	stopped := make(chan struct{})
	go func() {
		defer close(stopped)
		t := time.NewTicker(100 * time.Millisecond)
		defer t.Stop()
		for {
			in.opt.Progress.Update(src.DiskBytesRead(), src.LinesRead())
			select {
			case <-done:
				in.opt.Progress.Update(src.DiskBytesRead(), src.LinesRead())
				return
			case <-t.C:
			}
		}
	}()
	return func() { close(done); <-stopped; in.opt.Progress.End() }
}

// loadRecord is the row of ingest_files of one load: what it read, and what identifies the file
// for the next load (see resumePoint).
type loadRecord struct {
	f                  *load.File
	started, finished  time.Time
	headBytes          int64
	headHash, tailHash string // tailHash "" when there is none
	hasFileID          bool   // device and inode are the file's
	device, inode      int64
}

// newLoadRecord is the row of the load of f, which started at start and finished now: DuckDB's
// now() is when the transaction began, which a group of files shares.
func newLoadRecord(f *load.File, start time.Time) loadRecord {
	src := f.Src
	headBytes := len(src.Head)
	if f.EndOffset >= 0 {
		headBytes = int(min(int64(headBytes), f.EndOffset))
	}
	rec := loadRecord{f: f, started: start, finished: time.Now(), headBytes: int64(headBytes), headHash: src.HeadHash(headBytes)}
	if src.HasFileID {
		rec.hasFileID, rec.device, rec.inode = true, src.Device, src.Inode
	}
	if h, ok := src.TailHash(f.EndOffset); ok {
		rec.tailHash = h
	}
	return rec
}

// recordLoadsSQL inserts the rows of loads, a list of each column's values bound to each
// parameter (the driver binds no NULL in a list: "" and negative offsets stand for it).
const recordLoadsSQL = `INSERT INTO ingest_files BY NAME
SELECT load_id, kind, source_file, size_bytes, read_bytes, identity, start_offset,
    CASE WHEN end_offset >= 0 THEN end_offset END AS end_offset, CASE WHEN end_line >= 0 THEN end_line END AS end_line,
    lines, "rows", rejected, warnings, duplicates, started_at, finished_at, nullif(note, '') AS note,
    CASE WHEN has_file_id THEN device END AS device, CASE WHEN has_file_id THEN inode END AS inode,
    head_bytes, head_hash, nullif(tail_hash, '') AS tail_hash, nullif("cluster", '') AS "cluster"
FROM (SELECT unnest($load_id::BIGINT[]) AS load_id, unnest($kind::VARCHAR[]) AS kind,
    unnest($source_file::VARCHAR[]) AS source_file, unnest($size_bytes::BIGINT[]) AS size_bytes,
    unnest($read_bytes::BIGINT[]) AS read_bytes, unnest($identity::VARCHAR[]) AS identity,
    unnest($start_offset::BIGINT[]) AS start_offset, unnest($end_offset::BIGINT[]) AS end_offset,
    unnest($end_line::BIGINT[]) AS end_line, unnest($lines::BIGINT[]) AS lines, unnest($rows::BIGINT[]) AS "rows",
    unnest($rejected::BIGINT[]) AS rejected, unnest($warnings::BIGINT[]) AS warnings,
    unnest($duplicates::BIGINT[]) AS duplicates, unnest($started_at::TIMESTAMPTZ[]) AS started_at,
    unnest($finished_at::TIMESTAMPTZ[]) AS finished_at, unnest($note::VARCHAR[]) AS note,
    unnest($has_file_id::BOOLEAN[]) AS has_file_id, unnest($device::BIGINT[]) AS device, unnest($inode::BIGINT[]) AS inode,
    unnest($head_bytes::BIGINT[]) AS head_bytes, unnest($head_hash::VARCHAR[]) AS head_hash,
    unnest($tail_hash::VARCHAR[]) AS tail_hash, unnest($cluster::VARCHAR[]) AS "cluster")`

// recordLoads adds the rows of loads to ingest_files with one statement: a statement per file
// cost half a millisecond, 0.53 s of loading 1,000 small files, and one of VALUES with a
// parameter per value 26 ms a run of 128 files (BENCHMARKS.md).
func (in *Ingester) recordLoads(ctx context.Context, conn *sql.Conn, recs []loadRecord) error {
	if len(recs) == 0 {
		return nil
	}
	n := len(recs)
	ids, sizes, reads, starts, ends, endLines := make([]int64, n), make([]int64, n), make([]int64, n), make([]int64, n), make([]int64, n), make([]int64, n)
	lines, rows, rejected, warnings, dups := make([]int64, n), make([]int64, n), make([]int64, n), make([]int64, n), make([]int64, n)
	devices, inodes, headBytes := make([]int64, n), make([]int64, n), make([]int64, n)
	kinds, names, identities, notes, headHashes, tailHashes, clusters := make([]string, n), make([]string, n), make([]string, n), make([]string, n), make([]string, n), make([]string, n), make([]string, n)
	started, finished := make([]time.Time, n), make([]time.Time, n)
	hasFileID := make([]bool, n)
	for i, rec := range recs {
		f := rec.f
		ids[i], kinds[i], names[i], sizes[i], reads[i], identities[i] = f.LoadID, f.Kind, f.Src.Name, f.Src.Size, f.ReadBytes, f.Src.Identity
		starts[i], ends[i], endLines[i] = f.StartOffset, f.EndOffset, f.EndLine
		lines[i], rows[i], rejected[i], warnings[i], dups[i] = f.Lines, f.Rows, f.Rejected, f.Warnings, f.Duplicates
		started[i], finished[i], notes[i] = rec.started, rec.finished, f.Note
		hasFileID[i], devices[i], inodes[i] = rec.hasFileID, rec.device, rec.inode
		headBytes[i], headHashes[i], tailHashes[i], clusters[i] = rec.headBytes, rec.headHash, rec.tailHash, f.Settings.Cluster
	}
	_, err := conn.ExecContext(ctx, recordLoadsSQL,
		sql.Named("load_id", ids), sql.Named("kind", kinds), sql.Named("source_file", names), sql.Named("size_bytes", sizes),
		sql.Named("read_bytes", reads), sql.Named("identity", identities), sql.Named("start_offset", starts),
		sql.Named("end_offset", ends), sql.Named("end_line", endLines), sql.Named("lines", lines), sql.Named("rows", rows),
		sql.Named("rejected", rejected), sql.Named("warnings", warnings), sql.Named("duplicates", dups),
		sql.Named("started_at", started), sql.Named("finished_at", finished), sql.Named("note", notes),
		sql.Named("has_file_id", hasFileID), sql.Named("device", devices), sql.Named("inode", inodes),
		sql.Named("head_bytes", headBytes), sql.Named("head_hash", headHashes), sql.Named("tail_hash", tailHashes),
		sql.Named("cluster", clusters))
	if err != nil {
		return fmt.Errorf("recording load of %s: %w", load.RunName(recs[0].f.Src.Name, n), err)
	}
	for _, rec := range recs {
		in.starts[startOf(rec.f)] = true
	}
	return nil
}

// resumePoint decides where to read a file from, or why to skip it. An audit log (a resumable
// kind) that an earlier load read up to some offset is read on from there: a growing audit.log,
// or the same file after rotation renamed (or compressed) it. Earlier loads are found by the
// file's first line, and one is continued only when the file starts with the same bytes (up to
// 64 KiB) and holds the same 4 KiB before the offset; loads of the same device and inode are
// tried first. A file that matches none is read from the start, and dedupe drops the events an
// earlier load has; so is a stream, which cannot be read again. Other evidence is not resumed
// but skipped when the very same file was loaded before.
func resumePoint(ctx context.Context, f *load.File, resumable bool) (skipped string, err error) {
	src := f.Src
	if !resumable {
		var seen bool
		err := f.Conn.QueryRowContext(ctx, `SELECT EXISTS (SELECT 1 FROM ingest_files
			WHERE kind = $1 AND source_file = $2 AND size_bytes = $3 AND identity = $4 AND head_bytes = $5 AND head_hash = $6
			AND coalesce(cluster, '') = $7)`,
			f.Kind, src.Name, src.Size, src.Identity, len(src.Head), src.HeadHash(len(src.Head)), f.Settings.Cluster).Scan(&seen)
		if err != nil {
			return "", fmt.Errorf("reading %s: %w", src.Name, err)
		}
		if seen && src.Size >= 0 {
			return "already loaded", nil
		}
		return "", nil
	}
	if src.Size < 0 {
		return "", nil
	}
	earlier, err := earlierLoads(ctx, f)
	if err != nil {
		return "", fmt.Errorf("reading %s: %w", src.Name, err)
	}
	for _, e := range earlier {
		if e.headBytes > len(src.Head) || src.HeadHash(e.headBytes) != e.headHash {
			continue
		}
		if !src.Decoded() {
			if e.end > src.Size {
				continue // shorter than what was read: truncated and rewritten
			}
			if tail, ok := src.TailHash(e.end); !ok || tail != e.tailHash {
				continue
			}
			if e.end == src.Size {
				return "no new data since the last load", nil
			}
		}
		if err := src.SkipTo(e.end); err != nil {
			return "", fmt.Errorf("reading %s: skipping the %d bytes loaded before: %w", src.Name, e.end, err)
		}
		if tail, ok := src.TailHash(e.end); ok && tail == e.tailHash {
			f.StartOffset, f.StartLine = e.end, e.line
			return "", nil
		}
		// A compressed file is only known to differ once read up to the offset.
		if err := src.Rewind(); err != nil {
			return "", fmt.Errorf("reading %s again from the start: %w", src.Name, err)
		}
		break
	}
	if len(earlier) > 0 {
		f.AddNote("its first line is that of a file loaded before, but not the bytes up to where that load stopped: read from the start")
	}
	return "", nil
}

// earlierLoad is where an earlier load of a file with the same first line stopped, and what it
// read.
type earlierLoad struct {
	end, line int64
	headBytes int
	headHash  string
	tailHash  string
}

// earlierLoads returns the latest loads of files with the first line of f's, those of the same
// device and inode first.
func earlierLoads(ctx context.Context, f *load.File) ([]earlierLoad, error) {
	var device, inode any
	if f.Src.HasFileID {
		device, inode = f.Src.Device, f.Src.Inode
	}
	rows, err := f.Conn.QueryContext(ctx, `SELECT end_offset, coalesce(end_line, 0), head_bytes, head_hash, tail_hash
		FROM ingest_files
		WHERE kind = $1 AND identity = $2 AND end_offset > 0 AND head_hash IS NOT NULL AND tail_hash IS NOT NULL
			AND coalesce(cluster, '') = $5
		ORDER BY (device = $3 AND inode = $4) IS TRUE DESC, load_id DESC LIMIT 16`, f.Kind, f.Src.Identity, device, inode, f.Settings.Cluster)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []earlierLoad
	for rows.Next() {
		var e earlierLoad
		if err := rows.Scan(&e.end, &e.line, &e.headBytes, &e.headHash, &e.tailHash); err != nil {
			return nil, err
		}
		out = append(out, e)
	}
	return out, rows.Err()
}

func nullIfEmpty(s string) any {
	if s == "" {
		return nil
	}
	return s
}
