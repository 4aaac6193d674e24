package conntrack

import (
	"database/sql"
	"net/netip"
	"sort"
	"time"
)

// Flags is the set of status flags conntrack prints in square brackets
// ([ASSURED], [UNREPLIED], [OFFLOAD], [HW_OFFLOAD]). XML (<assured/>,
// <unreplied/>) and save (-u SEEN_REPLY,ASSURED) outputs are normalised to
// the same vocabulary so that every format yields the same rows.
type Flags uint8

// Flag bits.
const (
	FlagAssured Flags = 1 << iota
	FlagUnreplied
	FlagOffload
	FlagHWOffload
)

var flagNames = [...]string{"ASSURED", "UNREPLIED", "OFFLOAD", "HW_OFFLOAD"}

// Strings returns the flag names in a fixed order (never nil).
func (f Flags) Strings() []string {
	out := make([]string, 0, 2)
	for i, n := range flagNames {
		if f&(1<<i) != 0 {
			out = append(out, n)
		}
	}
	return out
}

// Tuple is one direction (original or reply) of a connection.
type Tuple struct {
	Src      netip.Addr
	Dst      netip.Addr
	SPort    sql.Null[int32]
	DPort    sql.Null[int32]
	ICMPType sql.Null[int32]
	ICMPCode sql.Null[int32]
	ICMPID   sql.Null[int32]
	Packets  sql.Null[int64]
	Bytes    sql.Null[int64]
	Zone     sql.Null[int64]
}

// Entry is one row of conntrack_entries. The fields map one-to-one, in order,
// to the table columns after the three caller-supplied leading columns
// node, captured_at and source_file.
//
// The *Entry passed to Handler.Entry is reused by the parser: copy it (or call
// Values) before the handler returns if it must be retained.
type Entry struct {
	Format    Format
	Family    string // "ipv4" or "ipv6"
	Proto     string // "tcp", "udp", "icmp", "icmpv6", "sctp", ...
	ProtoNum  int32
	State     string // "" (NULL) for protocols without state
	TimeoutS  sql.Null[int64]
	Orig      Tuple
	Reply     Tuple
	Flags     Flags
	Mark      sql.Null[int64]
	Zone      sql.Null[int64]
	Use       sql.Null[int64]
	ID        sql.Null[int64]
	DeltaS    sql.Null[int64]
	Start     sql.Null[time.Time]
	Stop      sql.Null[time.Time]
	Extra     string // unrecognised tokens, verbatim, space separated; "" = NULL
	Line      int64  // 1-based line number of the entry in the source file
	ByteStart int64  // byte offset of the line (not a column; for diagnostics)
}

func nullStr(s string) any {
	if s == "" {
		return nil
	}
	return s
}

func nv[T any](n sql.Null[T]) any {
	if !n.Valid {
		return nil
	}
	return n.V
}

func addr(a netip.Addr) any {
	if !a.IsValid() {
		return nil
	}
	return a.String()
}

func (t *Tuple) appendValues(v []any) []any {
	return append(v, addr(t.Src), addr(t.Dst), nv(t.SPort), nv(t.DPort),
		nv(t.ICMPType), nv(t.ICMPCode), nv(t.ICMPID), nv(t.Packets), nv(t.Bytes), nv(t.Zone))
}

// Values returns the column values of conntrack_entries in table order,
// EXCLUDING the leading columns node, captured_at and source_file which the
// caller supplies: row = [node, captured_at, source_file] + e.Values().
func (e *Entry) Values() []any {
	v := make([]any, 0, 36)
	return e.appendValues(v)
}

func (e *Entry) appendValues(v []any) []any {
	v = append(v, string(e.Format), e.Family, e.Proto, e.ProtoNum, nullStr(e.State), nv(e.TimeoutS))
	v = e.Orig.appendValues(v)
	v = e.Reply.appendValues(v)
	v = append(v, e.Flags.Strings(), nv(e.Mark), nv(e.Zone), nv(e.Use), nv(e.ID), nv(e.DeltaS),
		nv(e.Start), nv(e.Stop), nullStr(e.Extra), e.Line)
	return v
}

// Event is one row of conntrack_events: an event header followed by the same
// columns as Entry.
type Event struct {
	Type string              // "NEW", "UPDATE" or "DESTROY"
	Time sql.Null[time.Time] // from -o timestamp "[epoch.usec]" (UTC), or XML <when>
	Entry
}

// Values returns the column values of conntrack_events in table order,
// EXCLUDING the leading columns node, captured_at and source_file.
func (e *Event) Values() []any {
	v := make([]any, 0, 38)
	v = append(v, e.Type, nv(e.Time))
	return e.Entry.appendValues(v)
}

