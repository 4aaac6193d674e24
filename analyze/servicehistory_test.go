package analyze

import (
	"context"
	"database/sql"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/kubesift/kubesift/rules"
)

// TestPhantomRecreateReadsServiceHistoryOnlyWhenNeeded: endpoints-phantom-recreate reads the
// whole history of the Services its delete → recreate cycles (or snapshot uid changes) name, and
// no Service history at all in a window without any, so that a scheduled run over a quiet window
// of a long database does not read every Service record in it. 100,000 Service updates over a
// day, then Endpoints deletes and recreates an hour after the last of them: a window before those
// sees the scan of the Services stop at its first rows; in the window of the cycles each finding
// knows its Service from the history before the window.
func TestPhantomRecreateReadsServiceHistoryOnlyWhenNeeded(t *testing.T) {
	ctx := context.Background()
	conn := macrosConn(t)
	day := time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)
	if _, err := conn.ExecContext(ctx, `
		INSERT INTO audit_events BY NAME
		SELECT 'svc-' || i AS audit_id, 'ResponseComplete' AS stage, 'update' AS verb, 'services' AS resource,
		       'ns' AS namespace, 'web-' || (i % 100) AS name, 200 AS code, 'system:admin' AS username,
		       $1::TIMESTAMPTZ + to_microseconds(i * 800000) AS received_at,
		       $1::TIMESTAMPTZ + to_microseconds(i * 800000 + 1000) AS stage_at
		FROM range(100000) r(i)`, day); err != nil {
		t.Fatal(err)
	}
	insertEndpointsCycles(t, conn, day, "system:serviceaccount:kube-system:endpoint-controller")
	deriveTables(t, conn)
	r := builtinRule(t, "endpoints-phantom-recreate")
	for _, tc := range []struct {
		name         string
		since, until time.Time
		findings     int
		maxRead      int64 // Service records the scan may hand on
	}{
		{"quiet window", day.Add(22 * time.Hour), day.Add(22*time.Hour + 15*time.Minute), 0, 10000},
		{"window of the cycles", day.Add(23 * time.Hour), day.Add(23*time.Hour + 15*time.Minute), 5, 100000},
	} {
		t.Run(tc.name, func(t *testing.T) {
			args := pieceArgs(r, Args(r, Options{Since: &tc.since, Until: &tc.until}), 0, 1)
			var findings, seen int
			if err := conn.QueryRowContext(ctx, "SELECT count(*), count(*) FILTER (WHERE facts.service_seen) FROM ("+r.SQL+")", args...).Scan(&findings, &seen); err != nil {
				t.Fatal(err)
			}
			if findings != tc.findings || seen != tc.findings {
				t.Errorf("%d findings, %d with their Service seen before the delete, want %d", findings, seen, tc.findings)
			}
			read := scannedRows(t, conn, r.SQL, args, "audit_services")
			if read > tc.maxRead {
				t.Errorf("the scan of the Services handed on %d records, want at most %d", read, tc.maxRead)
			}
		})
	}
}

// TestPhantomRecreateReadsOldServiceSnapshotsOnlyWhenNeeded: endpoints-phantom-recreate reads a
// needed Service's snapshots from an hour before the window, and all of them only when none with
// a uid lies in that hour, so that a window beside a long history of snapshots does not read
// every snapshot of every Service. Three days of hourly snapshots of 100 Services, Endpoints of
// five of them deleted and recreated in the window; one of the five (web-3) was last snapshotted
// eleven hours before. Every cycle knows its Service, web-3's from its older snapshots.
func TestPhantomRecreateReadsOldServiceSnapshotsOnlyWhenNeeded(t *testing.T) {
	ctx := context.Background()
	conn := macrosConn(t)
	day := time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)
	if _, err := conn.ExecContext(ctx, `
		INSERT INTO services BY NAME
		SELECT $1::TIMESTAMPTZ - INTERVAL 2 DAY + to_microseconds(h * 3600000000) AS captured_at, 'snapshot' AS source,
		       'snap-' || h || '.json' AS source_file, h + 1 AS load_id, false AS deleted, 'ns' AS namespace,
		       'web-' || s AS name, 'uid-web-' || s AS uid, '' AS cluster
		FROM range(71) r(h), range(100) v(s)
		WHERE s <> 3 OR h <= 60`, day); err != nil {
		t.Fatal(err)
	}
	// recreated by a user outside endpoints_controller_usernames: a cycle counts only with its Service known
	insertEndpointsCycles(t, conn, day, "system:serviceaccount:kube-system:my-endpoints-controller")
	deriveTables(t, conn)
	r := builtinRule(t, "endpoints-phantom-recreate")
	since, until := day.Add(23*time.Hour), day.Add(23*time.Hour+15*time.Minute)
	args := pieceArgs(r, Args(r, Options{Since: &since, Until: &until}), 0, 1)
	rows, err := conn.QueryContext(ctx, "SELECT name, facts.service_uid FROM ("+r.SQL+") ORDER BY name", args...)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for rows.Next() {
		var name, uid string
		if err := rows.Scan(&name, &uid); err != nil {
			t.Fatal(err)
		}
		got = append(got, name+" "+uid)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	want := "web-0 uid-web-0, web-1 uid-web-1, web-2 uid-web-2, web-3 uid-web-3, web-4 uid-web-4"
	if strings.Join(got, ", ") != want {
		t.Errorf("findings %v, want %s (each Service known from its snapshots)", got, want)
	}
	// at most the one snapshot of the Services in the hour before the window (100; the scan hands
	// on those its filters keep), and web-3's 61 older ones
	if read := scannedRows(t, conn, r.SQL, args, "services"); read > 100+61 {
		t.Errorf("the scans of services handed on %d snapshots, want at most %d (of %d)", read, 100+61, 71*100-10)
	}
}

