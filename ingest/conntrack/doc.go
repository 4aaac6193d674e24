// Package conntrack parses Linux connection tracking evidence into records
// for the kubesift tables conntrack_entries, conntrack_events,
// conntrack_stats, conntrack_limits and kernel_events (documented in
// tables.go).
//
// Accepted inputs (see Format): conntrack -L in its default form and with
// -o extended, id, ktimestamp, timestamp, save and xml; /proc/net/nf_conntrack;
// conntrack -E event streams (with or without -o timestamp); conntrack -S;
// /proc/net/stat/nf_conntrack (hex, one row per CPU); conntrack -C; sysctl
// output for net.netfilter.nf_conntrack_* (sysctl -a style and /proc/sys
// style; a file named after one sysctl, like a copy of
// /proc/sys/net/netfilter/nf_conntrack_max, holds that setting's value:
// Options.Setting, SysctlFileSetting); and kernel logs (dmesg, dmesg -T, journalctl -o short-iso, syslog)
// for "nf_conntrack: table full" messages. IPv4 and IPv6; tcp, udp, udplite,
// icmp, icmpv6, sctp, dccp, gre.
//
// Usage: pick the format with DetectFormat on the first few KB of a file (or
// from the file name), then stream it with Options.Parse, which calls a Handler per
// record. Parsing is streaming and line-length unlimited; XML is decoded
// element by element. Lines that cannot be parsed are reported through
// Handler.Bad with a reason (e.g. `unknown protocol "foo"`,
// `missing dport= in reply tuple`) and parsing continues; nothing on a parsed
// line is dropped (unknown tokens go to the extra column).
//
// conntrack prints "conntrack v1.4.7 (conntrack-tools): N flow entries have
// been shown." on stderr. With 2>&1 it often lands in the middle of an entry
// line; the parser removes it and rejoins the entry.
//
// Records carry every column of their table except the three leading ones the
// caller knows (node, captured_at, source_file) and the two trailing ones (load_id, cluster);
// each record's Values method returns the columns between in table order, so a row is
// append([]any{node, capturedAt, sourceFile}, rec.Values()..., loadID, cluster). Loader (load.go) is the
// conntrack kind of ingest: it picks the format from the content or the file name and loads
// the rows with the node and capture time of the file's path.
package conntrack
