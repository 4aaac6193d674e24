package conntrack

import (
	"context"
	"fmt"
	"io"

	"github.com/kubesift/kubesift/internal/load"
	"github.com/kubesift/kubesift/internal/rows"
	"github.com/kubesift/kubesift/store"
)

// Loader loads conntrack evidence into the conntrack tables.
type Loader struct{}

// Kind names the evidence for --kind.
func (Loader) Kind() string { return "conntrack" }

// Detect recognises conntrack output from its first bytes, or else a capture bundle's file name.
func (Loader) Detect(name string, head []byte) bool {
	_, _, ok := formatOf(name, head)
	return ok
}

// Tables are the conntrack tables.
func (Loader) Tables() []store.Table { return tables() }

// Resumable is false: a capture is a whole, loaded once.
func (Loader) Resumable() bool { return false }

// Load loads one conntrack dump, event stream, counter, sysctl or kernel log file: LoadRun of the
// file alone.
func (l Loader) Load(ctx context.Context, f *load.File) error { return l.LoadRun(ctx, []*load.File{f}) }

// LoadRun loads conntrack files, each of the node and time its path or --node and --at say; a
// directory of captures loads with the statements of one file (load.LoadRowsRun).
func (Loader) LoadRun(ctx context.Context, files []*load.File) error {
	return load.LoadRowsRun(ctx, files, func(f *load.File) (load.Parse, error) {
		format, opt, ok := formatOf(f.Src.Name, f.Src.Head)
		if !ok {
			return nil, fmt.Errorf("reading %s: not a conntrack format kubesift knows (conntrack -L/-E/-S/-C, /proc/net/nf_conntrack, /proc/net/stat/nf_conntrack, sysctl, kernel log)", f.Src.Name)
		}
		node, capturedAt := f.Origin(true)
		opt.CapturedAt = capturedAt
		return func(r io.Reader, w *rows.Writer) ([]load.Rejected, error) {
			sink := &rowSink{w: w, lead: []any{node, capturedAt, f.Src.Name}, loadID: f.LoadID, cluster: f.Settings.Cluster}
			err := opt.Parse(r, format, sink)
			return sink.rejects, err
		}, nil
	})
}

// formatOf tells the format from the content, else from the file name. A bare number is
// conntrack -C's count, unless the file is named after a conntrack sysctl (a copy of
// /proc/sys/net/netfilter/nf_conntrack_max): then it is that setting.
func formatOf(name string, head []byte) (Format, Options, bool) {
	if format, ok := DetectFormat(head); ok {
		if setting, named := SysctlFileSetting(name); named && format == FormatCount {
			return FormatSysctl, Options{Setting: setting}, true
		}
		return format, Options{}, true
	}
	format, ok := formatFromName(name)
	return format, Options{}, ok
}

// rowSink writes parsed records as rows of the conntrack tables.
type rowSink struct {
	w       *rows.Writer
	lead    []any // node, captured_at, source_file
	loadID  int64
	cluster string
	rejects []load.Rejected
}

func (s *rowSink) row(table string, values []any) error {
	row := make([]any, 0, len(s.lead)+len(values)+2)
	row = append(append(append(row, s.lead...), values...), s.loadID, s.cluster)
	return s.w.Append(table, row...)
}

func (s *rowSink) Entry(e *Entry) error {
	return s.row("conntrack_entries", e.Values())
}
func (s *rowSink) Event(e *Event) error { return s.row("conntrack_events", e.Values()) }
func (s *rowSink) Stat(st *Stat) error  { return s.row("conntrack_stats", st.Values()) }
func (s *rowSink) Limits(l *Limits) error {
	return s.row("conntrack_limits", l.Values())
}
func (s *rowSink) KernelEvent(k *KernelEvent) error {
	return s.row("kernel_events", k.Values())
}
func (s *rowSink) Bad(line int, offset int64, reason, excerpt string) {
	s.rejects = append(s.rejects, load.Rejected{Line: int64(line), Offset: offset, Reason: reason, Text: []byte(excerpt)})
}
