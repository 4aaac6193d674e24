package audit

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/kubesift/kubesift/ingest/k8sobj"
	"github.com/kubesift/kubesift/internal/load"
)

// endpointDeriver turns the Endpoints and EndpointSlice writes in audit events into
// endpoint_addresses rows (and their annotations) with source 'audit', so that endpoint states can
// be followed from an audit log alone, exactly as from snapshots. The goroutine that feeds DuckDB
// picks out the writes while DuckDB loads the events; decoding the bodies, the expensive part,
// runs on a pool of workers; one goroutine appends the rows in event order and holds them until
// the load of the events is done.
type endpointDeriver struct {
	enabled bool
	files   []*load.File      // the run's files, whose rows the deriver makes
	rejects [][]load.Rejected // bodies that gave no endpoint states, by file
	writes  []int64           // writes handed to the workers, by file: the ordinal of a write's objects
	sink    *k8sobj.RowSink
	seq     int64
	jobs    chan deriveJob
	results chan deriveResult
	workers sync.WaitGroup
	merged  chan error
	stopped sync.Once
	stopErr error
}

type deriveJob struct {
	seq     int64
	file    int // in the run
	at      time.Time
	cluster string
	body    []byte
	opt     k8sobj.ObjectOptions
}

type deriveResult struct {
	seq     int64
	file    int
	at      time.Time
	cluster string
	rows    collectedRows
}

