package conntrack

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/kubesift/kubesift/store"
)

const real = "testdata/real/"

// listFiles are the entry dumps of each capture and the independent way to
// count states in them (what grep -c would say).
var listFiles = []struct {
	name   string
	format Format
	marker string // printf pattern for one state
}{
	{"conntrack_L.txt", FormatList, " %s "},
	{"conntrack_L_extended.txt", FormatExtended, " %s "},
	{"conntrack_L_id.txt", FormatList, " %s "},
	{"conntrack_L_ktimestamp.txt", FormatList, " %s "},
	{"conntrack_L_timestamp.txt", FormatList, " %s "},
	{"conntrack_L_save.txt", FormatSave, "--state %s"},
	{"conntrack_L_timewait_only.txt", FormatList, " %s "},
	{"proc_net_nf_conntrack.txt", FormatProc, " %s "},
	{"conntrack_L_xml.xml", FormatXML, "<state>%s</state>"},
}

// grepCount counts the lines of path containing s (grep -c -F).
func grepCount(t *testing.T, path, s string) int {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, l := range strings.Split(string(b), "\n") {
		if strings.Contains(l, s) {
			n++
		}
	}
	return n
}

func stateCounts(es []Entry) map[string]int {
	m := map[string]int{}
	for _, e := range es {
		m[e.State]++
	}
	return m
}

func TestRealDumpsStateCounts(t *testing.T) {
	for _, dir := range []string{"default", "acct_timestamp", "tablefull"} {
		for _, lf := range listFiles {
			path := real + dir + "/" + lf.name
			if _, err := os.Stat(path); err != nil {
				continue // default XML is > 1 MB and not kept
			}
			t.Run(dir+"/"+lf.name, func(t *testing.T) {
				f, ok := DetectFormat(head(t, path))
				if !ok || f != lf.format {
					t.Errorf("DetectFormat = %q, %v; want %q", f, ok, lf.format)
				}
				c := parseFile(t, path, lf.format)
				if len(c.bad) != 0 {
					t.Errorf("%d bad lines, first: %v", len(c.bad), c.bad[0])
				}
				got := stateCounts(c.entries)
				total := 0
				for _, st := range []string{"TIME_WAIT", "CLOSE", "ESTABLISHED", "SYN_SENT"} {
					want := grepCount(t, path, fmt.Sprintf(lf.marker, st))
					total += want
					if got[st] != want {
						t.Errorf("state %s: parsed %d, grep -c says %d", st, got[st], want)
					}
				}
				if len(c.entries) != total {
					t.Errorf("parsed %d entries, grep says %d", len(c.entries), total)
				}
			})
		}
	}
	// the lab's own count of the default capture
	c := parseFile(t, real+"default/conntrack_L.txt", FormatList)
	if got := stateCounts(c.entries); got["TIME_WAIT"] != 2491 || got["CLOSE"] != 1009 {
		t.Errorf("default capture states = %v, state_counts.txt says 2491 TIME_WAIT 1009 CLOSE", got)
	}
}

func head(t *testing.T, path string) []byte {
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(b) > 4096 {
		b = b[:4096]
	}
	return b
}

type key struct {
	o, r           string
	state, flags   string
	op, ob, rp, rb int64
}

func tupleKey(t Tuple) string {
	return fmt.Sprintf("%v>%v %d>%d icmp=%v/%v/%v", t.Src, t.Dst, t.SPort.V, t.DPort.V, t.ICMPType, t.ICMPCode, t.ICMPID)
}

func keys(es []Entry, counters bool) []key {
	out := make([]key, 0, len(es))
	for _, e := range es {
		k := key{o: tupleKey(e.Orig), r: tupleKey(e.Reply), state: e.State, flags: strings.Join(e.Flags.Strings(), ",")}
		if counters {
			k.op, k.ob, k.rp, k.rb = e.Orig.Packets.V, e.Orig.Bytes.V, e.Reply.Packets.V, e.Reply.Bytes.V
		}
		out = append(out, k)
	}
	sort.Slice(out, func(i, j int) bool { return fmt.Sprint(out[i]) < fmt.Sprint(out[j]) })
	return out
}

