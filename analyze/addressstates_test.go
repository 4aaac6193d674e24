package analyze

import (
	"context"
	"database/sql"
	"testing"
	"time"

	"github.com/kubesift/kubesift/ingest"
)

// deriveTables fills the tables derived from others (endpoint_objects, audit_services) from the
// rows a test inserted, as an ingest does once its files are loaded.
func deriveTables(t *testing.T, conn *sql.Conn) {
	t.Helper()
	if err := ingest.Schema().DeriveAll(context.Background(), conn); err != nil {
		t.Fatal(err)
	}
}

// TestAddressStatesTellWatchFiles: ks_address_states and ks_endpoint_observations take a
// snapshot file that observes one object twice for a watch stream (ordered by its positions, timed
// by the events before), and one that observes it once for a plain snapshot.
func TestAddressStatesTellWatchFiles(t *testing.T) {
	ctx := context.Background()
	conn := macrosConn(t)
	if _, err := conn.ExecContext(ctx, `
		INSERT INTO endpoint_addresses (captured_at, source, source_file, load_id, source_line, object_seq, kind, namespace, name, ip, ready, deleted, cluster)
		SELECT TIMESTAMPTZ '2026-11-01 00:00:00+00' + seq * INTERVAL 1 MINUTE, 'snapshot', f.name, f.load, seq, seq, 'Endpoints', 'shop', 'cart',
		       '10.0.0.1', seq = 1, false, ''
		FROM (VALUES ('w.json', 1, 2), ('s.json', 2, 1)) f(name, load, observations), range(1, f.observations + 1) r(seq)`); err != nil {
		t.Fatal(err)
	}
	deriveTables(t, conn)
	for _, query := range []string{
		`SELECT string_agg(DISTINCT source_file || '=' || stream, ',' ORDER BY source_file || '=' || stream) FROM ks_address_states(NULL, NULL, dense := false)`,
		`SELECT string_agg(DISTINCT source_file || '=' || stream, ',' ORDER BY source_file || '=' || stream) FROM ks_endpoint_observations()`,
	} {
		var got string
		if err := conn.QueryRowContext(ctx, query).Scan(&got); err != nil {
			t.Fatalf("%s: %v", query, err)
		}
		if want := "s.json=snapshots,w.json=watch w.json"; got != want {
			t.Errorf("%s: streams %q, want %q", query, got, want)
		}
	}
}

// TestFlappingReadsOnlyTheWindowsWatchFiles: a watch stream's observations are timed by the events
// before them in the file, so that its rows cannot be filtered by time; endpoint-flapping reads
// those of the watch files whose observations reach into the window, not of every watch file. 48
// hourly watch files (each its own load, 50 observations of one Endpoints with 20 addresses, the
// first of them flapping): the window of the last hour finds the flapping address, and the scans
// of endpoint_addresses hand on that file's rows only (once for the watch files, once for the
// plain snapshots and audit writes captured in the window, which the file's capture time falls
// in; all the files would be 48 times as many).
func TestFlappingReadsOnlyTheWindowsWatchFiles(t *testing.T) {
	ctx := context.Background()
	conn := macrosConn(t)
	first := time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)
	const files, observations, addresses = 48, 50, 20
	_, err := conn.ExecContext(ctx, `
		INSERT INTO endpoint_addresses BY NAME
		SELECT $1::TIMESTAMPTZ + to_hours(f) + to_minutes(59) AS captured_at, 'snapshot' AS source,
		       'watch-' || f || '.json' AS source_file, f + 1 AS load_id, o AS source_line, o AS object_seq,
		       $1::TIMESTAMPTZ + to_hours(f) + to_minutes(o) AS change_time,
		       'Endpoints' AS kind, 'shop' AS namespace, 'cart' AS name, 'cart' AS service,
		       '10.0.0.' || a AS ip, a > 0 OR o % 2 = 0 AS ready, 'cart-' || a AS pod, false AS deleted, '' AS cluster
		FROM range($2) fs(f), range(1, $3 + 1) os(o), range($4) ads(a)`, first, files, observations, addresses)
	if err != nil {
		t.Fatal(err)
	}
	deriveTables(t, conn)
	r := builtinRule(t, "endpoint-flapping")
	since, until := first.Add((files-1)*time.Hour), first.Add(files*time.Hour)
	args := pieceArgs(r, Args(r, Options{Since: &since, Until: &until}), 0, 1)
	var findings int64
	var subject string
	if err := conn.QueryRowContext(ctx, "SELECT count(*), coalesce(any_value(subject), '') FROM ("+r.SQL+")", args...).Scan(&findings, &subject); err != nil {
		t.Fatal(err)
	}
	if findings != 1 || subject != "10.0.0.0 (cart-0)" {
		t.Errorf("%d findings (%q), want 1 of 10.0.0.0 (cart-0)", findings, subject)
	}
	perFile := int64(observations * addresses)
	if read := scannedRows(t, conn, r.SQL, args, "endpoint_addresses"); read > 2*perFile {
		t.Errorf("the scans of endpoint_addresses handed on %d rows, want at most %d (the window's watch file, twice)", read, 2*perFile)
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
