package analyze

import (
	"context"
	"database/sql"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"
)

// TestFanoutChartCountsTheWatchersOpenAtEachWrite holds election-lock-churn's fan-out chart
// (queries/charts/election-lock-churn-fanout.sql) to what it says: at each write of the lock, the
// distinct watchers (user + client address) of its resource with a watch open then (started at or
// before it, ended at or after it or not ended), counted here in Go. Watches of one watcher overlap
// or touch, some start or end exactly at a write, some never end, some are of ConfigMaps, of
// another name or answered 500 (none of those count), one ended before it began and one has no start
// (neither is ever open).
// The first write has no watcher open (the chart said 1 before: a LEFT JOIN's missing watcher,
// counted as a distinct (NULL, NULL)).
func TestFanoutChartCountsTheWatchersOpenAtEachWrite(t *testing.T) {
	ctx := context.Background()
	conn := macrosConn(t)
	chart := chartSQL(t, "election-lock-churn", "election-lock-churn-fanout")
	rng := rand.New(rand.NewPCG(7, 12))
	base := time.Date(2026, 11, 1, 10, 0, 0, 0, time.UTC)
	at := func(s int) time.Time { return base.Add(time.Duration(s) * time.Second) }
	insert := func(cols string, vals ...any) {
		t.Helper()
		marks := ""
		for i := range vals {
			if i > 0 {
				marks += ", "
			}
			marks += fmt.Sprintf("$%d", i+1)
		}
		if _, err := conn.ExecContext(ctx, "INSERT INTO audit_events ("+cols+") VALUES ("+marks+")", vals...); err != nil {
			t.Fatal(err)
		}
	}
	var writes []int
	for i := range 40 {
		s := i*90 + rng.IntN(60)
		writes = append(writes, s)
		body := fmt.Sprintf(`{"metadata":{"name":"lock","annotations":{"control-plane.alpha.kubernetes.io/leader":"{\"holderIdentity\":\"h%d\"}"}}}`, i/10)
		insert("audit_id, stage, verb, code, resource, namespace, name, cluster, received_at, stage_at, source_line, response_object",
			fmt.Sprintf("w%d", i), "ResponseComplete", "update", 200, "endpoints", "lab", "lock", "", at(s), at(s), i+1, body)
	}
	type watch struct {
		who, resource, selector string
		start, end              int // end < 0: never ended
		code                    int
	}
	var watches []watch
	for i := range 80 {
		w := watch{who: fmt.Sprintf("u%d", rng.IntN(8)), resource: "endpoints", start: rng.IntN(3600), code: 200}
		w.end = w.start + rng.IntN(900)
		switch i % 10 {
		case 1:
			w.start = writes[rng.IntN(len(writes))] // starts at a write
		case 2:
			w.end = writes[rng.IntN(len(writes))] // ends at a write (maybe before it began)
		case 3:
			w.end = -1
		case 4:
			w.resource = "configmaps"
		case 5:
			w.selector = "metadata.name=other"
		case 6:
			w.code = 500
		}
		watches = append(watches, w)
	}
	// a watcher of its own whose one watch ended (at a write) before it began, writes before its start
	watches = append(watches, watch{who: "backwards", resource: "endpoints", start: writes[20] + 30, end: writes[10], code: 200})
	for i, w := range watches {
		cols := "audit_id, stage, verb, code, resource, namespace, watch, username, source_ips, field_selector, cluster, received_at, stage_at"
		id := fmt.Sprintf("v%d", i)
		insert(cols, id, "ResponseStarted", "watch", 200, w.resource, "lab", true, w.who, []string{"10.0.0.1"}, w.selector, "", at(w.start), at(w.start))
		if w.end >= 0 {
			insert(cols, id, "ResponseComplete", "watch", w.code, w.resource, "lab", true, w.who, []string{"10.0.0.1"}, w.selector, "", at(w.start), at(w.end))
		}
	}
	// a watch logged without its requestReceivedTimestamp: its start unknown, never counted open
	insert("audit_id, stage, verb, code, resource, namespace, watch, username, source_ips, cluster, stage_at",
		"undated", "ResponseComplete", "watch", 200, "endpoints", "lab", true, "undated", []string{"10.0.0.2"}, "", at(writes[5]))
	rows, err := conn.QueryContext(ctx, chart, sql.Named("cluster", ""), sql.Named("namespace", "lab"), sql.Named("name", "lock"),
		sql.Named("subject", ""), sql.Named("first_seen", at(0)), sql.Named("last_seen", at(3600)),
		sql.Named("since", nil), sql.Named("until", nil))
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	got := map[time.Time]int64{}
	for rows.Next() {
		var when time.Time
		var action string
		var writesLastMin, open, fanout int64
		if err := rows.Scan(&when, &action, &writesLastMin, &open, &fanout); err != nil {
			t.Fatal(err)
		}
		got[when.UTC()] = open
		if fanout != writesLastMin*open {
			t.Errorf("at %s: fan-out %d, want %d × %d", when, fanout, writesLastMin, open)
		}
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	if len(got) != len(writes) {
		t.Fatalf("%d rows, want one per write (%d)", len(got), len(writes))
	}
	opened := 0
	for _, s := range writes {
		open := map[string]bool{}
		for _, w := range watches {
			ended := w.end < 0 || w.end >= s
			if w.resource == "endpoints" && w.selector == "" && (w.code == 200 || w.end < 0) && w.start <= s && ended && (w.end < 0 || w.end >= w.start) {
				open[w.who] = true
			}
		}
		opened += len(open)
		if got[at(s)] != int64(len(open)) {
			t.Errorf("at +%ds: %d open watchers, want %d", s, got[at(s)], len(open))
		}
	}
	if opened == 0 {
		t.Fatal("no write had a watcher open: the test checks nothing")
	}
}

// chartSQL returns the SQL of chart query of the built-in rule id.
func chartSQL(t *testing.T, id, query string) string {
	t.Helper()
	for _, c := range builtinRule(t, id).Charts {
		if c.Query == query {
			return c.SQL
		}
	}
	t.Fatalf("rule %s has no chart query %s", id, query)
	return ""
}
