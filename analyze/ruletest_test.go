package analyze

import (
	"context"
	"testing"

	"github.com/kubesift/kubesift/ingest"
	"github.com/kubesift/kubesift/rules"
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
