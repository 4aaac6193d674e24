package ingest

import (
	"context"
	"database/sql"
	"fmt"

	"github.com/kubesift/kubesift/ingest/conntrack"
)

// conntrackSink writes parsed conntrack records as rows.
type conntrackSink struct {
	w       *rowWriter
	lead    []any // node, captured_at, source_file
	loadID  int64
	rejects []rejected
}

func (s *conntrackSink) row(table string, values []any) error {
	row := make([]any, 0, len(s.lead)+len(values)+1)
	row = append(append(append(row, s.lead...), values...), s.loadID)
	return s.w.append(table, row...)
}

func (s *conntrackSink) Entry(e *conntrack.Entry) error {
	return s.row("conntrack_entries", e.Values())
}
func (s *conntrackSink) Event(e *conntrack.Event) error { return s.row("conntrack_events", e.Values()) }
func (s *conntrackSink) Stat(st *conntrack.Stat) error  { return s.row("conntrack_stats", st.Values()) }
func (s *conntrackSink) Limits(l *conntrack.Limits) error {
	return s.row("conntrack_limits", l.Values())
}
func (s *conntrackSink) KernelEvent(k *conntrack.KernelEvent) error {
	return s.row("kernel_events", k.Values())
}
func (s *conntrackSink) Bad(line int, offset int64, reason, excerpt string) {
	s.rejects = append(s.rejects, rejected{line: int64(line), offset: offset, reason: reason, text: []byte(excerpt)})
}

// loadConntrack loads one conntrack dump, event stream, counter, sysctl or kernel log file.
func (in *Ingester) loadConntrack(ctx context.Context, conn *sql.Conn, src *source, r *FileResult) error {
	format, ok := conntrack.DetectFormat(src.Head)
	if !ok {
		format, ok = conntrackFormatFromName(src.Name)
	}
	if !ok {
		return fmt.Errorf("reading %s: not a conntrack format kubesift knows (conntrack -L/-E/-S/-C, /proc/net/nf_conntrack, /proc/net/stat/nf_conntrack, sysctl, kernel log)", src.Name)
	}
	o := evidenceOrigin(src.Name, in.opt, true)
	if o.warning != "" {
		r.Note = o.warning
	}
	sink := &conntrackSink{w: newRowWriter(ctx, conn), lead: []any{o.node, o.capturedAt, src.Name}, loadID: r.LoadID}
	counter := &countingLines{r: src}
	parseErr := conntrack.Parse(counter, format, sink)
	if err := sink.w.close(); err != nil {
		return err
	}
	if parseErr != nil {
		return fmt.Errorf("reading %s: %w", src.Name, parseErr)
	}
	r.Lines, r.readBytes = counter.lines(), counter.n
	dups, err := removeDuplicates(ctx, conn, sink.w, r.LoadID)
	if err != nil {
		return err
	}
	r.Rows = sink.w.total() - dups
	r.Duplicates = dups
	return in.recordRejects(ctx, conn, r, KindConntrack, sink.rejects)
}
