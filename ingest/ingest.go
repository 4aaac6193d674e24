package ingest

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/kubesift/kubesift/store"
)

// Kind names a kind of evidence.
type Kind string

// The kinds of evidence kubesift loads.
const (
	KindAuto      Kind = "auto"
	KindAudit     Kind = "audit"
	KindConntrack Kind = "conntrack"
	KindEndpoints Kind = "endpoints"
)

// Kinds lists the values --kind accepts.
var Kinds = []Kind{KindAuto, KindAudit, KindConntrack, KindEndpoints}

// ParseKind validates a --kind value.
func ParseKind(s string) (Kind, error) {
	if slices.Contains(Kinds, Kind(s)) {
		return Kind(s), nil
	}
	return "", fmt.Errorf("unknown kind %q (want one of auto, audit, conntrack, endpoints)", s)
}

// Options control a load.
type Options struct {
	Kind             Kind
	MaxLineBytes     int  // longest line kept; 0 means DefaultMaxLineBytes
	KeepSecretBodies bool // keep bodies of Secrets, TokenReviews and token requests
	NoAuditEndpoints bool // do not derive endpoint_addresses rows from Endpoints bodies in audit events
	Progress         Progress
	Log              io.Writer // one summary line per file; nil for none
	Node             string    // node of conntrack evidence outside a <node>/<time>/ bundle
	At               time.Time // capture time of evidence without one in its path
}

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
	Duplicates int64
	FirstError string // "line N: reason" of the first rejected line
	Skipped    string // why the file was not loaded at all (e.g. already loaded)
	Note       string
	Elapsed    time.Duration
	readBytes  int64

	// Where this load started and stopped in the decompressed stream, for the next load of the
	// same file (growing or rotated logs); endOffset < 0 means it cannot be resumed.
	startOffset, startLine int64
	endOffset, endLine     int64
}

// Ingester loads inputs into one database.
type Ingester struct {
	db  *store.DB
	opt Options
}

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

// Ingest loads every file of files (see ExpandPaths), each in its own transaction. A file that
// fails is reported and the others are still loaded; the returned error joins every failure.
func (in *Ingester) Ingest(ctx context.Context, files []Input) ([]FileResult, error) {
	var results []FileResult
	var errs []error
	for _, f := range files {
		if ctx.Err() != nil {
			errs = append(errs, ctx.Err())
			break
		}
		r, err := in.ingestFile(ctx, f.Path)
		if errors.Is(err, errUnknownKind) && f.FromWalk {
			r.Skipped = skippedNotEvidence
			err = nil
		}
		if err != nil {
			errs = append(errs, err)
			continue
		}
		results = append(results, r)
		in.logResult(r)
	}
	in.logSkipped(results)
	return results, errors.Join(errs...)
}

const (
	skippedNotEvidence = "not evidence kubesift reads"
	skippedEmpty       = "empty file"
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
		parts = append(parts, fmt.Sprintf("%s that %s not evidence (e.g. %s)", plural(len(notEvidence), "file"), map[bool]string{true: "is", false: "are"}[len(notEvidence) == 1], notEvidence[0]))
	}
	if len(empty) > 0 {
		parts = append(parts, plural(len(empty), "empty file"))
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
	case r.Skipped == skippedNotEvidence || r.Skipped == skippedEmpty:
		return // summed up by logSkipped
	case r.Skipped != "":
		fmt.Fprintf(in.opt.Log, "%s: skipped: %s\n", r.Path, r.Skipped)
		return
	default:
		fmt.Fprintf(in.opt.Log, "%s: %s, %s loaded", r.Path, r.Kind, plural(int(r.Rows), "row"))
		if r.Duplicates > 0 {
			fmt.Fprintf(in.opt.Log, ", %s skipped", plural(int(r.Duplicates), "duplicate"))
		}
		fmt.Fprintf(in.opt.Log, " in %.1fs\n", r.Elapsed.Seconds())
	}
	if r.Rejected > 0 {
		fmt.Fprintf(in.opt.Log, "%s: %s rejected, first at %s (see table ingest_errors)\n", r.Path, plural(int(r.Rejected), "line"), r.FirstError)
	}
	if r.Note != "" {
		fmt.Fprintf(in.opt.Log, "%s: %s\n", r.Path, r.Note)
	}
}

// Input is one file to load.
type Input struct {
	Path     string
	FromWalk bool // found by walking a directory: skipped quietly when it is not evidence
}

