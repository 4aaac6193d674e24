package analyze

import (
	"encoding/json"
	"testing"
)

// TestListItems: evidence is one JSON value, counted when it is a list, and checked in the same
// pass: what json.Valid refuses is refused, what encoding/json reads (duplicate names, invalid
// UTF-8) is read.
func TestListItems(t *testing.T) {
	for raw, want := range map[string]int{
		`[]`: 0, ` [ ] `: 0, `[1]`: 1, `[{"a":[1,2,{"b":[]}]},"x",null,[]]`: 4, `{"a":[1,2]}`: 0, `"[1,2]"`: 0, `3`: 0,
		`[{"a":1,"a":2}]`: 1, "[\"\xff\"]": 1, "[\"a\u2028b\"]\n": 1,
	} {
		got, err := listItems(json.RawMessage(raw))
		if err != nil || got != want {
			t.Errorf("%q: %d, %v; want %d", raw, got, err, want)
		}
		if !json.Valid([]byte(raw)) {
			t.Errorf("%q: not valid for encoding/json either", raw)
		}
	}
	for _, raw := range []string{``, `[`, `[1,]`, `[1] [2]`, `[1]]`, `{"a":}`, `[1] x`, `nul`, `[{]`} {
		if n, err := listItems(json.RawMessage(raw)); err == nil {
			t.Errorf("%q: read as %d items", raw, n)
		}
		if json.Valid([]byte(raw)) {
			t.Errorf("%q: valid for encoding/json", raw)
		}
	}
}
