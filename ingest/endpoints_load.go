package ingest

import (
	"context"
	"database/sql"
	"fmt"
	"runtime"
	"slices"
	"sync"
	"time"

	"github.com/kubesift/kubesift/ingest/k8sobj"
	"github.com/kubesift/kubesift/store"
)

// provenanceColumns say where a row came from rather than what it records; two rows that differ
// only there describe the same observation (the same snapshot saved as JSON and as YAML).
var provenanceColumns = []string{"source_file", "source_line", "object_seq", "load_id"}

// objectSink writes decoded Kubernetes objects as rows.
type objectSink struct {
	w          *rowWriter
	capturedAt time.Time
	source     string // snapshot or audit
	file       string
	loadID     int64
	rejects    []rejected
}

func (s *objectSink) Row(r k8sobj.Record) error { return s.row(r.Table(), r.Values()) }

func (s *objectSink) row(table string, values []any) error {
	return s.w.append(table, append([]any{s.capturedAt, s.source, s.file, s.loadID}, values...)...)
}

func (s *objectSink) Bad(line int, offset int64, reason, excerpt string) {
	s.rejects = append(s.rejects, rejected{line: int64(line), offset: offset, reason: reason, text: []byte(excerpt)})
}

// loadEndpoints loads a snapshot of Kubernetes objects: kubectl get -o json|yaml output, Lists,
// multi-document YAML, -w streams and watch-event streams.
func (in *Ingester) loadEndpoints(ctx context.Context, conn *sql.Conn, src *source, r *FileResult) error {
	o := evidenceOrigin(src.Name, in.opt, false)
	if o.warning != "" {
		r.Note = o.warning
	}
	sink := &objectSink{w: newRowWriter(ctx, conn), capturedAt: o.capturedAt, source: "snapshot", file: src.Name, loadID: r.LoadID}
	counter := &countingLines{r: src}
	_, decodeErr := k8sobj.Decode(src.Name, counter, sink)
	if err := sink.w.close(); err != nil {
		return err
	}
	if decodeErr != nil {
		return fmt.Errorf("reading %s: %w", src.Name, decodeErr)
	}
	r.Lines, r.readBytes = counter.lines(), counter.n
	dups, err := removeDuplicateObjectRows(ctx, conn, sink.w, r.LoadID)
	if err != nil {
		return err
	}
	r.Rows = sink.w.total() - dups
	r.Duplicates = dups
	return in.recordRejects(ctx, conn, r, KindEndpoints, sink.rejects)
}

func removeDuplicateObjectRows(ctx context.Context, conn *sql.Conn, w *rowWriter, loadID int64) (int64, error) {
	var dups int64
	for table := range w.counts {
		t, ok := store.Lookup(table)
		if !ok {
			return 0, fmt.Errorf("no table %s", table)
		}
		var key []string
		for _, c := range t.ColumnNames() {
			if !slices.Contains(provenanceColumns, c) {
				key = append(key, c)
			}
		}
		d, err := removeDuplicateRows(ctx, conn, table, loadID, key...)
		if err != nil {
			return 0, err
		}
		dups += d
	}
	return dups, nil
}

// deriveObjectsFromAudit decodes the Endpoints and EndpointSlice bodies of successful writes of
// this load's audit events into endpoint_addresses (and their annotations), so that endpoint
// states can be followed from an audit log alone, exactly as from snapshots. The rows carry the
// event's time as captured_at and its line as source_line. Bodies are read in windows of rows,
// so memory does not grow with the log. (Lease and leader-annotation changes are in
// audit_events itself; rules read them there.)
func deriveObjectsFromAudit(ctx context.Context, conn *sql.Conn, file string, loadID int64) ([]rejected, error) {
	var lo, hi sql.NullInt64
	if err := conn.QueryRowContext(ctx, `SELECT min(rowid), max(rowid) FROM audit_events WHERE load_id = $1`, loadID).Scan(&lo, &hi); err != nil || !lo.Valid {
		return nil, err
	}
	sink := &objectSink{w: newRowWriter(ctx, conn), source: "audit", file: file, loadID: loadID}
	seq := int64(0)
	var firstErr error
	for from := lo.Int64; from <= hi.Int64 && firstErr == nil; from += deriveWindowRows {
		firstErr = deriveWindow(ctx, conn, sink, loadID, from, from+deriveWindowRows-1, &seq)
	}
	if err := sink.w.close(); err != nil && firstErr == nil {
		firstErr = err
	}
	return sink.rejects, firstErr
}

const deriveWindowRows = 1 << 14

type auditBody struct {
	at                             time.Time
	line                           int64
	verb, resource, ns, name, body string
}

func deriveWindow(ctx context.Context, conn *sql.Conn, sink *objectSink, loadID, from, to int64, seq *int64) error {
	rows, err := conn.QueryContext(ctx, `
		SELECT stage_at, source_line, verb, resource, coalesce(namespace, ''), coalesce(name, ''), coalesce(body::VARCHAR, '')
		FROM (
			SELECT *, CASE WHEN verb = 'patch' THEN response_object ELSE coalesce(response_object, request_object) END AS body
			FROM audit_events
			WHERE load_id = $1 AND rowid BETWEEN $2 AND $3 AND stage = 'ResponseComplete' AND code < 300
				AND subresource IS NULL AND verb IN ('create', 'update', 'patch', 'delete')
				AND resource IN ('endpoints', 'endpointslices'))
		WHERE verb = 'delete' OR body IS NOT NULL
		ORDER BY stage_at, source_line`, loadID, from, to)
	if err != nil {
		return fmt.Errorf("reading audit bodies: %w", err)
	}
	var bodies []auditBody
	for rows.Next() {
		var b auditBody
		if err := rows.Scan(&b.at, &b.line, &b.verb, &b.resource, &b.ns, &b.name, &b.body); err != nil {
			rows.Close()
			return err
		}
		bodies = append(bodies, b)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return err
	}
	// Decoding is the expensive part; it runs on every core (DuckDB is idle meanwhile), and the
	// rows are appended in the order of the events.
	decoded := make([]collectedRows, len(bodies))
	var wg sync.WaitGroup
	next := make(chan int)
	for range runtime.GOMAXPROCS(0) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				b := bodies[i]
				decoded[i].err = k8sobj.DecodeObject([]byte(b.body), k8sobj.ObjectOptions{
					Event: b.verb, Line: b.line, Seq: *seq + int64(i) + 1, Kind: b.resource, Deleted: b.verb == "delete", Namespace: b.ns, Name: b.name,
				}, &decoded[i])
			}
		}()
	}
	for i := range bodies {
		next <- i
	}
	close(next)
	wg.Wait()
	*seq += int64(len(bodies))
	for i, d := range decoded {
		if d.err != nil {
			return d.err
		}
		sink.capturedAt = bodies[i].at
		for _, r := range d.rows {
			if err := sink.row(r.table, r.values); err != nil {
				return err
			}
		}
		sink.rejects = append(sink.rejects, d.rejects...)
	}
	return nil
}

// collectedRows gathers what decoding one body produced, for appending later.
type collectedRows struct {
	rows []struct {
		table  string
		values []any
	}
	rejects []rejected
	err     error
}

func (c *collectedRows) Row(r k8sobj.Record) error {
	c.rows = append(c.rows, struct {
		table  string
		values []any
	}{r.Table(), r.Values()})
	return nil
}

func (c *collectedRows) Bad(line int, offset int64, reason, excerpt string) {
	c.rejects = append(c.rejects, rejected{line: int64(line), offset: offset, reason: reason, text: []byte(excerpt)})
}