// ExpandPaths turns the command line's inputs into a list of files: directories are walked
// recursively (hidden entries skipped), globs are expanded, "-" stands for stdin. A name that
// matches nothing is an error.
func ExpandPaths(paths []string) ([]Input, error) {
	var files []Input
	for _, p := range paths {
		if p == "-" {
			files = append(files, Input{Path: p})
			continue
		}
		matches := []string{p}
		if strings.ContainsAny(p, "*?[") {
			m, err := filepath.Glob(p)
			if err != nil {
				return nil, fmt.Errorf("bad glob %q: %w", p, err)
			}
			if len(m) == 0 {
				return nil, fmt.Errorf("%s: no file matches", p)
			}
			matches = m
		}
		for _, m := range matches {
			st, err := os.Stat(m)
			if err != nil {
				return nil, err
			}
			if !st.IsDir() {
				files = append(files, Input{Path: m})
				continue
			}
			err = filepath.WalkDir(m, func(path string, d os.DirEntry, err error) error {
				if err != nil {
					return err
				}
				if path != m && strings.HasPrefix(d.Name(), ".") {
					if d.IsDir() {
						return filepath.SkipDir
					}
					return nil
				}
				if !d.IsDir() && !ignoredFile(d.Name()) {
					files = append(files, Input{Path: path, FromWalk: true})
				}
				return nil
			})
			if err != nil {
				return nil, err
			}
		}
	}
	return files, nil
}

// ignoredFile reports files that live beside evidence but are not evidence.
func ignoredFile(name string) bool {
	lower := strings.ToLower(name)
	return strings.HasSuffix(lower, ".md") || strings.HasSuffix(lower, ".duckdb") || strings.HasSuffix(lower, ".wal") ||
		strings.HasSuffix(lower, ".golden") || strings.HasSuffix(lower, ".sh") || strings.HasSuffix(lower, ".go")
}

func (in *Ingester) ingestFile(ctx context.Context, path string) (FileResult, error) {
	start := time.Now()
	r := FileResult{Path: path, endOffset: -1, endLine: -1}
	src, err := openSource(path)
	if err != nil {
		return r, fmt.Errorf("reading %s: %w", path, err)
	}
	defer src.Close()

	if len(src.Head) == 0 {
		r.Skipped = skippedEmpty
		return r, nil
	}
	r.Kind = in.opt.Kind
	if r.Kind == KindAuto {
		k, ok := DetectKind(path, src.Head)
		if !ok {
			return r, fmt.Errorf("reading %s: %w (not an audit log, conntrack dump or Kubernetes object snapshot); pass --kind", path, errUnknownKind)
		}
		r.Kind = k
	}
	load, ok := in.loaders()[r.Kind]
	if !ok {
		return r, fmt.Errorf("reading %s: no loader for kind %q", path, r.Kind)
	}

	conn, err := in.db.Conn(ctx)
	if err != nil {
		return r, err
	}
	defer conn.Close()

	if err := in.resumePoint(ctx, conn, src, &r); err != nil || r.Skipped != "" {
		return r, err
	}

	// The load id comes from a sequence and is committed on its own, before the load: the id of
	// a killed load is never given again (see store.Open's repair).
	if err := conn.QueryRowContext(ctx, "SELECT nextval('"+store.LoadIDSequence+"')").Scan(&r.LoadID); err != nil {
		return r, err
	}
	if _, err := conn.ExecContext(ctx, "BEGIN TRANSACTION"); err != nil {
		return r, err
	}
	committed := false
	defer func() {
		if !committed {
			conn.ExecContext(context.WithoutCancel(ctx), "ROLLBACK")
		}
	}()

	if in.opt.Progress != nil {
		in.opt.Progress.Begin(path, src.Size)
		stop := make(chan struct{})
		done := make(chan struct{})
		go func() {
			defer close(done)
			t := time.NewTicker(100 * time.Millisecond)
			defer t.Stop()
			for {
				select {
				case <-stop:
					in.opt.Progress.Update(src.DiskBytesRead(), src.LinesRead())
					return
				case <-t.C:
					in.opt.Progress.Update(src.DiskBytesRead(), src.LinesRead())
				}
			}
		}()
		defer func() { close(stop); <-done; in.opt.Progress.End() }()
	}

	if err := load(ctx, conn, src, &r); err != nil {
		return r, err
	}
	if r.startOffset > 0 && r.Lines == 0 {
		r.Skipped = "no new data since the last load"
		return r, nil // the deferred ROLLBACK drops the empty load
	}
	r.Elapsed = time.Since(start)
	_, err = conn.ExecContext(ctx, `INSERT INTO ingest_files BY NAME SELECT
		$load_id AS load_id, $kind AS kind, $source_file AS source_file, $size AS size_bytes, $read AS read_bytes,
		$identity AS identity, $start_offset AS start_offset, $end_offset AS end_offset, $end_line AS end_line,
		$lines AS lines, $rows AS rows, $rejected AS rejected, $dups AS duplicates,
		$started AS started_at, now() AS finished_at, $note AS note`,
		sql.Named("load_id", r.LoadID), sql.Named("kind", string(r.Kind)), sql.Named("source_file", path),
		sql.Named("size", src.Size), sql.Named("read", r.readBytes), sql.Named("identity", src.Identity),
		sql.Named("start_offset", r.startOffset), sql.Named("end_offset", nullIfNegative(r.endOffset)), sql.Named("end_line", nullIfNegative(r.endLine)),
		sql.Named("lines", r.Lines), sql.Named("rows", r.Rows), sql.Named("rejected", r.Rejected),
		sql.Named("dups", r.Duplicates), sql.Named("started", start), sql.Named("note", nullIfEmpty(r.Note)))
	if err != nil {
		return r, fmt.Errorf("recording load of %s: %w", path, err)
	}
	if _, err := conn.ExecContext(ctx, "COMMIT"); err != nil {
		return r, fmt.Errorf("committing %s: %w", path, err)
	}
	committed = true
	return r, nil
}

