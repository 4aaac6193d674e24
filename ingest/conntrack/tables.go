package conntrack

import "github.com/kubesift/kubesift/store"

// Conntrack tables. Every table starts with the three columns the ingest glue
// supplies (node, captured_at, source_file); the following columns map one to
// one, in order, to the fields of this package's records
// (Entry, Event, Stat, Limits, KernelEvent), whose Values() method returns
// them in this order; the last two columns are the load_id and the cluster.

func conntrackLeadingColumns(what string) []store.Column {
	return []store.Column{
		{Name: "node", Type: "VARCHAR", Doc: "Node the evidence was captured on (supplied by the ingest run, from the evidence layout or --node)."},
		{Name: "captured_at", Type: "TIMESTAMPTZ", Doc: "When the " + what + " was captured (supplied by the ingest run: file metadata or bundle manifest); NULL if unknown."},
		{Name: "source_file", Type: "VARCHAR", Doc: "Path of the evidence file, relative to the ingested root."},
	}
}

func tupleColumns(dir, desc string) []store.Column {
	return []store.Column{
		{Name: dir + "_src", Type: "VARCHAR", Doc: "Source address of the " + desc + " tuple, canonical text form (IPv6 compressed, so /proc's full form and conntrack's short form compare equal)."},
		{Name: dir + "_dst", Type: "VARCHAR", Doc: "Destination address of the " + desc + " tuple."},
		{Name: dir + "_sport", Type: "INTEGER", Doc: "Source port of the " + desc + " tuple (tcp, udp, udplite, sctp, dccp); NULL otherwise."},
		{Name: dir + "_dport", Type: "INTEGER", Doc: "Destination port of the " + desc + " tuple; NULL for protocols without ports."},
		{Name: dir + "_icmp_type", Type: "INTEGER", Doc: "ICMP/ICMPv6 type (type=) of the " + desc + " tuple; NULL for other protocols (and for the reply tuple of -o save, which does not print it)."},
		{Name: dir + "_icmp_code", Type: "INTEGER", Doc: "ICMP/ICMPv6 code (code=) of the " + desc + " tuple."},
		{Name: dir + "_icmp_id", Type: "INTEGER", Doc: "ICMP/ICMPv6 identifier (id= inside the tuple) of the " + desc + " tuple."},
		{Name: dir + "_packets", Type: "BIGINT", Doc: "packets= of the " + desc + " direction; NULL unless accounting (net.netfilter.nf_conntrack_acct=1) was on."},
		{Name: dir + "_bytes", Type: "BIGINT", Doc: "bytes= of the " + desc + " direction; NULL unless accounting was on."},
		{Name: dir + "_zone", Type: "BIGINT", Doc: "Directional conntrack zone of the " + desc + " tuple (zone printed inside the tuple, zone-orig=/zone-reply=, --orig-zone/--reply-zone); NULL when not directional."},
	}
}

