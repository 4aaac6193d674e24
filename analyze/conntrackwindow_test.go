package analyze

import (
	"context"
	"testing"
	"time"
)

// TestProbeExhaustionReadsOnlyTheWindowsEntries: probe-conntrack-exhaustion counts the conntrack
// entries of the window's captures alone; the captures before the window give their limits and
// counters (the baseline of the drops), not their entries. A scheduled run over the last hour of
// a node's hourly captures reads one capture's entries, not every capture's. 48 hourly captures
// of 1,000 entries each (900 in TIME_WAIT) with nf_conntrack_max 1,000: the window of the last one
// finds the node full at that capture, and the scans of conntrack_entries hand on its entries only
// (each reference to them scans them once; all the captures would be 48 times as many).
func TestProbeExhaustionReadsOnlyTheWindowsEntries(t *testing.T) {
	ctx := context.Background()
	conn := macrosConn(t)
	first := time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)
	const captures, entries, timeWaitEntries = 48, 1000, 900
	for _, insert := range []struct {
		sql  string
		args []any
	}{{`
		INSERT INTO conntrack_entries BY NAME
		SELECT 'n1' AS node, $1::TIMESTAMPTZ + to_hours(h) AS captured_at, 'n1/' || h || '/conntrack_L.txt' AS source_file,
		       'conntrack-L' AS format, 'ipv4' AS family, 'tcp' AS proto, 6 AS proto_num,
		       CASE WHEN i < $4 THEN 'TIME_WAIT' ELSE 'ESTABLISHED' END AS state,
		       '10.0.0.1' AS orig_src, '10.1.0.' || (i % 10) AS orig_dst, 20000 + i AS orig_sport, 8080 AS orig_dport,
		       i + 1 AS source_line
		FROM range($2) c(h), range($3) e(i)`, []any{first, captures, entries, timeWaitEntries}}, {`
		INSERT INTO conntrack_limits BY NAME
		SELECT 'n1' AS node, $1::TIMESTAMPTZ + to_hours(h) AS captured_at, 'n1/' || h || '/nf_conntrack_max' AS source_file,
		       'sysctl' AS format, $3 AS nf_conntrack_max
		FROM range($2) c(h)`, []any{first, captures, entries}}} {
		if _, err := conn.ExecContext(ctx, insert.sql, insert.args...); err != nil {
			t.Fatal(err)
		}
	}
	r := builtinRule(t, "probe-conntrack-exhaustion")
	since, until := first.Add((captures-1)*time.Hour), first.Add(captures*time.Hour)
	args := pieceArgs(r, Args(r, Options{Since: &since, Until: &until}), 0, 1)
	var findings, captured, timeWait int64
	if err := conn.QueryRowContext(ctx, "SELECT count(*), max(facts.entries), max(facts.time_wait) FROM ("+r.SQL+")", args...).Scan(&findings, &captured, &timeWait); err != nil {
		t.Fatal(err)
	}
	if findings != 1 || captured != entries || timeWait != timeWaitEntries {
		t.Errorf("%d findings, of %d entries with %d in TIME_WAIT, want 1 of %d with %d", findings, captured, timeWait, entries, timeWaitEntries)
	}
	// entry_formats, ent and dest each read the window's entries once
	if read := scannedRows(t, conn, r.SQL, args, "conntrack_entries"); read > 3*entries {
		t.Errorf("the scans of conntrack_entries handed on %d entries, want at most %d (the window's capture, three times)", read, 3*entries)
	}
}
