package ingest

import (
	"bytes"
)

// DetectKind guesses the kind of evidence from a file's name and first bytes (decompressed).
func DetectKind(name string, head []byte) (Kind, bool) {
	if looksLikeAudit(head) {
		return KindAudit, true
	}
	return "", false
}

// looksLikeAudit reports whether head starts an audit log: events (possibly behind a shipper's
// prefix) or EventList documents, one per line or pretty-printed.
func looksLikeAudit(head []byte) bool {
	probe := head[:min(len(head), 8<<10)]
	return bytes.Contains(probe, []byte(`audit.k8s.io/`)) &&
		(bytes.Contains(probe, []byte(`"auditID"`)) || bytes.Contains(probe, []byte(`"EventList"`)))
}