func entryColumns() []store.Column {
	cols := []store.Column{
		{Name: "format", Type: "VARCHAR", Doc: "Input format: conntrack-L, conntrack-L-ext, proc-nf_conntrack, conntrack-save, conntrack-xml (conntrack-E for events)."},
		{Name: "family", Type: "VARCHAR", Doc: "ipv4 or ipv6 (from the addresses, checked against an ipv4/ipv6 prefix when present)."},
		{Name: "proto", Type: "VARCHAR", Doc: "Layer 4 protocol name: tcp, udp, udplite, icmp, icmpv6, sctp, dccp, gre, or unknown."},
		{Name: "proto_num", Type: "INTEGER", Doc: "Layer 4 protocol number (6 tcp, 17 udp, 1 icmp, 58 icmpv6, 132 sctp...)."},
		{Name: "state", Type: "VARCHAR", Doc: "Protocol state (TCP: SYN_SENT, SYN_RECV, ESTABLISHED, FIN_WAIT, CLOSE_WAIT, LAST_ACK, TIME_WAIT, CLOSE, ...; SCTP/DCCP states); NULL for protocols without state (udp, icmp)."},
		{Name: "timeout_s", Type: "BIGINT", Doc: "Seconds until the entry expires, as printed; NULL when not printed (DESTROY events)."},
	}
	cols = append(cols, tupleColumns("orig", "original")...)
	cols = append(cols, tupleColumns("reply", "reply")...)
	cols = append(cols,
		store.Column{Name: "flags", Type: "VARCHAR[]", Doc: "Status flags, normalised across formats: ASSURED, UNREPLIED, OFFLOAD, HW_OFFLOAD ([ASSURED] in text, <assured/> in XML, -u ...ASSURED in save; UNREPLIED = SEEN_REPLY not set). Empty list when none. Use list_contains(flags, 'ASSURED')."},
		store.Column{Name: "mark", Type: "BIGINT", Doc: "Connection mark (mark=); NULL when not printed."},
		store.Column{Name: "zone", Type: "BIGINT", Doc: "Conntrack zone (zone= after the tuples, -w in save); NULL when not printed (conntrack -L omits zone 0, /proc prints zone=0)."},
		store.Column{Name: "use", Type: "BIGINT", Doc: "Reference count (use=)."},
		store.Column{Name: "id", Type: "BIGINT", Doc: "Conntrack id (id=, printed by -o id and XML); NULL when not printed."},
		store.Column{Name: "delta_time_s", Type: "BIGINT", Doc: "Age of the entry in seconds (delta-time=, <deltatime>), printed when net.netfilter.nf_conntrack_timestamp=1."},
		store.Column{Name: "start_time", Type: "TIMESTAMPTZ", Doc: "Entry creation time: [start=...] of -o ktimestamp (wall clock of the capture host, read as UTC unless configured) or XML <start> (exact)."},
		store.Column{Name: "stop_time", Type: "TIMESTAMPTZ", Doc: "Entry destruction time ([stop=...] / XML <stop>), DESTROY events only."},
		store.Column{Name: "extra", Type: "VARCHAR", Doc: "Tokens the parser kept but has no column for, verbatim and space separated (e.g. secctx=, helper=, GRE keys, save's status=SEEN_REPLY,ASSURED); NULL when none. Nothing on a parsed line is dropped."},
		store.Column{Name: "source_line", Type: "BIGINT", Doc: "1-based line of the entry in source_file (for XML, the line of its <flow>). An entry split by conntrack's stderr trailer keeps the line where it starts."},
	)
	return cols
}

var conntrackEntriesTable = store.Table{
	Name:       "conntrack_entries",
	Evidence:   "conntrack",
	TimeColumn: "captured_at",
	DedupeKey:  []string{"node", "captured_at", "proto", "orig_src", "orig_dst", "orig_sport", "orig_dport", "orig_icmp_type", "orig_icmp_code", "orig_icmp_id", "coalesce(%[1]s.zone, 0)"},
	Doc: "One row per connection tracking entry of a conntrack table dump: conntrack -L (default, -o extended, id, " +
		"ktimestamp, timestamp, save, xml) or /proc/net/nf_conntrack. The same capture gives the same rows in every " +
		"format, apart from what a format does not print (NULL). conntrack's 'N flow entries have been shown.' " +
		"trailer is not a row, even when it is spliced into an entry line by 2>&1.",
	Columns: append(conntrackLeadingColumns("dump"), entryColumns()...),
}

var conntrackEventsTable = store.Table{
	Name:       "conntrack_events",
	Evidence:   "conntrack",
	TimeColumn: "captured_at",
	DedupeKey:  []string{"node", "event_time", "event_type", "proto", "orig_src", "orig_dst", "orig_sport", "orig_dport", "orig_icmp_id", "coalesce(%[1]s.zone, 0)", "state"},
	Doc: "One row per conntrack event of conntrack -E (optionally -o timestamp, extended, save or xml): the event type " +
		"and time, then the same columns as conntrack_entries describing the entry at the time of the event.",
	Columns: append(append(conntrackLeadingColumns("event stream"),
		store.Column{Name: "event_type", Type: "VARCHAR", Doc: "NEW, UPDATE or DESTROY."},
		store.Column{Name: "event_time", Type: "TIMESTAMPTZ", Doc: "Event time from -o timestamp ([epoch.usec], exact) or XML <when> (wall clock, second precision); NULL without."},
	), entryColumns()...),
}

