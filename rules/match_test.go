package rules

import (
	"encoding/json"
	"testing"
)

// TestMatchEvidenceCount: evidence entries match items anywhere in the list, so only
// evidence_count notices an item listed twice or one too many.
func TestMatchEvidenceCount(t *testing.T) {
	item := func(s string) json.RawMessage { return json.RawMessage(s) }
	f := Finding{Evidence: []json.RawMessage{item(`{"audit_id":"w3"}`), item(`{"audit_id":"w3"}`), item(`{"audit_id":"w2"}`)}}
	two, three := 2, 3
	for _, c := range []struct {
		m    Match
		want bool
	}{
		{Match{Evidence: []map[string]string{{"audit_id": "w3"}, {"audit_id": "w2"}}}, true},
		{Match{Evidence: []map[string]string{{"audit_id": "w3"}, {"audit_id": "w2"}}, EvidenceCount: &two}, false},
		{Match{EvidenceCount: &three}, true},
	} {
		if got := c.m.Matches(f); got != c.want {
			t.Errorf("%s: matches %v, want %v", c.m, got, c.want)
		}
	}
}
