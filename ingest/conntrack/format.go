package conntrack

import (
	"bytes"
)

// Format identifies one kind of conntrack evidence. The value is stored in
// the format column of every table.
type Format string

// Supported formats.
const (
	FormatList      Format = "conntrack-L"       // conntrack -L [-o id|ktimestamp|timestamp|extended]
	FormatExtended  Format = "conntrack-L-ext"   // conntrack -L -o extended ("ipv4     2 tcp ...")
	FormatProc      Format = "proc-nf_conntrack" // /proc/net/nf_conntrack
	FormatEvents    Format = "conntrack-E"       // conntrack -E [-o timestamp]
	FormatSave      Format = "conntrack-save"    // conntrack -L -o save (and -E -o save)
	FormatXML       Format = "conntrack-xml"     // conntrack -L -o xml (and -E -o xml)
	FormatStats     Format = "conntrack-S"       // conntrack -S
	FormatProcStat  Format = "proc-stat"         // /proc/net/stat/nf_conntrack (hex)
	FormatCount     Format = "conntrack-C"       // conntrack -C
	FormatSysctl    Format = "sysctl"            // sysctl -a / grep . /proc/sys/net/netfilter/*
	FormatKernelLog Format = "kernel-log"        // dmesg, dmesg -T, journalctl -k -o short-iso, syslog
	FormatUnknown   Format = ""
)

// Formats lists every supported format.
var Formats = []Format{FormatList, FormatExtended, FormatProc, FormatEvents, FormatSave, FormatXML,
	FormatStats, FormatProcStat, FormatCount, FormatSysctl, FormatKernelLog}

// DetectFormat guesses the format of a file from its first few KB. It looks
// at the first meaningful line (skipping blank lines and conntrack's
// "N flow entries have been shown." trailer). ok is false when nothing
// matches.
//
// /proc/net/nf_conntrack and conntrack -L -o extended differ only in details;
// a line with "zone=" is taken as /proc. Both go through the same parser, so
// a wrong guess only changes the format column.
func DetectFormat(head []byte) (Format, bool) {
	head = bytes.TrimPrefix(head, utf8BOM)
	t := bytes.TrimLeft(head, " \t\r\n")
	if bytes.HasPrefix(t, []byte("<?xml")) || bytes.HasPrefix(t, []byte("<conntrack")) || bytes.HasPrefix(t, []byte("<flow")) {
		return FormatXML, true
	}
	rest := head
	kernelHints, trailers, otherSysctls := 0, 0, 0
	for n := 0; len(rest) > 0 && n < 64; n++ {
		var line []byte
		if i := bytes.IndexByte(rest, '\n'); i >= 0 {
			line, rest = rest[:i], rest[i+1:]
		} else {
			line, rest = rest, nil
		}
		line = bytes.TrimSpace(line)
		if len(line) == 0 {
			continue
		}
		if isTrailerLine(line) {
			trailers++
			continue
		}
		if f, ok := detectLine(line); ok {
			if f == FormatKernelLog {
				// A log line is a kernel log of interest only if it mentions conntrack: any
				// program's log starts with a timestamp. (A dmesg without conntrack lines is
				// recognised by its file name in the capture bundle instead.)
				kernelHints++
				if bytes.Contains(head, []byte("nf_conntrack: ")) {
					return FormatKernelLog, true
				}
				continue
			}
			return f, true
		}
		if kernelHints == 0 && sysctlShaped(line) {
			// sysctl -a prints abi.*, fs.*, kernel.* ... before net.netfilter.*
			otherSysctls++
			continue
		}
		if kernelHints > 0 {
			continue
		}
		return FormatUnknown, false
	}
	if otherSysctls > 0 {
		return FormatSysctl, true
	}
	if trailers > 0 {
		// only conntrack's "N flow entries have been shown." (its stderr)
		return FormatList, true
	}
	return FormatUnknown, false
}

// sysctlShaped tells a line of sysctl -a: "kernel.pid_max = 4194304", a dotted name under one of
// sysctl's top-level directories, " = ", the value.
func sysctlShaped(line []byte) bool {
	name, _, ok := bytes.Cut(line, []byte(" ="))
	top, _, dotted := bytes.Cut(name, []byte("."))
	if !ok || !dotted || bytes.ContainsAny(name, " \t") {
		return false
	}
	switch string(top) {
	case "abi", "crypto", "debug", "dev", "fs", "kernel", "net", "sunrpc", "user", "vm":
		return true
	}
	return false
}

func isTrailerLine(line []byte) bool {
	return bytes.HasPrefix(line, []byte("conntrack v")) && bytes.Contains(line, []byte("(conntrack-tools): "))
}

func detectLine(line []byte) (Format, bool) {
	switch {
	case bytes.HasPrefix(line, []byte("entries")) && bytes.Contains(line, []byte("insert_failed")):
		return FormatProcStat, true
	case bytes.HasPrefix(line, []byte("cpu=")) || (bytes.Contains(line, []byte("found=")) && bytes.Contains(line, []byte("insert_failed="))):
		return FormatStats, true
	case allDigits(line):
		return FormatCount, true
	case bytes.HasPrefix(line, []byte("net.netfilter.")) || bytes.HasPrefix(line, []byte("net.nf_conntrack")) ||
		bytes.HasPrefix(line, []byte("/proc/sys/net/")) || bytes.HasPrefix(line, []byte("net/netfilter/")):
		return FormatSysctl, true
	case len(line) > 3 && line[0] == '-' && (line[1] == 'A' || line[1] == 'I' || line[1] == 'U' || line[1] == 'D') && line[2] == ' ':
		return FormatSave, true
	case bytes.HasPrefix(line, []byte("[NEW]")) || bytes.HasPrefix(line, []byte("[UPDATE]")) || bytes.HasPrefix(line, []byte("[DESTROY]")):
		return FormatEvents, true
	}
	if line[0] == '[' {
		// "[1795235091.568474]\t [NEW] ..." (conntrack -E -o timestamp) or dmesg "[  720.861746] ..."
		if i := bytes.IndexByte(line, ']'); i > 0 {
			after := bytes.TrimSpace(line[i+1:])
			if bytes.HasPrefix(after, []byte("[NEW]")) || bytes.HasPrefix(after, []byte("[UPDATE]")) || bytes.HasPrefix(after, []byte("[DESTROY]")) {
				return FormatEvents, true
			}
			return FormatKernelLog, true
		}
	}
	first, rest := nextField(line)
	switch string(first) {
	case "ipv4", "ipv6":
		if bytes.Contains(rest, []byte(" zone=")) {
			return FormatProc, true
		}
		return FormatExtended, true
	case "tcp", "udp", "udplite", "icmp", "icmpv6", "sctp", "dccp", "gre", "unknown":
		return FormatList, true
	}
	// journalctl short-iso / syslog / dmesg -T
	if bytes.Contains(line, []byte(" kernel: ")) || looksISOTime(line) {
		return FormatKernelLog, true
	}
	return FormatUnknown, false
}

func allDigits(b []byte) bool {
	if len(b) == 0 {
		return false
	}
	for _, c := range b {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}

func looksISOTime(b []byte) bool {
	return len(b) > 19 && b[4] == '-' && b[7] == '-' && b[10] == 'T' && b[13] == ':'
}

// nextField splits off the first space/tab separated field of b.
func nextField(b []byte) (field, rest []byte) {
	i := 0
	for i < len(b) && (b[i] == ' ' || b[i] == '\t') {
		i++
	}
	j := i
	for j < len(b) && b[j] != ' ' && b[j] != '\t' {
		j++
	}
	return b[i:j], b[j:]
}
