package ingest

import (
	"context"
	"database/sql"
	"fmt"
	"slices"
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

func (s *objectSink) Row(r k8sobj.Record) error {
	values := append([]any{s.capturedAt, s.source, s.file, s.loadID}, r.Values()...)
	for i, v := range values {
		if m, ok := v.(map[string]string); ok {
			dm := make(map[any]any, len(m))
			for k, x := range m {
				dm[k] = x
			}
			values[i] = dm
		}
	}
	return s.w.append(r.Table(), values...)
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
	sink := &objectSink{w: newRowWriter(conn), capturedAt: o.capturedAt, source: "snapshot", file: src.Name, loadID: r.LoadID}
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

// auditObjectResources are the resources whose written bodies kubesift turns into object rows
// (endpoint addresses, services, pods, annotations, leader locks) with source 'audit'.
var auditObjectResources = []any{"endpoints", "endpointslices", "services", "pods", "configmaps", "leases"}

// deriveObjectsFromAudit decodes the bodies of successful writes of this load's audit events
// into the object tables, so that endpoint states and leader locks can be followed from an
// audit log alone. The rows carry the event's time as captured_at and its line as source_line.
func deriveObjectsFromAudit(ctx context.Context, conn *sql.Conn, file string, loadID int64) ([]rejected, error) {
	rows, err := conn.QueryContext(ctx, `
		SELECT stage_at, source_line, verb, resource, coalesce(namespace, ''), coalesce(name, ''),
			(CASE WHEN verb = 'patch' THEN response_object ELSE coalesce(response_object, request_object) END)::VARCHAR
		FROM audit_events
		WHERE load_id = $1 AND stage = 'ResponseComplete' AND code < 300 AND subresource IS NULL
			AND verb IN ('create', 'update', 'patch', 'delete')
			AND resource IN ($2, $3, $4, $5, $6, $7)
			AND (verb = 'delete' OR response_object IS NOT NULL OR (verb <> 'patch' AND request_object IS NOT NULL))
		ORDER BY stage_at, source_line`, append([]any{loadID}, auditObjectResources...)...)
	if err != nil {
		return nil, fmt.Errorf("reading audit bodies: %w", err)
	}
	sink := &objectSink{w: newRowWriter(conn), source: "audit", file: file, loadID: loadID}
	seq := int64(0)
	var decodeErr error
	for rows.Next() {
		var at time.Time
		var line int64
		var verb, resource, ns, name string
		var body sql.NullString
		if err := rows.Scan(&at, &line, &verb, &resource, &ns, &name, &body); err != nil {
			rows.Close()
			return nil, err
		}
		seq++
		sink.capturedAt = at
		err := k8sobj.DecodeObject([]byte(body.String), k8sobj.ObjectOptions{
			Event: verb, Line: line, Seq: seq, Kind: resource, Deleted: verb == "delete", Namespace: ns, Name: name,
		}, sink)
		if err != nil {
			decodeErr = err
			break
		}
	}
	rows.Close()
	if err := sink.w.close(); err != nil {
		return nil, err
	}
	if decodeErr != nil {
		return nil, decodeErr
	}
	return sink.rejects, rows.Err()
}
