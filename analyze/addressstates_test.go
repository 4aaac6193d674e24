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

// TestDenseAndSparseAddressStatesAgree: ks_address_states gives every address at every point of
// its Service when dense, and the same changes of state at the same points when not, but for an
// address's absence before it first appears; over a Service of an Endpoints and two
// EndpointSlices in four snapshot files, with an address that leaves and returns, one that
// appears late (in a slice that keeps it when the last file leaves the slice out), one that
// moves between the objects before it leaves, and one in a deleted slice only.
func TestDenseAndSparseAddressStatesAgree(t *testing.T) {
	ctx := context.Background()
	conn := macrosConn(t)
	// file f at minute f; rows: (file, kind, name, ip, ready, deleted)
	rows := []struct {
		file          int
		kind, name    string
		ip            string
		ready, delete bool
	}{
		{1, "Endpoints", "web", "10.0.0.1", true, false}, {2, "Endpoints", "web", "10.0.0.1", true, false},
		{3, "Endpoints", "web", "10.0.0.1", true, false}, {4, "Endpoints", "web", "10.0.0.1", true, false},
		{1, "Endpoints", "web", "10.0.0.2", true, false}, {2, "Endpoints", "web", "10.0.0.2", false, false},
		{4, "Endpoints", "web", "10.0.0.2", true, false},
		{3, "EndpointSlice", "web-a", "10.0.0.3", true, false},
		{1, "EndpointSlice", "web-a", "10.0.0.4", true, false}, {2, "Endpoints", "web", "10.0.0.4", true, false},
		{2, "EndpointSlice", "web-b", "10.0.0.5", true, true},
	}
	line := map[string]int{"web": 1, "web-a": 2, "web-b": 3} // an object's line (and ordinal) in each file
	for _, r := range rows {
		service := any(nil)
		if r.kind == "EndpointSlice" {
			service = "web"
		}
		_, err := conn.ExecContext(ctx, `INSERT INTO endpoint_addresses (captured_at, source, source_file, source_line, object_seq, kind,
			namespace, name, service, ip, ready, deleted, cluster)
			VALUES (TIMESTAMPTZ '2026-11-01 00:00:00+00' + $1 * INTERVAL 1 MINUTE, 'snapshot', 's' || $1 || '.json', $2, $2, $3,
			'shop', $4, $5, $6, $7, $8, '')`, r.file, line[r.name], r.kind, r.name, service, r.ip, r.ready, r.delete)
		if err != nil {
			t.Fatal(err)
		}
	}
	var denseRows, addresses, points, sparseOnly, denseOnly int
	err := conn.QueryRowContext(ctx, `
		WITH dense AS (SELECT * FROM ks_address_states(NULL, NULL)),
		sparse AS (SELECT * FROM ks_address_states(NULL, NULL, dense := false)),
		-- each address's states from its first presence on, where they change
		changes AS (
			SELECT 'dense' AS mode, cluster, stream, kind, namespace, svc, ip, pt, state FROM dense
			QUALIFY pt >= min(pt) FILTER (WHERE state <> 'absent') OVER (PARTITION BY ip)
			    AND state IS DISTINCT FROM lag(state) OVER (PARTITION BY ip ORDER BY pt)
			UNION ALL
			SELECT 'sparse', cluster, stream, kind, namespace, svc, ip, pt, state FROM sparse
			QUALIFY pt >= min(pt) FILTER (WHERE state <> 'absent') OVER (PARTITION BY ip)
			    AND state IS DISTINCT FROM lag(state) OVER (PARTITION BY ip ORDER BY pt)
		)
		SELECT (SELECT count(*) FROM dense), (SELECT count(DISTINCT ip) FROM dense), (SELECT count(DISTINCT pt) FROM dense),
		       (SELECT count(*) FROM (SELECT * EXCLUDE (mode) FROM changes WHERE mode = 'sparse'
		                              EXCEPT SELECT * EXCLUDE (mode) FROM changes WHERE mode = 'dense')),
		       (SELECT count(*) FROM (SELECT * EXCLUDE (mode) FROM changes WHERE mode = 'dense'
		                              EXCEPT SELECT * EXCLUDE (mode) FROM changes WHERE mode = 'sparse'))`).
		Scan(&denseRows, &addresses, &points, &sparseOnly, &denseOnly)
	if err != nil {
		t.Fatal(err)
	}
	if addresses != 5 || points != 4 || denseRows != addresses*points {
		t.Errorf("dense: %d rows of %d addresses at %d points; want 20 of 5 at 4", denseRows, addresses, points)
	}
	if sparseOnly != 0 || denseOnly != 0 {
		t.Errorf("changes of state only the sparse states show: %d, only the dense: %d; want none", sparseOnly, denseOnly)
	}
	var changes string
	err = conn.QueryRowContext(ctx, `
		SELECT string_agg(ip || '@' || pt || '=' || state, ' ' ORDER BY ip, pt)
		FROM (SELECT ip, pt, state FROM ks_address_states(NULL, NULL, dense := false)
		      QUALIFY state IS DISTINCT FROM lag(state) OVER (PARTITION BY ip ORDER BY pt))`).Scan(&changes)
	if err != nil {
		t.Fatal(err)
	}
	const want = "10.0.0.1@1=ready 10.0.0.2@1=ready 10.0.0.2@2=notReady 10.0.0.2@3=absent 10.0.0.2@4=ready " +
		"10.0.0.3@3=ready 10.0.0.4@1=ready 10.0.0.4@3=absent 10.0.0.5@1=absent"
	if changes != want {
		t.Errorf("sparse changes of state:\n%s\nwant\n%s", changes, want)
	}
}