// TestSameRowsAcrossFormats: every dump of one capture (text, extended, id,
// ktimestamp, /proc, save, XML) gives the same tuples, states and flags.
func TestSameRowsAcrossFormats(t *testing.T) {
	for _, dir := range []string{"default", "acct_timestamp"} {
		ref := parseFile(t, real+dir+"/conntrack_L.txt", FormatList)
		refKeys := keys(ref.entries, true)
		for _, lf := range listFiles {
			path := real + dir + "/" + lf.name
			if _, err := os.Stat(path); err != nil || lf.name == "conntrack_L_timewait_only.txt" {
				continue
			}
			c := parseFile(t, path, lf.format)
			counters := lf.format != FormatSave // save prints no counters
			want := refKeys
			if !counters {
				want = keys(ref.entries, false)
			}
			got := keys(c.entries, counters)
			if !reflect.DeepEqual(got, want) {
				for i := range got {
					if i < len(want) && got[i] != want[i] {
						t.Errorf("%s/%s: first difference at %d: got %+v want %+v", dir, lf.name, i, got[i], want[i])
						break
					}
				}
				t.Errorf("%s/%s: %d rows differ from conntrack_L.txt (%d rows)", dir, lf.name, len(got), len(want))
			}
		}
	}
	// XML and -o id agree on ids too
	x := parseFile(t, real+"acct_timestamp/conntrack_L_xml.xml", FormatXML)
	id := parseFile(t, real+"acct_timestamp/conntrack_L_id.txt", FormatList)
	ids := map[int64]string{}
	for _, e := range id.entries {
		ids[e.ID.V] = tupleKey(e.Orig)
	}
	for _, e := range x.entries {
		if !e.ID.Valid || ids[e.ID.V] != tupleKey(e.Orig) {
			t.Fatalf("xml entry id %v (%s) not in -o id dump", e.ID, tupleKey(e.Orig))
		}
		if !e.DeltaS.Valid || !e.Orig.Packets.Valid {
			t.Fatalf("xml entry lacks deltatime/counters: %+v", e)
		}
	}
}

func TestSplicedTrailer(t *testing.T) {
	// line 3492 of the default -o timestamp dump is "tcp      6 8conntrack v1.4.7 ... shown."
	// followed by " CLOSE src=..." : the entry must be rejoined and keep line 3492.
	c := parseFile(t, real+"default/conntrack_L_timestamp.txt", FormatList)
	found := false
	for _, e := range c.entries {
		if e.Line == 3492 {
			found = true
			if e.State != "CLOSE" || e.TimeoutS.V != 8 || e.Orig.SPort.V != 46190 {
				t.Errorf("rejoined entry = %+v", e)
			}
		}
	}
	if !found || c.skipped != 1 {
		t.Errorf("rejoined entry found=%v skipped=%d", found, c.skipped)
	}
}

func TestKtimestamp(t *testing.T) {
	c := parseFile(t, real+"acct_timestamp/conntrack_L_ktimestamp.txt", FormatList)
	e := c.entries[0]
	want := time.Date(2026, 11, 21, 4, 24, 48, 0, time.UTC)
	if !e.Start.Valid || !e.Start.V.Equal(want) || e.DeltaS.V != 2 || e.Orig.Bytes.V != 430 || e.Reply.Bytes.V != 479 {
		t.Errorf("entry 0 = %+v", e)
	}
	p := parseFile(t, real+"acct_timestamp/proc_net_nf_conntrack.txt", FormatProc)
	if e := p.entries[0]; e.Family != "ipv4" || !e.Zone.Valid || e.Zone.V != 0 || e.Use.V != 2 {
		t.Errorf("proc entry 0 = %+v", e)
	}
}

func TestEvents(t *testing.T) {
	path := real + "events_E_timestamp.txt"
	c := parseFile(t, path, FormatUnknown)
	if len(c.bad) != 0 {
		t.Fatalf("bad: %v", c.bad)
	}
	types := map[string]int{}
	for _, e := range c.events {
		types[e.Type]++
		if !e.Time.Valid {
			t.Fatalf("event without time: %+v", e)
		}
	}
	if types["NEW"] != grepCount(t, path, "[NEW]") || types["UPDATE"] != grepCount(t, path, "[UPDATE]") ||
		types["DESTROY"] != grepCount(t, path, "[DESTROY]") {
		t.Errorf("event types %v", types)
	}
	e := c.events[0]
	if e.Time.V.UnixMicro() != 1795235091568474 || e.State != "SYN_SENT" || e.Flags != FlagUnreplied {
		t.Errorf("event 0 = %+v", e)
	}
}