type loadFunc func(ctx context.Context, conn *sql.Conn, src *source, r *FileResult) error

func (in *Ingester) loaders() map[Kind]loadFunc {
	return map[Kind]loadFunc{
		KindAudit:     in.loadAudit,
		KindConntrack: in.loadConntrack,
		KindEndpoints: in.loadEndpoints,
	}
}

// recordRejects writes rejected lines to ingest_errors and counts them in the result.
func (in *Ingester) recordRejects(ctx context.Context, conn *sql.Conn, r *FileResult, kind Kind, rejects []rejected) error {
	if len(rejects) == 0 {
		return nil
	}
	slices.SortFunc(rejects, func(a, b rejected) int { return int(a.line - b.line) })
	r.Rejected = int64(len(rejects))
	r.FirstError = fmt.Sprintf("line %d: %s", rejects[0].line, rejects[0].reason)
	return in.writeErrors(ctx, conn, r, kind, rejects)
}

// writeErrors adds rows to ingest_errors.
func (in *Ingester) writeErrors(ctx context.Context, conn *sql.Conn, r *FileResult, kind Kind, rejects []rejected) error {
	stmt, err := conn.PrepareContext(ctx, `INSERT INTO ingest_errors (source_file, line, byte_offset, reason, excerpt, kind, load_id)
		VALUES ($1, $2, $3, $4, $5, $6, $7)`)
	if err != nil {
		return err
	}
	defer stmt.Close()
	for _, rj := range rejects {
		var offset any
		if rj.offset >= 0 {
			offset = rj.offset
		}
		if _, err := stmt.ExecContext(ctx, r.Path, rj.line, offset, rj.reason, excerpt(rj.text), string(kind), r.LoadID); err != nil {
			return fmt.Errorf("recording rejected line %d of %s: %w", rj.line, r.Path, err)
		}
	}
	return nil
}

// joinNotes joins what went wrong with a file as a whole.
func joinNotes(a, b string) string {
	if a == "" {
		return b
	}
	return a + "; " + b
}

// plural returns "1 line" or "3 lines".
func plural(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return fmt.Sprintf("%d %ss", n, noun)
}

func nullIfNegative(n int64) any {
	if n < 0 {
		return nil
	}
	return n
}

// resumePoint decides where to read src from. An audit log seen before (same first line) is read
// from where the last load stopped: a growing audit.log, or the same file after rotation renamed
// (or compressed) it. A file whose first line changed was truncated or replaced and is read
// whole. Other evidence is not resumed but skipped when the very same file was loaded before.
func (in *Ingester) resumePoint(ctx context.Context, conn *sql.Conn, src *source, r *FileResult) error {
	if r.Kind != KindAudit {
		var seen bool
		err := conn.QueryRowContext(ctx, `SELECT EXISTS (SELECT 1 FROM ingest_files
			WHERE kind = $1 AND source_file = $2 AND size_bytes = $3 AND identity = $4)`,
			string(r.Kind), src.Name, src.Size, src.Identity).Scan(&seen)
		if err == nil && seen && src.Size >= 0 {
			r.Skipped = "already loaded"
		}
		return err
	}
	var end, line sql.NullInt64
	err := conn.QueryRowContext(ctx, `SELECT end_offset, end_line FROM ingest_files
		WHERE kind = 'audit' AND identity = $1 AND end_offset IS NOT NULL ORDER BY load_id DESC LIMIT 1`, src.Identity).Scan(&end, &line)
	if errors.Is(err, sql.ErrNoRows) || (err == nil && end.Int64 == 0) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("reading %s: %w", src.Name, err)
	}
	if !src.Gzip && src.Size >= 0 {
		switch {
		case end.Int64 == src.Size:
			r.Skipped = "no new data since the last load"
			return nil
		case end.Int64 > src.Size: // shorter than what was read: truncated and rewritten
			return nil
		}
	}
	if err := src.skipTo(end.Int64); err != nil {
		return fmt.Errorf("reading %s: skipping the %d bytes loaded before: %w", src.Name, end.Int64, err)
	}
	r.startOffset, r.startLine = end.Int64, line.Int64
	return nil
}

func nullIfEmpty(s string) any {
	if s == "" {
		return nil
	}
	return s
}