// Stat is one row of conntrack_stats: the per-CPU counters of conntrack -S or
// one row of /proc/net/stat/nf_conntrack. Counters absent from the source are
// NULL. /proc column names are mapped to the conntrack -S names
// (clashres -> clash_resolve, chainlength -> chaintoolong,
// icmp_error -> error); anything unknown goes to Other.
type Stat struct {
	Format        Format
	CPU           sql.Null[int64] // NULL for a total line without cpu=
	Entries       sql.Null[int64]
	Searched      sql.Null[int64]
	Found         sql.Null[int64]
	New           sql.Null[int64]
	Invalid       sql.Null[int64]
	Ignore        sql.Null[int64]
	Delete        sql.Null[int64]
	DeleteList    sql.Null[int64]
	Insert        sql.Null[int64]
	InsertFailed  sql.Null[int64]
	Drop          sql.Null[int64]
	EarlyDrop     sql.Null[int64]
	Error         sql.Null[int64]
	ExpectNew     sql.Null[int64]
	ExpectCreate  sql.Null[int64]
	ExpectDelete  sql.Null[int64]
	SearchRestart sql.Null[int64]
	ClashResolve  sql.Null[int64]
	ChainTooLong  sql.Null[int64]
	Other         map[string]int64 // nil = NULL
	Line          int64
}

// Values returns the column values of conntrack_stats in table order,
// EXCLUDING the leading columns node, captured_at and source_file.
// The MAP column (other) is a map[any]any or nil: wrap it as duckdb.Map
// before appending.
func (s *Stat) Values() []any {
	var other any
	if len(s.Other) > 0 {
		m := make(map[any]any, len(s.Other))
		for k, v := range s.Other {
			m[k] = v
		}
		other = m
	}
	return []any{string(s.Format), nv(s.CPU), nv(s.Entries), nv(s.Searched), nv(s.Found), nv(s.New),
		nv(s.Invalid), nv(s.Ignore), nv(s.Delete), nv(s.DeleteList), nv(s.Insert), nv(s.InsertFailed),
		nv(s.Drop), nv(s.EarlyDrop), nv(s.Error), nv(s.ExpectNew), nv(s.ExpectCreate),
		nv(s.ExpectDelete), nv(s.SearchRestart), nv(s.ClashResolve), nv(s.ChainTooLong), other, s.Line}
}

// field returns the counter called name (conntrack -S spelling or a /proc
// alias), or nil if unknown.
func (s *Stat) field(name string) *sql.Null[int64] {
	switch name {
	case "entries":
		return &s.Entries
	case "searched":
		return &s.Searched
	case "found":
		return &s.Found
	case "new":
		return &s.New
	case "invalid":
		return &s.Invalid
	case "ignore":
		return &s.Ignore
	case "delete":
		return &s.Delete
	case "delete_list":
		return &s.DeleteList
	case "insert":
		return &s.Insert
	case "insert_failed":
		return &s.InsertFailed
	case "drop":
		return &s.Drop
	case "early_drop":
		return &s.EarlyDrop
	case "error", "icmp_error":
		return &s.Error
	case "expect_new":
		return &s.ExpectNew
	case "expect_create":
		return &s.ExpectCreate
	case "expect_delete":
		return &s.ExpectDelete
	case "search_restart":
		return &s.SearchRestart
	case "clash_resolve", "clashres":
		return &s.ClashResolve
	case "chaintoolong", "chainlength":
		return &s.ChainTooLong
	}
	return nil
}

// Limits is one row of conntrack_limits: one snapshot of the
// net.netfilter.nf_conntrack_* sysctls (or a conntrack -C count). The most
// used settings are typed columns; Settings holds every conntrack sysctl seen
// (including those with a column), keyed by the short name without the
// "net.netfilter." prefix, with the value verbatim.
type Limits struct {
	Format                   Format
	Max                      sql.Null[int64]
	Count                    sql.Null[int64]
	Buckets                  sql.Null[int64]
	ExpectMax                sql.Null[int64]
	Acct                     sql.Null[int64]
	Timestamp                sql.Null[int64]
	Events                   sql.Null[int64]
	Checksum                 sql.Null[int64]
	LogInvalid               sql.Null[int64]
	TCPLoose                 sql.Null[int64]
	TCPBeLiberal             sql.Null[int64]
	TCPMaxRetrans            sql.Null[int64]
	TCPTimeoutSynSent        sql.Null[int64]
	TCPTimeoutSynRecv        sql.Null[int64]
	TCPTimeoutEstablished    sql.Null[int64]
	TCPTimeoutFinWait        sql.Null[int64]
	TCPTimeoutCloseWait      sql.Null[int64]
	TCPTimeoutLastAck        sql.Null[int64]
	TCPTimeoutTimeWait       sql.Null[int64]
	TCPTimeoutClose          sql.Null[int64]
	TCPTimeoutMaxRetrans     sql.Null[int64]
	TCPTimeoutUnacknowledged sql.Null[int64]
	UDPTimeout               sql.Null[int64]
	UDPTimeoutStream         sql.Null[int64]
	ICMPTimeout              sql.Null[int64]
	ICMPv6Timeout            sql.Null[int64]
	GenericTimeout           sql.Null[int64]
	Settings                 map[string]string // nil = NULL
	Line                     int64             // line of the first setting of the snapshot
}

