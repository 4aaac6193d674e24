package k8sobj

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"time"

	"github.com/kubesift/kubesift/internal/load"
	"github.com/kubesift/kubesift/internal/rows"
	"github.com/kubesift/kubesift/store"
)

// Loader loads snapshots of Kubernetes objects: kubectl get -o json|yaml output, Lists,
// multi-document YAML, -w streams and watch-event streams.
type Loader struct{}

// Kind names the evidence for --kind.
func (Loader) Kind() string { return "endpoints" }

// Detect recognises a snapshot from its first bytes.
func (Loader) Detect(_ string, head []byte) bool { return Detect(head) }

// Tables are the object tables.
func (Loader) Tables() []store.Table { return Tables }

// Resumable is false: a snapshot is a whole, loaded once.
func (Loader) Resumable() bool { return false }

// Load loads one snapshot file: LoadRun of the file alone.
func (l Loader) Load(ctx context.Context, f *load.File) error { return l.LoadRun(ctx, []*load.File{f}) }

// LoadRun loads snapshot files, each taken at the time its path or --at says, of the cluster that
// --cluster (or --cluster-per-dir) names, or else the file (HeadCluster); a directory of
// snapshots loads with the statements of one file (load.LoadRowsRun).
func (Loader) LoadRun(ctx context.Context, files []*load.File) error {
	return load.LoadRowsRun(ctx, files, func(f *load.File) (load.Parse, error) {
		_, capturedAt := f.Origin(false)
		cluster := f.Settings.Cluster
		if cluster == "" {
			cluster = HeadCluster(f.Src.Head)
		}
		return func(r io.Reader, w *rows.Writer) ([]load.Rejected, error) {
			sink := &RowSink{W: w, CapturedAt: capturedAt, Source: "snapshot", File: f.Src.Name, LoadID: f.LoadID, Cluster: cluster}
			_, err := Decode(f.Src.Name, r, sink)
			return sink.Rejects, err
		}, nil
	})
}

// RowSink is a Handler that appends records as rows, with the CallerColumns in front and the
// cluster last.
type RowSink struct {
	W          *rows.Writer
	CapturedAt time.Time
	Source     string // snapshot or audit
	File       string
	LoadID     int64
	Cluster    string // "" when unknown
	Rejects    []load.Rejected
}

// Row appends r.
func (s *RowSink) Row(r Record) error { return s.Append(r.Table(), r.Values()) }

// Append appends the values of a record of table.
func (s *RowSink) Append(table string, values []any) error {
	row := make([]any, 0, len(values)+5)
	row = append(append(append(row, s.CapturedAt, s.Source, s.File, s.LoadID), values...), s.Cluster)
	return s.W.Append(table, row...)
}

// Bad keeps what could not be used, for ingest_errors.
func (s *RowSink) Bad(line int, offset int64, reason, excerpt string) {
	s.Rejects = append(s.Rejects, load.Rejected{Line: int64(line), Offset: offset, Reason: reason, Text: []byte(excerpt)})
}

// HeadCluster returns the cluster a `kubesift snapshot` List records before its items
// ({"apiVersion":"v1","kind":"List","kubesift":{"cluster":"prod"},"items":[...]}, see
// snapshot.ClusterField), read from the head of the file; "" when it records none.
func HeadCluster(head []byte) string {
	dec := json.NewDecoder(bytes.NewReader(head))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return ""
	}
	for dec.More() {
		key, err := dec.Token()
		if err != nil || key == "items" {
			return ""
		}
		var value json.RawMessage
		if err := dec.Decode(&value); err != nil {
			return ""
		}
		if key == "kubesift" {
			var rec struct {
				Cluster string `json:"cluster"`
			}
			json.Unmarshal(value, &rec)
			return rec.Cluster
		}
	}
	return ""
}
