package ingest

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"runtime"
	"sync"
	"time"

	"github.com/kubesift/kubesift/ingest/k8sobj"
)

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
	dups, err := removeDuplicates(ctx, conn, sink.w, r.LoadID)
	if err != nil {
		return err
	}
	r.Rows = sink.w.total() - dups
	r.Duplicates = dups
	return in.recordRejects(ctx, conn, r, KindEndpoints, sink.rejects)
}

// endpointDeriver turns the Endpoints and EndpointSlice writes in audit events into
// endpoint_addresses rows (and their annotations) with source 'audit', so that endpoint states can
// be followed from an audit log alone, exactly as from snapshots. The goroutine that feeds DuckDB
// picks out the writes while DuckDB loads the events; decoding the bodies, the expensive part,
// runs on a pool of workers; one goroutine appends the rows in event order and holds them until
// the load of the events is done.
type endpointDeriver struct {
	enabled bool
	sink    *objectSink
	seq     int64
	jobs    chan deriveJob
	results chan deriveResult
	workers sync.WaitGroup
	merged  chan error
	stopped sync.Once
	stopErr error
}

type deriveJob struct {
	seq  int64
	at   time.Time
	body []byte
	opt  k8sobj.ObjectOptions
}

type deriveResult struct {
	seq  int64
	at   time.Time
	rows collectedRows
}

// newEndpointDeriver starts a deriver; a disabled one ignores every event.
func newEndpointDeriver(ctx context.Context, conn *sql.Conn, file string, loadID int64, enabled bool, spillDir string) *endpointDeriver {
	w := newRowWriter(ctx, conn)
	w.hold(spillDir)
	d := &endpointDeriver{
		enabled: enabled,
		sink:    &objectSink{w: w, source: "audit", file: file, loadID: loadID},
		jobs:    make(chan deriveJob, 256),
		results: make(chan deriveResult, 256),
		merged:  make(chan error, 1),
	}
	for range runtime.GOMAXPROCS(0) {
		d.workers.Add(1)
		go func() {
			defer d.workers.Done()
			for j := range d.jobs {
				r := deriveResult{seq: j.seq, at: j.at}
				r.rows.err = k8sobj.DecodeObject(j.body, j.opt, &r.rows)
				d.results <- r
			}
		}()
	}
	go d.merge()
	return d
}

// merge appends the decoded rows in the order of the events.
func (d *endpointDeriver) merge() {
	pending := map[int64]deriveResult{}
	next := int64(1)
	var err error
	for r := range d.results {
		pending[r.seq] = r
		for {
			r, ok := pending[next]
			if !ok {
				break
			}
			delete(pending, next)
			next++
			if err == nil {
				err = r.rows.err
			}
			d.sink.capturedAt = r.at
			for _, row := range r.rows.rows {
				if err == nil {
					err = d.sink.row(row.table, row.values)
				}
			}
			d.sink.rejects = append(d.sink.rejects, r.rows.rejects...)
		}
	}
	d.merged <- err
}

var endpointsMarker = []byte(`"endpoints`) // also matches "endpointslices"

// event looks at one audit event line; it only reads the few members it needs, with the
// scanner, and leaves the body to the workers.
func (d *endpointDeriver) event(raw []byte, line int64) {
	if !d.enabled {
		return
	}
	refRaw, ok := topLevelRaw(raw, "objectRef")
	if !ok || !bytes.Contains(refRaw, endpointsMarker) {
		return
	}
	str := func(key string) string { v, _ := topLevelString(raw, key); return v }
	if str("kind") != "Event" || str("stage") != "ResponseComplete" {
		return
	}
	var ref struct{ Resource, Subresource, Namespace, Name string }
	var status struct{ Code int }
	if json.Unmarshal(refRaw, &ref) != nil {
		return
	}
	if v, ok := topLevelRaw(raw, "responseStatus"); !ok || json.Unmarshal(v, &status) != nil {
		return
	}
	if status.Code < 200 || status.Code >= 300 || ref.Subresource != "" || (ref.Resource != "endpoints" && ref.Resource != "endpointslices") {
		return // not a successful write of endpoints (malformed lines are DuckDB's to reject)
	}
	at, err := time.Parse(time.RFC3339Nano, str("stageTimestamp"))
	if err != nil {
		return
	}
	verb := str("verb")
	body, _ := topLevelRaw(raw, "responseObject")
	switch verb {
	case "create", "update":
		if len(body) == 0 {
			body, _ = topLevelRaw(raw, "requestObject")
		}
	case "patch", "delete": // a patch's requestObject is the patch, not the object
	default:
		return
	}
	if len(body) == 0 && verb != "delete" {
		return // logged at Metadata level: no body to read
	}
	d.seq++
	d.jobs <- deriveJob{seq: d.seq, at: at, body: body, opt: k8sobj.ObjectOptions{
		Event: verb, Line: line, Seq: d.seq, Kind: ref.Resource, Deleted: verb == "delete", Namespace: ref.Namespace, Name: ref.Name,
	}}
}

// stop ends the workers and the merger, after the last event; calling it again is harmless.
func (d *endpointDeriver) stop() error {
	d.stopped.Do(func() {
		close(d.jobs)
		d.workers.Wait()
		close(d.results)
		d.stopErr = <-d.merged
	})
	return d.stopErr
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

// finish inserts the held rows once the events are loaded, drops the rows of events that did
// not become audit_events rows (rejected, or duplicates of loaded events), and the rows an
// earlier load already has. It returns the bodies that could not be read.
func (d *endpointDeriver) finish(ctx context.Context, conn *sql.Conn, loadID int64) ([]rejected, error) {
	if err := errors.Join(d.stop(), d.sink.w.close()); err != nil {
		return nil, fmt.Errorf("deriving endpoint states: %w", err)
	}
	for table := range d.sink.w.counts {
		_, err := conn.ExecContext(ctx, fmt.Sprintf(`DELETE FROM %s d WHERE d.load_id = $1 AND d.source = 'audit'
			AND NOT EXISTS (SELECT 1 FROM audit_events a WHERE a.load_id = $1 AND a.source_line = d.source_line)`, table), loadID)
		if err != nil {
			return nil, fmt.Errorf("deriving endpoint states: %w", err)
		}
	}
	if _, err := removeDuplicates(ctx, conn, d.sink.w, loadID); err != nil {
		return nil, err
	}
	return d.sink.rejects, nil
}
