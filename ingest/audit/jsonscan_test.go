package audit

import (
	"bytes"
	"encoding/json"
	"testing"
)

func TestTopLevelString(t *testing.T) {
	tests := []struct {
		line, key, want string
		ok              bool
	}{
		{`{"kind":"Event","requestURI":"/api/v1/pods?limit=500\u0026resourceVersion=0"}`, "requestURI", "/api/v1/pods?limit=500&resourceVersion=0", true},
		{`{"requestObject":{"requestURI":"nested"},"requestURI":"/top"}`, "requestURI", "/top", true},
		{`{"a":[1,{"requestURI":"x"}],"b":"}\"{","requestURI":"/y"}`, "requestURI", "/y", true},
		{` { "kind" : "EventList" , "items": [] }`, "kind", "EventList", true},
		{`{"kind":1}`, "kind", "", false},
		{`{"other":"x"}`, "kind", "", false},
		{`{"requestURI":"/trunc`, "requestURI", "", false},
		{`not json`, "kind", "", false},
		{`{"k\u0069nd":"Event"}`, "kind", "Event", true},
		{`{"kind":"caf\u00e9 \ud83d\ude00"}`, "kind", "café 😀", true},
	}
	for _, tt := range tests {
		got, ok := topLevelString([]byte(tt.line), tt.key)
		if got != tt.want || ok != tt.ok {
			t.Errorf("topLevelString(%s, %q) = %q, %v; want %q, %v", tt.line, tt.key, got, ok, tt.want, tt.ok)
		}
	}
}

// FuzzTopLevelString checks the hand-written scanner against encoding/json: for a valid object,
// the scanner must find exactly the first top-level member of that name when it is a string.
func FuzzTopLevelString(f *testing.F) {
	f.Add([]byte(`{"kind":"Event","requestURI":"/api/v1/pods?watch=true\u0026resourceVersion=7"}`))
	f.Add([]byte(`{"requestObject":{"requestURI":"x"},"requestURI":"/y"}`))
	f.Add([]byte(`{"a":"\"","requestURI":"\ud83d\ude00"}`))
	f.Fuzz(func(t *testing.T, line []byte) {
		got, ok := topLevelString(line, "requestURI")
		if !json.Valid(line) {
			return
		}
		first, found := firstMember(line, "requestURI")
		var want string
		isString := found && json.Unmarshal(first, &want) == nil
		if ok != isString || got != want {
			t.Fatalf("topLevelString = %q, %v; encoding/json finds %q (string: %v)", got, ok, want, isString)
		}
	})
}

// firstMember returns the raw value of the first top-level member named key of a JSON object.
func firstMember(obj []byte, key string) (json.RawMessage, bool) {
	dec := json.NewDecoder(bytes.NewReader(obj))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return nil, false
	}
	for dec.More() {
		k, err := dec.Token()
		if err != nil {
			return nil, false
		}
		var raw json.RawMessage
		if err := dec.Decode(&raw); err != nil {
			return nil, false
		}
		if k == key {
			return raw, true
		}
	}
	return nil, false
}
