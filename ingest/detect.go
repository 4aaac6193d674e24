package ingest

import (
	"bytes"
	"path/filepath"
	"strings"

	"github.com/kubesift/kubesift/ingest/conntrack"
	"github.com/kubesift/kubesift/ingest/k8sobj"
)

// DetectKind guesses the kind of evidence from a file's name and first bytes (decompressed).
func DetectKind(name string, head []byte) (Kind, bool) {
	if looksLikeAudit(head) {
		return KindAudit, true
	}
	if k8sobj.Detect(head) {
		return KindEndpoints, true
	}
	if _, ok := conntrack.DetectFormat(head); ok {
		return KindConntrack, true
	}
	if _, ok := conntrackFormatFromName(name); ok {
		return KindConntrack, true
	}
	return "", false
}

// conntrackFormatFromName recognises the file names of a capture bundle (and the usual names
// people give such files), for files whose content alone does not tell, like a dmesg without
// conntrack lines.
func conntrackFormatFromName(name string) (conntrack.Format, bool) {
	base := strings.ToLower(filepath.Base(name))
	switch {
	case strings.HasPrefix(base, "conntrack_s") || strings.HasPrefix(base, "conntrack-s"):
		return conntrack.FormatStats, true
	case strings.HasPrefix(base, "conntrack_c") || strings.HasPrefix(base, "conntrack-c"):
		return conntrack.FormatCount, true
	case strings.HasPrefix(base, "conntrack_e") || strings.HasPrefix(base, "conntrack-e"):
		return conntrack.FormatEvents, true
	case strings.HasPrefix(base, "conntrack_l") || strings.HasPrefix(base, "conntrack-l"):
		return conntrack.FormatList, true
	case strings.HasPrefix(base, "proc_net_stat_nf_conntrack"):
		return conntrack.FormatProcStat, true
	case strings.HasPrefix(base, "proc_net_nf_conntrack") || base == "nf_conntrack":
		return conntrack.FormatProc, true
	case strings.HasPrefix(base, "sysctl"):
		return conntrack.FormatSysctl, true
	case strings.HasPrefix(base, "dmesg") || strings.HasPrefix(base, "kern") || strings.HasPrefix(base, "journal"):
		return conntrack.FormatKernelLog, true
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