func TestStatsConsistent(t *testing.T) {
	// tablefull: conntrack -S (decimal) and /proc/net/stat/nf_conntrack (hex)
	// were read after the same run.
	s := parseFile(t, real+"tablefull/conntrack_S_after.txt", FormatUnknown)
	p := parseFile(t, real+"tablefull/proc_net_stat_nf_conntrack.txt", FormatUnknown)
	cnt := parseFile(t, real+"tablefull/conntrack_C.txt", FormatUnknown)
	if len(s.stats) != 2 || len(p.stats) != 2 || len(s.bad)+len(p.bad) != 0 {
		t.Fatalf("stats rows %d/%d bad %v %v", len(s.stats), len(p.stats), s.bad, p.bad)
	}
	for i := range s.stats {
		a, b := s.stats[i], p.stats[i]
		if a.CPU != b.CPU {
			t.Errorf("cpu %v vs %v", a.CPU, b.CPU)
		}
		for _, n := range []string{"found", "invalid", "insert_failed", "drop", "early_drop", "error", "search_restart", "clash_resolve", "chaintoolong"} {
			if *a.field(n) != *b.field(n) {
				t.Errorf("cpu %d %s: conntrack -S %v, /proc %v", i, n, *a.field(n), *b.field(n))
			}
		}
		if b.Entries.V != cnt.limits[0].Count.V {
			t.Errorf("/proc entries %d, conntrack -C %d", b.Entries.V, cnt.limits[0].Count.V)
		}
	}
	if s.stats[0].Drop.V != 30 {
		t.Errorf("drop = %d, want 30 (run.log)", s.stats[0].Drop.V)
	}
	k := parseFile(t, real+"tablefull/dmesg_new.txt", FormatUnknown)
	if len(k.kernel) != grepCount(t, real+"tablefull/dmesg_new.txt", "table full") || len(k.kernel) != 30 {
		t.Errorf("%d table_full events", len(k.kernel))
	}
	if e := k.kernel[0]; e.Kind != "table_full" || e.Netns.V != 4026532177 || e.UptimeS.V != 720.861746 {
		t.Errorf("kernel event 0 = %+v", e)
	}
}

func TestLimits(t *testing.T) {
	c := parseFile(t, real+"acct_timestamp/sysctl_netfilter.txt", FormatUnknown)
	if len(c.limits) != 1 || len(c.bad) != 0 {
		t.Fatalf("limits %d bad %v", len(c.limits), c.bad)
	}
	l := c.limits[0]
	if l.Max.V != 262144 || l.Count.V != 250 || l.Buckets.V != 262144 || l.TCPTimeoutTimeWait.V != 120 ||
		len(l.Settings) != 41 || l.Settings["nf_conntrack_sctp_timeout_established"] != "210" {
		t.Errorf("limits = %+v", l)
	}
}

// TestFragments: testdata/fragments/<format>__<name>.good.* must give one
// record per line (XML: per <flow>) and no Bad; *.bad.* one Bad per line and
// no record.
func TestFragments(t *testing.T) {
	files, _ := filepath.Glob("testdata/fragments/*")
	for _, path := range files {
		base := filepath.Base(path)
		f := Format(base[:strings.Index(base, "__")])
		good := strings.Contains(base, ".good.")
		t.Run(base, func(t *testing.T) {
			b, _ := os.ReadFile(path)
			n := 0
			for _, l := range strings.Split(string(b), "\n") {
				if f == FormatXML && strings.HasPrefix(l, "<flow") || f != FormatXML && strings.TrimSpace(l) != "" {
					n++
				}
			}
			c := parseFile(t, path, f)
			recs := c.records()
			if f == FormatSysctl {
				recs = 0
				for _, l := range c.limits {
					recs += len(l.Settings)
				}
			}
			if good {
				if recs != n || len(c.bad) != 0 {
					t.Errorf("%d lines -> %d records, bad %v", n, recs, c.bad)
				}
			} else {
				if recs != 0 || len(c.bad) != n {
					t.Errorf("%d lines -> %d records, %d bad: %v", n, recs, len(c.bad), c.bad)
				}
			}
			for _, b := range c.bad {
				t.Logf("%v", b)
			}
		})
	}
}

