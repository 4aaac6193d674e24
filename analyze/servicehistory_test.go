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
	for _, insert := range []string{`
		INSERT INTO audit_events BY NAME
		SELECT 'svc-' || i AS audit_id, 'ResponseComplete' AS stage, 'update' AS verb, 'services' AS resource,
		       'ns' AS namespace, 'web-' || (i % 100) AS name, 200 AS code, 'system:admin' AS username,
		       $1::TIMESTAMPTZ + to_microseconds(i * 800000) AS received_at,
		       $1::TIMESTAMPTZ + to_microseconds(i * 800000 + 1000) AS stage_at
		FROM range(100000) r(i)`, `
		INSERT INTO audit_events BY NAME
		SELECT 'ep-' || i || '-' || verb AS audit_id, 'ResponseComplete' AS stage, verb, 'endpoints' AS resource,
		       'ns' AS namespace, 'web-' || i AS name, 200 AS code,
		       CASE verb WHEN 'delete' THEN 'rewinder' ELSE 'system:serviceaccount:kube-system:endpoint-controller' END AS username,
		       $1::TIMESTAMPTZ + INTERVAL 23 HOUR + to_microseconds(i * 1000000 + CASE verb WHEN 'delete' THEN 0 ELSE 500000 END) AS received_at,
		       $1::TIMESTAMPTZ + INTERVAL 23 HOUR + to_microseconds(i * 1000000 + CASE verb WHEN 'delete' THEN 1000 ELSE 501000 END) AS stage_at
		FROM range(5) r(i), (VALUES ('delete'), ('create')) v(verb)`} {
		if _, err := conn.ExecContext(ctx, insert, day); err != nil {
			t.Fatal(err)
		}
	}
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
