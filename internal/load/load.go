package load

import (
	"context"
	"database/sql"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/kubesift/kubesift/internal/rows"
	"github.com/kubesift/kubesift/internal/source"
	"github.com/kubesift/kubesift/store"
)

// Settings are the user's choices that loaders read.
type Settings struct {
	MaxLineBytes     int       // longest line kept
	KeepSecrets      bool      // load secrets unredacted (bodies of Secrets and token requests, tokens elsewhere)
	NoAuditEndpoints bool      // do not derive endpoint states from Endpoints bodies in audit events
	Node             string    // node of evidence outside a <node>/<time>/ bundle
	At               time.Time // capture time of evidence without one in its path
	SpillDir         string    // where rows held back during a load wait on disk
	Cluster          string    // cluster of the evidence (of audit events: over what their envelope says)
	APIServer        string    // apiserver of audit events, over what their envelope says
}

// File is the load of one file as a loader sees it: the opened source, the connection whose
// transaction holds the load, and what the loader reports back.
type File struct {
	Kind     string // the loader's kind, recorded with rejected lines
	Src      *source.Source
	Conn     *sql.Conn
	LoadID   int64
	Tables   []store.Table // the tables the loader declared
	Settings Settings
	// Shared is what the loads of one transaction keep for each other (several small files
	// share one): what a loader learned of its tables before the transaction, and what its own
	// rows add to that, so that the next load in the transaction need not ask DuckDB again,
	// whose answer then reads the transaction's rows too. Keys are the loader's own.
	Shared map[string]any
	// OnRowsIn, when set, is called (through RowsIn) once the file's rows are all in its tables
	// (Lines and ReadBytes set), before the checks over them (rejected rows, duplicates) and the
	// commit.
	OnRowsIn func()

	// Where a resumable load starts in the decompressed stream; zero for a whole file.
	StartOffset, StartLine int64

	// Set by the loader.
	Lines      int64 // lines read
	ReadBytes  int64 // decompressed bytes read
	Rows       int64 // rows kept
	Duplicates int64 // rows dropped as already loaded
	Rejected   int64 // input lines that gave no row
	Warnings   int64 // rows kept with a field that could not be read
	FirstError string
	Note       string // what went wrong with the file as a whole
	// Where reading stopped, for the next load of a growing file; -1 when it cannot resume.
	EndOffset, EndLine int64
}

// Rejected is one input line (or document) that did not become a row.
type Rejected struct {
	Line   int64
	Offset int64 // byte offset in the decompressed stream, -1 when unknown
	Reason string
	Text   []byte
}

// AddNote adds to what went wrong with the file as a whole.
func (f *File) AddNote(note string) {
	if f.Note != "" {
		note = f.Note + "; " + note
	}
	f.Note = note
}

// RowsIn is what a loader calls once the file's rows are all in its tables and it has set Lines
// and ReadBytes: it calls OnRowsIn.
func (f *File) RowsIn() {
	if f.OnRowsIn != nil {
		f.OnRowsIn()
	}
}

// Writer returns a row writer into the loader's tables, inside the load's transaction.
func (f *File) Writer(ctx context.Context) *rows.Writer {
	return rows.New(ctx, f.Conn, f.Tables)
}

// Parse is a parser that reads a file and appends its rows to w; it returns the lines it could
// not read, and an error only when it had to stop.
type Parse func(r io.Reader, w *rows.Writer) ([]Rejected, error)

// LoadRows runs parse over the whole file, then drops the rows an earlier load already has and
// records the rejected lines: the load of a kind whose parser writes rows itself.
func (f *File) LoadRows(ctx context.Context, parse Parse) error {
	return LoadRowsRun(ctx, []*File{f}, func(*File) (Parse, error) { return parse, nil })
}