func TestFragmentDetails(t *testing.T) {
	c := parseFile(t, "testdata/fragments/conntrack-L__protocols.good.txt", FormatList)
	e := c.entries
	if e[1].Orig.Zone.V != 0 || e[1].Zone.V != 3 || e[1].Flags != FlagUnreplied {
		t.Errorf("zone/flags: %+v", e[1])
	}
	if e[4].Orig.ICMPID.V != 4242 || e[4].ID.Valid || e[5].ID.V != 987654321 || e[5].Reply.ICMPID.V != 4243 {
		t.Errorf("icmp ids: %+v / %+v", e[4], e[5])
	}
	if e[6].Family != "ipv6" || e[6].Proto != "icmpv6" || e[7].Orig.Src.String() != "2001:db8::1" {
		t.Errorf("ipv6: %+v", e[6])
	}
	if e[8].State != "ESTABLISHED" || e[8].Proto != "sctp" || e[2].State != "" {
		t.Errorf("sctp/udp state")
	}
	if e[10].Flags != FlagOffload || e[10].Extra != "secctx=system_u:object_r:unlabeled_t:s0" {
		t.Errorf("extra: %+v", e[10])
	}
	p := parseFile(t, "testdata/fragments/proc-nf_conntrack__ipv6.good.txt", FormatProc)
	if p.entries[0].Orig.Src.String() != "fd00::5" {
		t.Errorf("proc ipv6 not canonical: %v", p.entries[0].Orig.Src)
	}
	x := parseFile(t, "testdata/fragments/conntrack-xml__misc.good.xml", FormatXML)
	if len(x.events) != 1 || x.events[0].Type != "DESTROY" || x.events[0].Stop.V.Unix() != 1795235101 ||
		x.events[0].Time.V != time.Date(2026, 11, 21, 4, 25, 1, 0, time.UTC) {
		t.Errorf("xml event: %+v", x.events)
	}
	k := parseFile(t, "testdata/fragments/kernel-log__formats.good.txt", FormatKernelLog)
	if !k.kernel[3].At.Valid || k.kernel[3].Netns.V != 4026531992 || k.kernel[1].Netns.Valid || !k.kernel[2].At.Valid {
		t.Errorf("kernel: %+v", k.kernel)
	}
}

// TestValuesMatchSchema: Values() has one value per documented column (after
// node, captured_at, source_file) and each non-NULL value has a Go type the
// DuckDB appender accepts for the column type.
func TestValuesMatchSchema(t *testing.T) {
	c := parseFile(t, "testdata/fragments/conntrack-L__protocols.good.txt", FormatList)
	ev := parseFile(t, "testdata/fragments/conntrack-E__events.good.txt", FormatEvents)
	st := parseFile(t, "testdata/fragments/conntrack-S__misc.good.txt", FormatStats)
	li := parseFile(t, real+"default/sysctl_netfilter.txt", FormatSysctl)
	ke := parseFile(t, "testdata/fragments/kernel-log__formats.good.txt", FormatKernelLog)
	cases := []struct {
		table string
		rows  [][]any
	}{
		{"conntrack_entries", nil}, {"conntrack_events", nil}, {"conntrack_stats", nil}, {"conntrack_limits", nil}, {"kernel_events", nil},
	}
	for i := range c.entries {
		cases[0].rows = append(cases[0].rows, c.entries[i].Values())
	}
	for i := range ev.events {
		cases[1].rows = append(cases[1].rows, ev.events[i].Values())
	}
	for i := range st.stats {
		cases[2].rows = append(cases[2].rows, st.stats[i].Values())
	}
	for i := range li.limits {
		cases[3].rows = append(cases[3].rows, li.limits[i].Values())
	}
	for i := range ke.kernel {
		cases[4].rows = append(cases[4].rows, ke.kernel[i].Values())
	}
	byName := map[string]store.Table{}
	for _, tb := range tables() {
		byName[tb.Name] = tb
	}
	for _, cs := range cases {
		tb := byName[cs.table]
		cols := tb.Columns[3 : len(tb.Columns)-2] // leading node, captured_at, source_file and trailing load_id, cluster come from the glue
		if len(cs.rows) == 0 {
			t.Fatalf("%s: no rows", cs.table)
		}
		for _, row := range cs.rows {
			if len(row) != len(cols) {
				t.Fatalf("%s: %d values for %d columns", cs.table, len(row), len(cols))
			}
			for i, v := range row {
				if v == nil {
					continue
				}
				want := map[string]string{"VARCHAR": "string", "BIGINT": "int64", "INTEGER": "int32", "DOUBLE": "float64",
					"TIMESTAMPTZ": "time.Time", "VARCHAR[]": "[]string", "MAP(VARCHAR, BIGINT)": "map[interface {}]interface {}",
					"MAP(VARCHAR, VARCHAR)": "map[interface {}]interface {}"}[cols[i].Type]
				if got := fmt.Sprintf("%T", v); got != want {
					t.Errorf("%s.%s (%s): Go value %s", cs.table, cols[i].Name, cols[i].Type, got)
				}
			}
		}
	}
}

