package audit

import (
	"bytes"
	"encoding/json"
	"reflect"
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

func TestAsGoReads(t *testing.T) {
	tests := []struct {
		event, want  string
		changed, bad bool
	}{
		{`{"a":1,"b":[1,2]}`, `{"a":1,"b":[1,2]}`, false, false},
		{`{"a":1,"a":{"b":1,"b":2.50}}`, `{"a":{"b":2.50}}`, true, false},
		{`{"a":[1,],"b":1}`, "", false, true},
		{`{"a":1,}`, "", false, true},
		{`{"a":NaN}`, "", false, true},
		{`{"a":-Infinity}`, "", false, true},
		{`{"a":1} x`, "", false, true},
	}
	for _, tt := range tests {
		out, changed, bad := asGoReads([]byte(tt.event))
		if changed != tt.changed || bad != tt.bad || !bad && string(out) != tt.want {
			t.Errorf("asGoReads(%s) = %s, %v, %v; want %s, %v, %v", tt.event, out, changed, bad, tt.want, tt.changed, tt.bad)
		}
	}
}

// FuzzAsGoReads: an event is bad exactly when encoding/json rejects it, and what is loaded
// decodes to what encoding/json decodes the event to.
func FuzzAsGoReads(f *testing.F) {
	f.Add([]byte(`{"kind":"Event","kind":"x","a":[1,{"b":2,"b":3}]}`))
	f.Add([]byte(`{"a":[1,],"b":NaN}`))
	f.Fuzz(func(t *testing.T, event []byte) {
		out, changed, bad := asGoReads(event)
		if bad != !json.Valid(event) {
			t.Fatalf("asGoReads(%q) bad = %v, json.Valid says %v", event, bad, json.Valid(event))
		}
		if bad {
			return
		}
		if !changed && !bytes.Equal(out, event) {
			t.Fatalf("unchanged event %q came out as %q", event, out)
		}
		decode := func(b []byte) any {
			dec := json.NewDecoder(bytes.NewReader(b))
			dec.UseNumber()
			var v any
			if err := dec.Decode(&v); err != nil {
				t.Fatalf("decoding %q: %v", b, err)
			}
			return v
		}
		if want, got := decode(event), decode(out); !reflect.DeepEqual(want, got) {
			t.Fatalf("asGoReads(%q) = %q: decodes to %v, want %v", event, out, got, want)
		}
	})
}

// FuzzEventReader: eventReader answers as asGoReads does, and its one-pass scan finds every
// member where the lazy member scan finds it. One reader reads all inputs, as it reads a chunk's
// events, so a state left over from an earlier event would show.
func FuzzEventReader(f *testing.F) {
	for _, seed := range []string{
		`{"kind":"Event","verb":"get","objectRef":{"resource":"pods"},"requestURI":"/api/v1/pods?watch=1"}`,
		` {"verb" : "update", "requestObject":{"a":[1,{"b":"}"}]},"responseObject":{"metadata":{"resourceVersion":"7"}}} `,
		`{"kind":"Event","kind":"x","a":[1,{"b":2,"b":3}]}`,
		`{"k\u0069nd":"Event","verb":"get"}`,
		`{"a":[1,],"b":NaN}`,
		`{"a":"\ud800"}`,
		`[{"kind":"Event"}]`,
		`"x"`,
		`{"a":1} {"b":2}`,
		`{"a":1`,
	} {
		f.Add([]byte(seed))
	}
	var reader eventReader
	f.Fuzz(func(t *testing.T, event []byte) {
		wantOut, wantChanged, wantBad := asGoReads(event)
		var scan memberScan
		out, changed, bad := reader.read(event, &scan)
		if !bytes.Equal(out, wantOut) || changed != wantChanged || bad != wantBad {
			t.Fatalf("read(%q) = %q, %v, %v; asGoReads gives %q, %v, %v", event, out, changed, bad, wantOut, wantChanged, wantBad)
		}
		if bad {
			return
		}
		lazy := scanMembers(out)
		for m := range memberCount {
			got, gotOK := scan.raw(m)
			want, wantOK := lazy.raw(m)
			if gotOK != wantOK || !bytes.Equal(got, want) {
				t.Fatalf("member %d of %q: read finds %q, %v; the lazy scan %q, %v", m, out, got, gotOK, want, wantOK)
			}
		}
	})
}
