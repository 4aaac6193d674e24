package analyze

import (
	"context"
	"strings"
	"testing"

	"github.com/kubesift/kubesift/ingest"
	"github.com/kubesift/kubesift/rules"
	"github.com/kubesift/kubesift/store"
)

// TestBuiltinRuleTests runs rules/tests/<id>.yaml against the built-in rules, and fails when a
// built-in rule lacks a test file with at least one positive case (findings expected) and one
// negative case (none expected).
func TestBuiltinRuleTests(t *testing.T) {
	rs := builtin(t)
	files, err := rules.BuiltinTests(rs)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range rs {
		tf := files[r.ID]
		if tf == nil {
			t.Errorf("rule %s has no test file rules/tests/%s.yaml", r.ID, r.ID)
			continue
		}
		var positive, negative int
		for _, c := range tf.Tests {
			if c.Positive() {
				positive++
			} else {
				negative++
			}
		}
		if positive == 0 || negative == 0 {
			t.Errorf("%s: %d positive and %d negative cases; every rule needs both", tf.Name, positive, negative)
		}
		t.Run(r.ID, func(t *testing.T) {
			for _, res := range RunTests(context.Background(), tf, rs, ingest.Schema(), nil) {
				if res.Err != nil {
					t.Errorf("%s: %q:\n%v", res.File, res.Case, res.Err)
				}
			}
		})
	}
}

// TestInsertRowDerivesWhatIngestDerives: a test row gets has_body from its bodies (as ingest
// stores it) and latency_ms computed from its times, and a row that gives latency_ms is refused
// with the column named (the table computes it).
func TestInsertRowDerivesWhatIngestDerives(t *testing.T) {
	ctx := context.Background()
	db, err := store.Open(ctx, "", ingest.Schema(), store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	for _, row := range []map[string]any{
		{"audit_id": "with", "received_at": "2026-11-21T06:00:00Z", "stage_at": "2026-11-21T06:00:01.5Z", "request_object": map[string]any{"kind": "Endpoints"}},
		{"audit_id": "without", "received_at": "2026-11-21T06:00:00Z", "stage_at": "2026-11-21T06:00:00Z"},
	} {
		if err := insertRow(ctx, db, "audit_events", row); err != nil {
			t.Fatal(err)
		}
	}
	var got string
	if err := db.QueryRowContext(ctx, "SELECT string_agg(audit_id || ' ' || has_body || ' ' || latency_ms, ', ' ORDER BY audit_id) FROM audit_events").Scan(&got); err != nil {
		t.Fatal(err)
	}
	if want := "with true 1500.0, without false 0.0"; got != want {
		t.Errorf("rows: %s, want %s", got, want)
	}
	err = insertRow(ctx, db, "audit_events", map[string]any{"audit_id": "given", "latency_ms": 5})
	if err == nil || !strings.Contains(err.Error(), "latency_ms") || !strings.Contains(err.Error(), "computed") {
		t.Errorf("a row giving latency_ms: %v, want an error naming the computed column", err)
	}
}
