package ingest

import (
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/kubesift/kubesift/ingest/k8sobj"
)

// origin says where and when a piece of node or snapshot evidence was captured.
type origin struct {
	node       string
	capturedAt time.Time
	warning    string // set when a fallback was used
}

// UnknownNode names the node of evidence whose node nobody said.
const UnknownNode = "unknown"

// evidenceOrigin finds the node and capture time of a file, in this order: --node/--at; the
// capture bundle layout <node>/<RFC3339 time>/<file>; a time in the file name
// (endpoints-2026-11-21T04:28:20Z.json); and, with a warning, the file's modification time.
func evidenceOrigin(path string, opt Options, needNode bool) origin {
	o := origin{node: opt.Node, capturedAt: opt.At}
	dir := filepath.Dir(path)
	if t, ok := k8sobj.TimeFromFileName(filepath.Base(dir)); ok && path != "-" {
		if o.capturedAt.IsZero() {
			o.capturedAt = t
		}
		if o.node == "" {
			o.node = filepath.Base(filepath.Dir(dir))
		}
	}
	if t, ok := k8sobj.TimeFromFileName(filepath.Base(path)); ok && o.capturedAt.IsZero() {
		o.capturedAt = t
	}
	if o.capturedAt.IsZero() {
		o.capturedAt = time.Now().UTC()
		if st, err := os.Stat(path); err == nil && path != "-" {
			o.capturedAt = st.ModTime().UTC()
		}
		o.warning = fmt.Sprintf("no capture time in the path (want <node>/<RFC3339 time>/%s or a time in the file name); using %s from the file's modification time, pass --at to set it", filepath.Base(path), o.capturedAt.Format(time.RFC3339))
	}
	if needNode && o.node == "" {
		o.node = UnknownNode
		w := fmt.Sprintf("no node name in the path (want <node>/<RFC3339 time>/%s); using %q, pass --node to set it", filepath.Base(path), UnknownNode)
		if o.warning != "" {
			w = o.warning + "; " + w
		}
		o.warning = w
	}
	return o
}