// newEndpointDeriver starts a deriver for the loads of a run of files (Loader.LoadRun), which
// share their transaction and settings but --cluster; with NoAuditEndpoints it ignores every
// event.
func newEndpointDeriver(ctx context.Context, files []*load.File) *endpointDeriver {
	w := files[0].Writer(ctx)
	w.Hold(files[0].Settings.SpillDir)
	d := &endpointDeriver{
		enabled: !files[0].Settings.NoAuditEndpoints,
		files:   files,
		rejects: make([][]load.Rejected, len(files)),
		writes:  make([]int64, len(files)),
		sink:    &k8sobj.RowSink{W: w, Source: "audit"},
		jobs:    make(chan deriveJob, 256),
		results: make(chan deriveResult, 256),
		merged:  make(chan error, 1),
	}
	for range runtime.GOMAXPROCS(0) {
		d.workers.Add(1)
		go func() {
			defer d.workers.Done()
			for j := range d.jobs {
				r := deriveResult{seq: j.seq, file: j.file, at: j.at, cluster: j.cluster}
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
			f := d.files[r.file]
			d.sink.CapturedAt, d.sink.Cluster, d.sink.File, d.sink.LoadID = r.at, r.cluster, f.Src.Name, f.LoadID
			for _, row := range r.rows.rows {
				if err == nil {
					err = d.sink.Append(row.table, row.values)
				}
			}
			d.rejects[r.file] = append(d.rejects[r.file], r.rows.rejects...)
		}
	}
	d.merged <- err
}

var endpointsMarker = []byte(`"endpoints`) // also matches "endpointslices"

// event hands the body of an endpoints write (batch.eachWrite) of the run's file number file
// (from 0) to the workers. The rows take the event's cluster: --cluster, else what the envelope
// says (as audit_events.cluster).
func (d *endpointDeriver) event(file int, w write, line int64, envelopeCluster string) {
	if !d.enabled {
		return
	}
	cluster := d.files[file].Settings.Cluster
	if cluster == "" {
		cluster = envelopeCluster
	}
	d.seq++
	d.writes[file]++
	w.opt.Line, w.opt.Seq = line, d.writes[file]
	d.jobs <- deriveJob{seq: d.seq, file: file, at: w.at, cluster: cluster, body: w.body, opt: w.opt}
}

// write is a successful write of an Endpoints or EndpointSlice object found in an audit event.
type write struct {
	at   time.Time
	body []byte
	opt  k8sobj.ObjectOptions // without Line and Seq
}

// endpointWrite reports whether the event is a successful write of endpoints. It reads the
// objectRef first, which every event's scan reads anyway: only an event whose objectRef names
// endpoints has its other members read, and the body is left to the workers.
func endpointWrite(s *memberScan) (write, bool) {
	refRaw, ok := s.raw(memberObjectRef)
	if !ok || !bytes.Contains(refRaw, endpointsMarker) {
		return write{}, false
	}
	str := func(m member) string { v, _ := s.str(m); return v }
	verb := str(memberVerb)
	if verb != "create" && verb != "update" && verb != "patch" && verb != "delete" {
		return write{}, false
	}
	if kind := str(memberKind); (kind != "Event" && kind != "") || str(memberStage) != "ResponseComplete" {
		return write{}, false
	}
	refStr := func(key string) string { v, _ := topLevelString(refRaw, key); return v }
	resource := refStr("resource")
	if refStr("subresource") != "" || (resource != "endpoints" && resource != "endpointslices") {
		return write{}, false
	}
	status, ok := s.raw(memberResponseStatus)
	if !ok {
		return write{}, false
	}
	codeRaw, _ := topLevelRaw(status, "code")
	code, err := strconv.Atoi(string(codeRaw))
	if err != nil || code < 200 || code >= 300 {
		return write{}, false // not a successful write of endpoints (malformed lines are DuckDB's to reject)
	}
	at, err := time.Parse(time.RFC3339Nano, strings.ToUpper(str(memberStageTimestamp))) // RFC 3339 allows a lowercase t and z
	if err != nil {
		return write{}, false
	}
	body, _ := s.raw(memberResponseObject)
	if (verb == "create" || verb == "update") && len(body) == 0 {
		body, _ = s.raw(memberRequestObject) // a patch's requestObject is the patch, not the object
	}
	if len(body) == 0 && verb != "delete" {
		return write{}, false // logged at Metadata level: no body to read
	}
	return write{at: at, body: body, opt: k8sobj.ObjectOptions{
		Event: verb, Kind: resource, Deleted: verb == "delete", Namespace: refStr("namespace"), Name: refStr("name"),
	}}, true
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
	rejects []load.Rejected
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
	c.rejects = append(c.rejects, load.Rejected{Line: int64(line), Offset: offset, Reason: reason, Text: []byte(excerpt)})
}

// finish inserts the held rows once the events are loaded, drops the rows of events that did
// not become audit_events rows (rejected, or duplicates of loaded events: removed says settle
// deleted some of the loads' rows), and the rows an earlier load already has. Bodies that gave no
// endpoint states go to ingest_errors under the endpoints kind, with a note on their file: their
// events were loaded.
func (d *endpointDeriver) finish(ctx context.Context, files []*load.File, removed bool) error {
	if err := errors.Join(d.stop(), d.sink.W.Close()); err != nil {
		return fmt.Errorf("deriving endpoint states: %w", err)
	}
	conn, first, last := files[0].Conn, files[0].LoadID, files[len(files)-1].LoadID
	// Without rows removed, every event the rows came from is a row of the loads, and the join of
	// each table with the loads' events is left out (1.2-1.7 s of a load of 10M events).
	if removed {
		for _, table := range d.sink.W.Tables() {
			_, err := conn.ExecContext(ctx, fmt.Sprintf(`DELETE FROM %s d WHERE d.load_id BETWEEN $1 AND $2 AND d.source = 'audit'
				AND NOT EXISTS (SELECT 1 FROM audit_events a WHERE a.load_id = d.load_id AND a.source_line = d.source_line)`, table), first, last)
			if err != nil {
				return fmt.Errorf("deriving endpoint states: %w", err)
			}
		}
	}
	if _, err := d.sink.W.RemoveDuplicates(ctx, first, last); err != nil {
		return fmt.Errorf("deriving endpoint states: %w", err)
	}
	for i, f := range files {
		if len(d.rejects[i]) == 0 {
			continue
		}
		if err := f.WriteErrors(ctx, k8sobj.Loader{}.Kind(), load.SeverityWarning, d.rejects[i]); err != nil {
			return err
		}
		f.AddNote(fmt.Sprintf("%s with Endpoints bodies that gave no endpoint states (see ingest_errors, kind endpoints)", load.Plural(len(d.rejects[i]), "event")))
	}
	return nil
}