// insertEndpointsCycles adds the Endpoints of Services web-0 to web-4 (namespace ns) deleted by
// rewinder and recreated by creator half a second later, a second apart from 23:00 of day on.
func insertEndpointsCycles(t *testing.T, conn *sql.Conn, day time.Time, creator string) {
	t.Helper()
	_, err := conn.ExecContext(context.Background(), `
		INSERT INTO audit_events BY NAME
		SELECT 'ep-' || i || '-' || verb AS audit_id, 'ResponseComplete' AS stage, verb, 'endpoints' AS resource,
		       'ns' AS namespace, 'web-' || i AS name, 200 AS code,
		       CASE verb WHEN 'delete' THEN 'rewinder' ELSE $2 END AS username,
		       $1::TIMESTAMPTZ + INTERVAL 23 HOUR + to_microseconds(i * 1000000 + CASE verb WHEN 'delete' THEN 0 ELSE 500000 END) AS received_at,
		       $1::TIMESTAMPTZ + INTERVAL 23 HOUR + to_microseconds(i * 1000000 + CASE verb WHEN 'delete' THEN 1000 ELSE 501000 END) AS stage_at
		FROM range(5) r(i), (VALUES ('delete'), ('create')) v(verb)`, day, creator)
	if err != nil {
		t.Fatal(err)
	}
}

// scannedRows runs query under EXPLAIN ANALYZE and returns the rows that its scans of table
// handed on (after the filters the scans apply themselves).
func scannedRows(t *testing.T, conn *sql.Conn, query string, args []any, table string) int64 {
	t.Helper()
	var key, value string
	if err := conn.QueryRowContext(context.Background(), "EXPLAIN (ANALYZE, FORMAT JSON) "+query, args...).Scan(&key, &value); err != nil {
		t.Fatal(err)
	}
	type node struct {
		Name        string                     `json:"operator_name"`
		Cardinality int64                      `json:"operator_cardinality"`
		ExtraInfo   map[string]json.RawMessage `json:"extra_info"`
		Children    []node                     `json:"children"`
	}
	var root node
	if err := json.Unmarshal([]byte(value), &root); err != nil {
		t.Fatalf("profile: %v", err)
	}
	var read int64
	scans := 0
	var walk func(n node)
	walk = func(n node) {
		if strings.TrimSpace(n.Name) == "TABLE_SCAN" || strings.TrimSpace(n.Name) == "SEQ_SCAN" {
			if scanned := strings.Trim(string(n.ExtraInfo["Table"]), `"`); scanned == table || strings.HasSuffix(scanned, "."+table) {
				read += n.Cardinality
				scans++
			}
		}
		for _, c := range n.Children {
			walk(c)
		}
	}
	walk(root)
	if scans == 0 {
		t.Fatalf("no scan of %s in the profile:\n%.2000s", table, value)
	}
	return read
}

// builtinRule returns the built-in rule id.
func builtinRule(t *testing.T, id string) rules.Rule {
	t.Helper()
	for _, r := range builtin(t) {
		if r.ID == id {
			return r
		}
	}
	t.Fatalf("no built-in rule %s", id)
	return rules.Rule{}
}