var conntrackStatsTable = withStatsDedupeKey(store.Table{
	Name:       "conntrack_stats",
	Evidence:   "conntrack",
	TimeColumn: "captured_at",
	Doc: "Per-CPU conntrack counters from conntrack -S or /proc/net/stat/nf_conntrack (hex, decoded). One row per CPU " +
		"line. Counters use the conntrack -S names; /proc aliases are mapped (clashres -> clash_resolve, chainlength " +
		"-> chaintoolong, icmp_error -> error). A counter the source does not print is NULL. Counters are cumulative " +
		"since boot, per network namespace: compare snapshots (captured_at) to get rates. A table-full drop shows as drop. " +
		"A row is a duplicate of an earlier one only when node, captured_at, format, cpu and every counter are the same " +
		"(source_file and source_line aside): a file loaded again, or a copy of it, adds nothing, and a CPU line that " +
		"repeats another file's is left out; the rows of another format or other counters are kept (conntrack -S and " +
		"/proc/net/stat/nf_conntrack of one capture, two conntrack -S read a moment apart and given the same --at). To " +
		"total a capture's counters, take per node, captured_at, format and cpu the largest value (counters only grow), " +
		"sum it over the CPUs, and take the largest of the formats: never sum the rows of several files.",
	Columns: append(conntrackLeadingColumns("counters"),
		store.Column{Name: "format", Type: "VARCHAR", Doc: "conntrack-S or proc-stat."},
		store.Column{Name: "cpu", Type: "BIGINT", Doc: "CPU number (cpu= of conntrack -S; row index of /proc/net/stat/nf_conntrack, which is the CPU number on machines without CPU-number holes). NULL for a total line without cpu=."},
		store.Column{Name: "entries", Type: "BIGINT", Doc: "Entries in the table (/proc and old conntrack -S only; the same global value on every CPU row: do not sum it)."},
		store.Column{Name: "searched", Type: "BIGINT", Doc: "Hash lookups (old kernels only)."},
		store.Column{Name: "found", Type: "BIGINT", Doc: "Lookups that found an entry."},
		store.Column{Name: "new", Type: "BIGINT", Doc: "New entries (old kernels; always 0 in /proc on current kernels)."},
		store.Column{Name: "invalid", Type: "BIGINT", Doc: "Packets that could not be tracked (malformed, out-of-window TCP, ...)."},
		store.Column{Name: "ignore", Type: "BIGINT", Doc: "Packets already tracked/untracked (old kernels; 0 in /proc on current kernels)."},
		store.Column{Name: "delete", Type: "BIGINT", Doc: "Deleted entries (old kernels; 0 in /proc on current kernels)."},
		store.Column{Name: "delete_list", Type: "BIGINT", Doc: "Entries put on the dying list (old kernels)."},
		store.Column{Name: "insert", Type: "BIGINT", Doc: "Entries inserted (old kernels; 0 on current kernels)."},
		store.Column{Name: "insert_failed", Type: "BIGINT", Doc: "Insertions that failed (e.g. same tuple raced in, SNAT port clash): connections dropped."},
		store.Column{Name: "drop", Type: "BIGINT", Doc: "Packets dropped because a new entry could not be created (table full: see kernel_events kind='table_full')."},
		store.Column{Name: "early_drop", Type: "BIGINT", Doc: "Entries evicted early (unassured entries dropped to make room when the table is full)."},
		store.Column{Name: "error", Type: "BIGINT", Doc: "Packets with a conntrack error (ICMP errors not matching a connection; /proc icmp_error)."},
		store.Column{Name: "expect_new", Type: "BIGINT", Doc: "Entries created from an expectation."},
		store.Column{Name: "expect_create", Type: "BIGINT", Doc: "Expectations created."},
		store.Column{Name: "expect_delete", Type: "BIGINT", Doc: "Expectations deleted."},
		store.Column{Name: "search_restart", Type: "BIGINT", Doc: "Hash lookups restarted because of a concurrent resize or change."},
		store.Column{Name: "clash_resolve", Type: "BIGINT", Doc: "Insert clashes that were resolved (typically UDP/DNS races); /proc clashres."},
		store.Column{Name: "chaintoolong", Type: "BIGINT", Doc: "Inserts refused because a hash chain was too long; /proc chainlength."},
		store.Column{Name: "other", Type: "MAP(VARCHAR, BIGINT)", Doc: "Counters with no column, under their printed names; NULL when none."},
		store.Column{Name: "source_line", Type: "BIGINT", Doc: "1-based line in source_file."},
	),
})

// withStatsDedupeKey sets the dedupe key of conntrack_stats: every column but where the row was
// read (source_file, source_line). A counter snapshot is told from another by its values: keyed
// by node, captured_at and cpu alone, the second of two files of one capture time (conntrack -S
// beside /proc/net/stat/nf_conntrack, or an earlier and a later conntrack -S given the same --at)
// lost all its rows as duplicates, and with them the drops it counted, whichever file sorted
// first surviving. Keyed by the values, only the same counters seen again (the same file loaded
// again, a copy of it under another path) collapse. The other column is compared whole: the
// writer stores a map's entries in key order.
func withStatsDedupeKey(t store.Table) store.Table {
	for _, c := range t.Columns {
		if c.Name != "source_file" && c.Name != "source_line" {
			t.DedupeKey = append(t.DedupeKey, c.Name)
		}
	}
	return t
}

