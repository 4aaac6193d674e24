package analyze

import (
	"context"
	"testing"
)

// TestAddressStatesReadTheirWatchFiles: ks_address_states and ks_endpoint_observations take the
// snapshot files that are watch streams from the table their watch_files argument names
// (endpoint-flapping's stage), and decide them over endpoint_addresses (ks_endpoint_watch_files)
// when told none: a file observing one object twice is a watch stream by default, and plain
// snapshots when the table named leaves it out.
func TestAddressStatesReadTheirWatchFiles(t *testing.T) {
	ctx := context.Background()
	conn := macrosConn(t)
	for _, stmt := range []string{
		`INSERT INTO endpoint_addresses (captured_at, source, source_file, source_line, object_seq, kind, namespace, name, ip, ready, cluster)
		 SELECT TIMESTAMPTZ '2026-11-01 00:00:00+00' + seq * INTERVAL 1 MINUTE, 'snapshot', 'w.json', seq, seq, 'Endpoints', 'shop', 'cart',
		        '10.0.0.1', seq = 1, ''
		 FROM range(1, 3) r(seq)`,
		`CREATE TEMP TABLE no_watch_files (source VARCHAR, source_file VARCHAR)`,
	} {
		if _, err := conn.ExecContext(ctx, stmt); err != nil {
			t.Fatal(err)
		}
	}
	for _, c := range []struct{ query, want string }{
		{`SELECT string_agg(DISTINCT stream, ',') FROM ks_address_states(NULL, NULL, dense := false)`, "watch w.json"},
		{`SELECT string_agg(DISTINCT stream, ',') FROM ks_address_states(NULL, NULL, dense := false, watch_files := 'no_watch_files')`, "snapshots"},
		{`SELECT string_agg(DISTINCT stream, ',') FROM ks_endpoint_observations()`, "watch w.json"},
		{`SELECT string_agg(DISTINCT stream, ',') FROM ks_endpoint_observations(watch_files := 'no_watch_files')`, "snapshots"},
	} {
		var got string
		if err := conn.QueryRowContext(ctx, c.query).Scan(&got); err != nil {
			t.Fatalf("%s: %v", c.query, err)
		}
		if got != c.want {
			t.Errorf("%s: streams %q, want %q", c.query, got, c.want)
		}
	}
}