// Values returns the column values of conntrack_limits in table order,
// EXCLUDING the leading columns node, captured_at and source_file.
// The MAP column (settings) is a map[any]any or nil: wrap it as duckdb.Map
// before appending.
func (l *Limits) Values() []any {
	var settings any
	if len(l.Settings) > 0 {
		m := make(map[any]any, len(l.Settings))
		for k, v := range l.Settings {
			m[k] = v
		}
		settings = m
	}
	return []any{string(l.Format), nv(l.Max), nv(l.Count), nv(l.Buckets), nv(l.ExpectMax), nv(l.Acct),
		nv(l.Timestamp), nv(l.Events), nv(l.Checksum), nv(l.LogInvalid), nv(l.TCPLoose),
		nv(l.TCPBeLiberal), nv(l.TCPMaxRetrans), nv(l.TCPTimeoutSynSent), nv(l.TCPTimeoutSynRecv),
		nv(l.TCPTimeoutEstablished), nv(l.TCPTimeoutFinWait), nv(l.TCPTimeoutCloseWait),
		nv(l.TCPTimeoutLastAck), nv(l.TCPTimeoutTimeWait), nv(l.TCPTimeoutClose),
		nv(l.TCPTimeoutMaxRetrans), nv(l.TCPTimeoutUnacknowledged), nv(l.UDPTimeout),
		nv(l.UDPTimeoutStream), nv(l.ICMPTimeout), nv(l.ICMPv6Timeout), nv(l.GenericTimeout),
		settings, l.Line}
}

// SettingNames returns the keys of Settings, sorted.
func (l *Limits) SettingNames() []string {
	names := make([]string, 0, len(l.Settings))
	for k := range l.Settings {
		names = append(names, k)
	}
	sort.Strings(names)
	return names
}

func (l *Limits) field(short string) *sql.Null[int64] {
	switch short {
	case "nf_conntrack_max":
		return &l.Max
	case "nf_conntrack_count":
		return &l.Count
	case "nf_conntrack_buckets":
		return &l.Buckets
	case "nf_conntrack_expect_max":
		return &l.ExpectMax
	case "nf_conntrack_acct":
		return &l.Acct
	case "nf_conntrack_timestamp":
		return &l.Timestamp
	case "nf_conntrack_events":
		return &l.Events
	case "nf_conntrack_checksum":
		return &l.Checksum
	case "nf_conntrack_log_invalid":
		return &l.LogInvalid
	case "nf_conntrack_tcp_loose":
		return &l.TCPLoose
	case "nf_conntrack_tcp_be_liberal":
		return &l.TCPBeLiberal
	case "nf_conntrack_tcp_max_retrans":
		return &l.TCPMaxRetrans
	case "nf_conntrack_tcp_timeout_syn_sent":
		return &l.TCPTimeoutSynSent
	case "nf_conntrack_tcp_timeout_syn_recv":
		return &l.TCPTimeoutSynRecv
	case "nf_conntrack_tcp_timeout_established":
		return &l.TCPTimeoutEstablished
	case "nf_conntrack_tcp_timeout_fin_wait":
		return &l.TCPTimeoutFinWait
	case "nf_conntrack_tcp_timeout_close_wait":
		return &l.TCPTimeoutCloseWait
	case "nf_conntrack_tcp_timeout_last_ack":
		return &l.TCPTimeoutLastAck
	case "nf_conntrack_tcp_timeout_time_wait":
		return &l.TCPTimeoutTimeWait
	case "nf_conntrack_tcp_timeout_close":
		return &l.TCPTimeoutClose
	case "nf_conntrack_tcp_timeout_max_retrans":
		return &l.TCPTimeoutMaxRetrans
	case "nf_conntrack_tcp_timeout_unacknowledged":
		return &l.TCPTimeoutUnacknowledged
	case "nf_conntrack_udp_timeout":
		return &l.UDPTimeout
	case "nf_conntrack_udp_timeout_stream":
		return &l.UDPTimeoutStream
	case "nf_conntrack_icmp_timeout":
		return &l.ICMPTimeout
	case "nf_conntrack_icmpv6_timeout":
		return &l.ICMPv6Timeout
	case "nf_conntrack_generic_timeout":
		return &l.GenericTimeout
	}
	return nil
}

// KernelEvent is one row of kernel_events: a conntrack-related kernel log
// line (currently kind "table_full" and "expect_table_full").
type KernelEvent struct {
	Format  Format
	At      sql.Null[time.Time] // wall clock time, when the log line carries one
	UptimeS sql.Null[float64]   // dmesg "[seconds]" since boot, when present
	Kind    string
	Netns   sql.Null[int64] // netns inode from "table full in netns N"; NULL for the init netns message
	Message string          // the kernel message without the log prefix
	Raw     string          // the whole line
	Line    int64
}

// Values returns the column values of kernel_events in table order,
// EXCLUDING the leading columns node, captured_at and source_file.
func (k *KernelEvent) Values() []any {
	return []any{string(k.Format), nv(k.At), nv(k.UptimeS), k.Kind, nv(k.Netns), k.Message, k.Raw, k.Line}
}