func TestDetectFormat(t *testing.T) {
	for in, want := range map[string]Format{
		"tcp      6 1 CLOSE src=1.1.1.1":                          FormatList,
		"ipv4     2 tcp      6 118 TIME_WAIT src=1":               FormatExtended,
		"ipv4     2 tcp      6 118 TIME_WAIT src=1 mark=0 zone=0": FormatProc,
		"[1795235091.568474]\t    [NEW] tcp":                      FormatEvents,
		" [UPDATE] tcp":                                           FormatEvents,
		"-A -t 118 -u SEEN_REPLY":                                 FormatSave,
		"<?xml version=\"1.0\"?>\n<conntrack>":                    FormatXML,
		"cpu=0   \tfound=0 invalid=0 insert=0 insert_failed=0":    FormatStats,
		"entries  clashres found new invalid ignore delete chainlength insert insert_failed drop": FormatProcStat,
		"250\n":                               FormatCount,
		"net.netfilter.nf_conntrack_acct = 1": FormatSysctl,
		"/proc/sys/net/netfilter/nf_conntrack_max:1":                  FormatSysctl,
		"abi.vsyscall32 = 1\nkernel.pid_max = 4194304\n":              FormatSysctl,
		"[  720.861746] nf_conntrack: nf_conntrack: table full":       FormatKernelLog,
		"2026-11-21T04:25:10+0000 n kernel: nf_conntrack: table full": FormatKernelLog,
	} {
		if got, ok := DetectFormat([]byte(in)); !ok || got != want {
			t.Errorf("DetectFormat(%q) = %q, %v; want %q", in, got, ok, want)
		}
	}
	for _, garbage := range []string{"hello world\n", "log4j.rootLogger = INFO\n", "kernel.pid_max = 1\nhello world\n"} {
		if f, ok := DetectFormat([]byte(garbage)); ok {
			t.Errorf("DetectFormat(%q) = %q", garbage, f)
		}
	}
}

func TestSysctlFileSetting(t *testing.T) {
	for name, want := range map[string]string{
		"n1/2026-11-21T06:00:00Z/nf_conntrack_max":                      "nf_conntrack_max",
		"nf_conntrack_count.txt":                                        "nf_conntrack_count",
		"net.netfilter.nf_conntrack_buckets":                            "nf_conntrack_buckets",
		"net.nf_conntrack_max":                                          "nf_conntrack_max",
		"proc_sys_net_netfilter_nf_conntrack_tcp_timeout_time_wait.txt": "nf_conntrack_tcp_timeout_time_wait",
		"nf_conntrack":                                                  "",
		"proc_net_nf_conntrack.txt":                                     "",
		"conntrack_C.txt":                                               "",
	} {
		got, ok := SysctlFileSetting(name)
		if got != want || ok != (want != "") {
			t.Errorf("SysctlFileSetting(%q) = %q, %v; want %q", name, got, ok, want)
		}
	}
	c := &collect{}
	if err := (Options{Setting: "nf_conntrack_max"}).Parse(strings.NewReader("262144\n"), FormatSysctl, c); err != nil {
		t.Fatal(err)
	}
	if len(c.limits) != 1 || c.limits[0].Max.V != 262144 || c.limits[0].Count.Valid || c.limits[0].Format != FormatSysctl {
		t.Errorf("a copy of nf_conntrack_max gave %+v", c.limits)
	}
}