// LoadRowsRun is LoadRows over a run of files that share their transaction, whose load ids
// ascend in their order with no other load's between them (ingest's RunLoader): parser gives each
// file's parser, or the error that stops the run. Their rows go through one writer, and the rows
// an earlier load has are dropped for all of them at once, as when each file was loaded after the
// one before it: statements cost milliseconds each, whatever their rows (BENCHMARKS.md).
func LoadRowsRun(ctx context.Context, files []*File, parser func(*File) (Parse, error)) error {
	w := files[0].Writer(ctx)
	rejects := make([][]Rejected, len(files))
	appended := make([]int64, len(files))
	var parseErr error
	for i, f := range files {
		parse, err := parser(f)
		if err != nil {
			parseErr = err
			break
		}
		counter := &source.CountingLines{R: f.Src}
		before := w.Total()
		if rejects[i], err = parse(counter, w); err != nil {
			parseErr = fmt.Errorf("reading %s: %w", f.Src.Name, err)
			break
		}
		f.Lines, f.ReadBytes = counter.Lines(), counter.N
		appended[i] = w.Total() - before
	}
	first, last := files[0], files[len(files)-1]
	name := RunName(first.Src.Name, len(files))
	if err := w.Close(); err != nil {
		return fmt.Errorf("loading %s: %w", name, err)
	}
	if parseErr != nil {
		return parseErr
	}
	for _, f := range files {
		f.RowsIn()
	}
	dups, err := w.RemoveDuplicates(ctx, first.LoadID, last.LoadID)
	if err != nil {
		return fmt.Errorf("loading %s: %w", name, err)
	}
	kept := map[int64]int64{first.LoadID: appended[0] - dups}
	if dups > 0 && len(files) > 1 {
		if kept, err = w.RowsOfLoads(ctx, first.LoadID, last.LoadID); err != nil {
			return fmt.Errorf("loading %s: %w", name, err)
		}
	}
	for i, f := range files {
		f.Rows = appended[i]
		if dups > 0 {
			f.Rows = kept[f.LoadID]
		}
		f.Duplicates = appended[i] - f.Rows
		if err := f.RecordRejects(ctx, rejects[i]); err != nil {
			return err
		}
	}
	return nil
}

// RecordRejects writes rejected lines to ingest_errors and counts them.
func (f *File) RecordRejects(ctx context.Context, rejects []Rejected) error {
	if len(rejects) == 0 {
		return nil
	}
	slices.SortFunc(rejects, func(a, b Rejected) int { return int(a.Line - b.Line) })
	f.Rejected += int64(len(rejects))
	if f.FirstError == "" {
		f.FirstError = fmt.Sprintf("line %d: %s", rejects[0].Line, rejects[0].Reason)
	}
	return f.WriteErrors(ctx, f.Kind, SeverityError, rejects)
}

// RecordWarnings writes to ingest_errors, as warnings, rows that were kept but had a field that
// could not be read, and counts them; they are not rejected lines.
func (f *File) RecordWarnings(ctx context.Context, warnings []Rejected) error {
	f.Warnings += int64(len(warnings))
	return f.WriteErrors(ctx, f.Kind, SeverityWarning, warnings)
}

// RecordDamage records the stretches of a compressed file that could not be decompressed as
// rejected input, each at the line and offset where the decompressed stream was cut; damage
// before where a resumed load started was recorded by the load that read it.
func (f *File) RecordDamage(ctx context.Context) error {
	var rejects []Rejected
	for _, d := range f.Src.Damage() {
		if f.StartOffset > 0 && d.Offset <= f.StartOffset {
			continue
		}
		rejects = append(rejects, Rejected{Line: d.Line, Offset: d.Offset, Reason: d.Error()})
	}
	return f.RecordRejects(ctx, rejects)
}

// The severities of ingest_errors rows: a rejected line, or a row kept with a field it lacks.
const (
	SeverityError   = "error"
	SeverityWarning = "warning"
)

// WriteErrors adds rows to ingest_errors under kind and severity, without counting them: for
// what a load read but could not use for another kind's tables.
func (f *File) WriteErrors(ctx context.Context, kind, severity string, rejects []Rejected) error {
	if len(rejects) == 0 {
		return nil
	}
	stmt, err := f.Conn.PrepareContext(ctx, `INSERT INTO ingest_errors (source_file, line, byte_offset, reason, excerpt, kind, load_id, severity)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8)`)
	if err != nil {
		return fmt.Errorf("recording rejected lines of %s: %w", f.Src.Name, err)
	}
	defer stmt.Close()
	for _, rj := range rejects {
		var offset any
		if rj.Offset >= 0 {
			offset = rj.Offset
		}
		if _, err := stmt.ExecContext(ctx, f.Src.Name, rj.Line, offset, rj.Reason, excerpt(rj.Text), kind, f.LoadID, severity); err != nil {
			return fmt.Errorf("recording rejected line %d of %s: %w", rj.Line, f.Src.Name, err)
		}
	}
	return nil
}

// excerpt returns at most 200 bytes of text, cut at a rune boundary.
func excerpt(text []byte) string {
	const limit = 200
	if len(text) <= limit {
		return strings.ToValidUTF8(string(text), "?")
	}
	cut := limit
	for cut > 0 && !utf8.RuneStart(text[cut]) {
		cut--
	}
	return strings.ToValidUTF8(string(text[:cut]), "?") + "…"
}

// RunName names a run of n files, first the first of them, in messages: the file's name alone,
// or "a.log and the 3 files after it".
func RunName(first string, n int) string {
	if n <= 1 {
		return first
	}
	return fmt.Sprintf("%s and the %s after it", first, Plural(n-1, "file"))
}

// Plural returns "1 line" or "3 lines".
func Plural(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return fmt.Sprintf("%d %ss", n, noun)
}
