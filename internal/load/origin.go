package load

import (
	"fmt"
	"os"
	"path/filepath"
	"time"
)

// UnknownNode names the node of evidence whose node nobody said.
const UnknownNode = "unknown"

// Origin finds the node and capture time of the file, in this order: --node/--at; the capture
// bundle layout <node>/<RFC3339 time>/<file>; a time in the file name
// (endpoints-2026-11-21T04:28:20Z.json); and, with a note, the file's modification time. A
// node is looked for only when needNode is set; nobody's node is UnknownNode, with a note.
func (f *File) Origin(needNode bool) (node string, capturedAt time.Time) {
	path := f.Src.Name
	node, capturedAt = f.Settings.Node, f.Settings.At
	dir := filepath.Dir(path)
	if t, ok := TimeFromFileName(filepath.Base(dir)); ok && path != "-" {
		if capturedAt.IsZero() {
			capturedAt = t
		}
		if node == "" {
			node = filepath.Base(filepath.Dir(dir))
		}
	}
	if t, ok := TimeFromFileName(filepath.Base(path)); ok && capturedAt.IsZero() {
		capturedAt = t
	}
	if capturedAt.IsZero() {
		capturedAt = time.Now().UTC()
		if st, err := os.Stat(path); err == nil && path != "-" {
			capturedAt = st.ModTime().UTC()
		}
		f.AddNote(fmt.Sprintf("no capture time in the path (want <node>/<RFC3339 time>/%s or a time in the file name); using %s from the file's modification time, pass --at to set it", filepath.Base(path), capturedAt.Format(time.RFC3339)))
	}
	if needNode && node == "" {
		node = UnknownNode
		f.AddNote(fmt.Sprintf("no node name in the path (want <node>/<RFC3339 time>/%s); using %q, pass --node to set it", filepath.Base(path), UnknownNode))
	}
	return node, capturedAt
}
