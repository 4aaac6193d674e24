package audit

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"testing"
)

// TestMemberScanReadsWhatGoReads reads every event of the real recordings under samples/ and
// checks that the member scan finds each member the Go side reads exactly where encoding/json
// finds it (same raw value, or absent for both), whatever order the lookups come in.
func TestMemberScanReadsWhatGoReads(t *testing.T) {
	files, err := filepath.Glob("../../samples/*/audit.log*")
	if err != nil {
		t.Fatal(err)
	}
	if len(files) == 0 {
		t.Fatal("no audit logs under samples/")
	}
	var events, writes int
	for _, name := range files {
		f, err := os.Open(name)
		if err != nil {
			t.Fatal(err)
		}
		var r io.Reader = f
		if filepath.Ext(name) == ".gz" {
			if r, err = gzip.NewReader(f); err != nil {
				t.Fatalf("%s: %v", name, err)
			}
		}
		sc := bufio.NewScanner(r)
		sc.Buffer(nil, 64<<20)
		for line := 1; sc.Scan(); line++ {
			text := sc.Bytes()
			start := jsonStart(text)
			if start < 0 {
				continue
			}
			event := text[start:]
			events++
			checkScan(t, event, line%2 == 0)
			if _, ok := endpointWrite(scanMembers(event)); ok {
				writes++
			}
		}
		if err := sc.Err(); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		f.Close()
	}
	if writes == 0 {
		t.Fatalf("no endpoints writes in %d events of %d files: the test checks nothing", events, len(files))
	}
	t.Logf("%d events in %d files: %d endpoints writes", events, len(files), writes)
}

// TestMemberScanEdges: escaped names, spacing, nested members of the same names, and members
// after the bodies.
func TestMemberScanEdges(t *testing.T) {
	for _, event := range []string{
		`{"kind":"Event","verb":"get","requestURI":"/api/v1/pods?watch=true\u0026resourceVersion=5"}`,
		` { "ver\u0062" : "update" , "objectRef" : { "verb" : "nested", "kind": "x" } , "stage":"ResponseComplete" } `,
		`{"requestObject":{"kind":"Endpoints","stage":"inside","objectRef":{}},"responseObject":[1,{"verb":"no"}],"stageTimestamp":"2026-01-01T00:00:00Z","kind":"Event"}`,
		`{"responseStatus":{"code":200},"annotations":{"stage":"not this"},"stage":"ResponseComplete"}`,
		`{}`,
	} {
		checkScan(t, []byte(event), false)
		checkScan(t, []byte(event), true)
	}
}

// checkScan compares every member the scan reads with encoding/json's decoding of the event,
// looking the members up in their order or backwards.
func checkScan(t *testing.T, event []byte, backwards bool) {
	t.Helper()
	var members map[string]json.RawMessage
	if json.Unmarshal(event, &members) != nil {
		return // not an object: DuckDB rejects it
	}
	names := []string{"kind", "stage", "verb", "requestURI", "objectRef", "responseStatus", "stageTimestamp", "requestObject", "responseObject", "annotations"}
	s := scanMembers(event)
	for i := range names {
		m := member(i)
		if backwards {
			m = memberCount - 1 - m
		}
		got, ok := s.raw(m)
		want, present := members[names[m]]
		if ok != present || !bytes.Equal(got, want) {
			t.Fatalf("member %s of %s: scan gives %s, %v; encoding/json %s, %v", names[m], event, got, ok, want, present)
		}
	}
}

// TestEndpointWrite: only successful create, update, patch and delete of Endpoints and
// EndpointSlices, at ResponseComplete, with a body (or a delete), are writes.
func TestEndpointWrite(t *testing.T) {
	const ok = `"kind":"Event","stage":"ResponseComplete","stageTimestamp":"2026-11-01T10:00:00.5Z","responseStatus":{"metadata":{},"code":200}`
	body := `"responseObject":{"kind":"Endpoints","subsets":[]}`
	ref := `"objectRef":{"resource":"endpoints","namespace":"ns","name":"svc"}`
	for _, tt := range []struct {
		event string
		want  bool
	}{
		{`{` + ok + `,"verb":"update",` + ref + `,` + body + `}`, true},
		{`{` + ok + `,"verb":"create",` + ref + `,"requestObject":{"kind":"Endpoints"}}`, true},
		{`{` + ok + `,"verb":"delete",` + ref + `}`, true},
		{`{` + ok + `,"verb":"patch","objectRef":{"resource":"endpointslices","namespace":"ns","name":"svc-x"},` + body + `}`, true},
		{`{` + ok + `,"verb":"patch",` + ref + `,"requestObject":{"subsets":[]}}`, false}, // a patch's requestObject is the patch
		{`{` + ok + `,"verb":"get",` + ref + `,` + body + `}`, false},
		{`{` + ok + `,"verb":"update",` + ref + `}`, false}, // Metadata level
		{`{` + ok + `,"verb":"update","objectRef":{"resource":"endpoints","subresource":"status","name":"svc"},` + body + `}`, false},
		{`{` + ok + `,"verb":"update","objectRef":{"resource":"pods","name":"endpoints-x"},` + body + `}`, false},
		{`{"kind":"Event","stage":"ResponseComplete","stageTimestamp":"2026-11-01T10:00:00Z","responseStatus":{"code":409},"verb":"update",` + ref + `,` + body + `}`, false},
		{`{"kind":"Event","stage":"RequestReceived","stageTimestamp":"2026-11-01T10:00:00Z","verb":"update",` + ref + `,` + body + `}`, false},
		{`{` + ok + `,"verb":"update",` + ref + `,` + body + `,"kind":"EventList"}`, true}, // the first of duplicate names, as asGoReads leaves none
		{`{"kind":"Event","stage":"ResponseComplete","stageTimestamp":"yesterday","responseStatus":{"code":200},"verb":"update",` + ref + `,` + body + `}`, false},
	} {
		w, got := endpointWrite(scanMembers([]byte(tt.event)))
		if got != tt.want {
			t.Errorf("endpointWrite(%s) = %v, want %v", tt.event, got, tt.want)
			continue
		}
		if got && (w.opt.Namespace == "" || w.opt.Name == "" || w.at.IsZero()) {
			t.Errorf("endpointWrite(%s) = %+v: namespace, name or time missing", tt.event, w)
		}
	}
}