func TestHandlerErrorStops(t *testing.T) {
	h := &stopper{}
	err := (Options{}).Parse(bytes.NewReader([]byte("tcp 6 1 CLOSE src=1.1.1.1 dst=1.1.1.2 sport=1 dport=2 src=1.1.1.2 dst=1.1.1.1 sport=2 dport=1\n")), FormatList, h)
	if err == nil || !strings.Contains(err.Error(), "stop") || !strings.Contains(err.Error(), "line 1") {
		t.Errorf("err = %v", err)
	}
	if err := (Options{}).Parse(bytes.NewReader(nil), Format("nope"), h); err == nil {
		t.Errorf("unknown format accepted")
	}
}

type stopper struct{ collect }

func (s *stopper) Entry(*Entry) error { return fmt.Errorf("stop") }

func TestLongLine(t *testing.T) {
	line := "tcp 6 1 CLOSE src=1.1.1.1 dst=1.1.1.2 sport=1 dport=2 src=1.1.1.2 dst=1.1.1.1 sport=2 dport=1 secctx=" + strings.Repeat("x", 1<<20) + "\n"
	c := &collect{}
	if err := (Options{}).Parse(strings.NewReader(line+line), FormatList, c); err != nil || len(c.entries) != 2 {
		t.Fatalf("err %v entries %d bad %d", err, len(c.entries), len(c.bad))
	}
}

// TestByteOrderMark: a file saved with a UTF-8 byte order mark (an editor, a Windows tool) is
// detected and parsed as without it: the same format, the same records, no bad first line.
func TestByteOrderMark(t *testing.T) {
	for _, name := range []string{"default/conntrack_L.txt", "default/proc_net_nf_conntrack.txt", "default/conntrack_S.txt",
		"default/sysctl_netfilter.txt", "tablefull/dmesg_new.txt"} {
		path := filepath.Join("testdata/real", name)
		data, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		marked := filepath.Join(t.TempDir(), filepath.Base(name))
		if err := os.WriteFile(marked, append([]byte("\ufeff"), data...), 0o600); err != nil {
			t.Fatal(err)
		}
		want, got := parseFile(t, path, FormatUnknown), parseFile(t, marked, FormatUnknown)
		if got.records() != want.records() || got.records() == 0 || len(got.bad) != len(want.bad) {
			t.Errorf("%s with a byte order mark: %d records, bad %v; without: %d records, bad %v", name, got.records(), got.bad, want.records(), want.bad)
		}
	}
}

// TestKernelLogPrefixes: dmesg -x's facility and level, and /dev/kmsg's "<4>", before the uptime;
// a syslog time (no year) dated in the year that puts it at or before the capture, undated without
// one.
func TestKernelLogPrefixes(t *testing.T) {
	data, err := os.ReadFile("testdata/fragments/kernel-log__formats.good.txt")
	if err != nil {
		t.Fatal(err)
	}
	captured := time.Date(2027, 1, 1, 0, 5, 0, 0, time.UTC)
	for _, at := range []time.Time{{}, captured} {
		c := &collect{}
		if err := (Options{CapturedAt: at}).Parse(bytes.NewReader(data), FormatKernelLog, c); err != nil || len(c.bad) > 0 || len(c.kernel) != 9 {
			t.Fatalf("captured %v: %d events, bad %v, %v", at, len(c.kernel), c.bad, err)
		}
		if k := c.kernel[6]; k.UptimeS.V != 723.25 || k.At.Valid {
			t.Errorf("dmesg -x: %+v", k)
		}
		if k := c.kernel[7]; k.UptimeS.V != 724.5 {
			t.Errorf("<4>: %+v", k)
		}
		nov, dec := c.kernel[5], c.kernel[8]
		if at.IsZero() {
			if nov.At.Valid || dec.At.Valid {
				t.Errorf("syslog times dated without a capture time: %+v, %+v", nov, dec)
			}
			continue
		}
		if want := time.Date(2026, 11, 21, 4, 25, 12, 0, time.UTC); nov.At.V != want || nov.UptimeS.V != 722.1 {
			t.Errorf("Nov 21 captured %v: %+v, want %v", at, nov, want)
		}
		if want := time.Date(2026, 12, 31, 23, 59, 58, 0, time.UTC); dec.At.V != want {
			t.Errorf("Dec 31 captured %v: %+v, want %v", at, dec, want)
		}
	}
}
