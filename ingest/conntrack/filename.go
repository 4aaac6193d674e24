package conntrack

import (
	"path/filepath"
	"strings"
)

// formatFromName recognises the file names of a capture bundle (and the usual names
// people give such files), for files whose content alone does not tell, like a dmesg without
// conntrack lines.
func formatFromName(name string) (Format, bool) {
	base := strings.ToLower(filepath.Base(name))
	switch {
	case strings.HasPrefix(base, "conntrack_s") || strings.HasPrefix(base, "conntrack-s"):
		return FormatStats, true
	case strings.HasPrefix(base, "conntrack_c") || strings.HasPrefix(base, "conntrack-c"):
		return FormatCount, true
	case strings.HasPrefix(base, "conntrack_e") || strings.HasPrefix(base, "conntrack-e"):
		return FormatEvents, true
	case strings.HasPrefix(base, "conntrack_l") || strings.HasPrefix(base, "conntrack-l"):
		return FormatList, true
	case strings.HasPrefix(base, "proc_net_stat_nf_conntrack"):
		return FormatProcStat, true
	case strings.HasPrefix(base, "proc_net_nf_conntrack") || base == "nf_conntrack":
		return FormatProc, true
	case strings.HasPrefix(base, "sysctl"):
		return FormatSysctl, true
	case strings.HasPrefix(base, "dmesg") || strings.HasPrefix(base, "kern") || strings.HasPrefix(base, "journal"):
		return FormatKernelLog, true
	}
	return "", false
}