var conntrackLimitsTable = store.Table{
	Name:       "conntrack_limits",
	Evidence:   "conntrack",
	TimeColumn: "captured_at",
	// the names of the settings too: copies of single sysctls (nf_conntrack_max, nf_conntrack_buckets)
	// of one capture are different snapshots
	DedupeKey: []string{"node", "captured_at", "format", "list_sort(map_keys(%[1]s.settings))"},
	Doc: "One row per snapshot of the conntrack sysctls (sysctl -a / sysctl net.netfilter output, or " +
		"'grep . /proc/sys/net/netfilter/*', or a copy of one of them: a file named nf_conntrack_max, nf_conntrack_buckets, " +
		"... holding only its value), and one row per conntrack -C count. Wide form: the settings rules need " +
		"are typed columns (NULL when absent), e.g. WHERE nf_conntrack_count >= 0.9 * nf_conntrack_max. Long form: " +
		"settings holds every conntrack sysctl of the snapshot (including those with a column) under its short name " +
		"(net.netfilter. removed), value as text: settings['nf_conntrack_sctp_timeout_established'], or " +
		"unnest(map_entries(settings)) for name/value rows. A name repeated in one file starts a new snapshot row. " +
		"Non-conntrack sysctls are ignored. To combine a conntrack -C count with a sysctl max, join on node (and captured_at).",
	Columns: append(conntrackLeadingColumns("settings"),
		store.Column{Name: "format", Type: "VARCHAR", Doc: "sysctl (also a file named after one sysctl holding its value) or conntrack-C (a bare number in any other file: only nf_conntrack_count is set)."},
		store.Column{Name: "nf_conntrack_max", Type: "BIGINT", Doc: "Maximum number of entries (net.netfilter.nf_conntrack_max, alias net.nf_conntrack_max); new connections are dropped beyond it."},
		store.Column{Name: "nf_conntrack_count", Type: "BIGINT", Doc: "Entries in the table at capture time (sysctl, or conntrack -C)."},
		store.Column{Name: "nf_conntrack_buckets", Type: "BIGINT", Doc: "Hash table size."},
		store.Column{Name: "nf_conntrack_expect_max", Type: "BIGINT", Doc: "Maximum number of expectations."},
		store.Column{Name: "nf_conntrack_acct", Type: "BIGINT", Doc: "1 if per-entry packet/byte accounting is on."},
		store.Column{Name: "nf_conntrack_timestamp", Type: "BIGINT", Doc: "1 if entry timestamps (delta-time, start/stop) are on."},
		store.Column{Name: "nf_conntrack_events", Type: "BIGINT", Doc: "Event delivery setting (0 off, 1 on, 2 auto)."},
		store.Column{Name: "nf_conntrack_checksum", Type: "BIGINT", Doc: "1 if checksums of incoming packets are verified."},
		store.Column{Name: "nf_conntrack_log_invalid", Type: "BIGINT", Doc: "Protocol number whose invalid packets are logged (0 none, 255 all)."},
		store.Column{Name: "nf_conntrack_tcp_loose", Type: "BIGINT", Doc: "1 if already established TCP connections are picked up mid-stream."},
		store.Column{Name: "nf_conntrack_tcp_be_liberal", Type: "BIGINT", Doc: "1 if out-of-window TCP packets are not marked INVALID."},
		store.Column{Name: "nf_conntrack_tcp_max_retrans", Type: "BIGINT", Doc: "Retransmissions before nf_conntrack_tcp_timeout_max_retrans applies."},
		store.Column{Name: "nf_conntrack_tcp_timeout_syn_sent", Type: "BIGINT", Doc: "Seconds."},
		store.Column{Name: "nf_conntrack_tcp_timeout_syn_recv", Type: "BIGINT", Doc: "Seconds."},
		store.Column{Name: "nf_conntrack_tcp_timeout_established", Type: "BIGINT", Doc: "Seconds (default 432000 = 5 days)."},
		store.Column{Name: "nf_conntrack_tcp_timeout_fin_wait", Type: "BIGINT", Doc: "Seconds."},
		store.Column{Name: "nf_conntrack_tcp_timeout_close_wait", Type: "BIGINT", Doc: "Seconds."},
		store.Column{Name: "nf_conntrack_tcp_timeout_last_ack", Type: "BIGINT", Doc: "Seconds."},
		store.Column{Name: "nf_conntrack_tcp_timeout_time_wait", Type: "BIGINT", Doc: "Seconds an entry stays in TIME_WAIT (default 120)."},
		store.Column{Name: "nf_conntrack_tcp_timeout_close", Type: "BIGINT", Doc: "Seconds."},
		store.Column{Name: "nf_conntrack_tcp_timeout_max_retrans", Type: "BIGINT", Doc: "Seconds."},
		store.Column{Name: "nf_conntrack_tcp_timeout_unacknowledged", Type: "BIGINT", Doc: "Seconds."},
		store.Column{Name: "nf_conntrack_udp_timeout", Type: "BIGINT", Doc: "Seconds for unreplied/single UDP flows."},
		store.Column{Name: "nf_conntrack_udp_timeout_stream", Type: "BIGINT", Doc: "Seconds for UDP streams (replied flows)."},
		store.Column{Name: "nf_conntrack_icmp_timeout", Type: "BIGINT", Doc: "Seconds."},
		store.Column{Name: "nf_conntrack_icmpv6_timeout", Type: "BIGINT", Doc: "Seconds."},
		store.Column{Name: "nf_conntrack_generic_timeout", Type: "BIGINT", Doc: "Seconds for other protocols."},
		store.Column{Name: "settings", Type: "MAP(VARCHAR, VARCHAR)", Doc: "Every conntrack sysctl of the snapshot: short name (without net.netfilter.) -> value as printed. NULL for conntrack -C rows."},
		store.Column{Name: "source_line", Type: "BIGINT", Doc: "1-based line in source_file of the first setting of the snapshot."},
	),
}

var kernelEventsTable = store.Table{
	Name:       "kernel_events",
	Evidence:   "conntrack",
	TimeColumn: "captured_at",
	DedupeKey:  []string{"node", "raw"},
	Doc: "Conntrack-related kernel log lines from dmesg (with '[seconds]' or dmesg -T prefix, or none; also after dmesg -x's facility and level or /dev/kmsg's '<4>'), journalctl -k " +
		"-o short-iso, or syslog. kind = 'table_full' for 'nf_conntrack: table full, dropping packet' (init netns) and " +
		"'nf_conntrack: nf_conntrack: table full in netns N, dropping packet'; 'expect_table_full' for the expectation " +
		"table. The kernel rate-limits these messages: a row is at least one dropped packet, conntrack_stats.drop has the count.",
	Columns: append(conntrackLeadingColumns("log"),
		store.Column{Name: "format", Type: "VARCHAR", Doc: "kernel-log."},
		store.Column{Name: "at", Type: "TIMESTAMPTZ", Doc: "Wall clock time of the line (journalctl short-iso, dmesg -T read as UTC unless configured); NULL for plain dmesg (see uptime_s); a syslog time, which has no year, is dated in the year that puts it at or before captured_at (NULL when that is unknown)."},
		store.Column{Name: "uptime_s", Type: "DOUBLE", Doc: "Seconds since boot from a dmesg '[  720.861746]' prefix; NULL when absent."},
		store.Column{Name: "kind", Type: "VARCHAR", Doc: "table_full or expect_table_full."},
		store.Column{Name: "netns", Type: "BIGINT", Doc: "Network namespace inode from 'in netns N' (matches ls -l /proc/<pid>/ns/net); NULL for the init namespace message."},
		store.Column{Name: "message", Type: "VARCHAR", Doc: "The kernel message from 'nf_conntrack: ' on."},
		store.Column{Name: "raw", Type: "VARCHAR", Doc: "The whole log line."},
		store.Column{Name: "source_line", Type: "BIGINT", Doc: "1-based line in source_file."},
	),
}

// The dedupe keys of the conntrack tables let the same capture read from two formats, or
// dmesg's cumulative log, add rows once; conntrack -L leaves out zone 0, /proc prints it.
// conntrack_stats is keyed by its counters (withStatsDedupeKey): conntrack -S and
// /proc/net/stat/nf_conntrack print different counters, so both formats keep their rows.

// tables returns the conntrack tables in documentation order
// (entries, events, stats, limits, kernel events), each ending with load_id and cluster.
// The tests use it to check that record Values() match the columns between the leading
// three and the trailing two. The cluster is part of every dedupe key: two clusters may
// have nodes of the same name.
func tables() []store.Table {
	tables := []store.Table{conntrackEntriesTable, conntrackEventsTable, conntrackStatsTable, conntrackLimitsTable, kernelEventsTable}
	for i := range tables {
		tables[i].Columns = append(tables[i].Columns[:len(tables[i].Columns):len(tables[i].Columns)], loadIDColumn, store.ClusterColumn)
		tables[i].DedupeKey = append(tables[i].DedupeKey[:len(tables[i].DedupeKey):len(tables[i].DedupeKey)], store.ClusterColumn.Name)
	}
	return tables
}

var loadIDColumn = store.Column{Name: "load_id", Type: "BIGINT", Doc: "ingest_files.load_id of the load that added this row"}
