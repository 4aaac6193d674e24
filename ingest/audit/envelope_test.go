package audit

import (
	"os"
	"reflect"
	"testing"
)

// TestEnvelopeOf: each committed audit log goes to its envelope, and a file without the marks of
// an audit log to none.
func TestEnvelopeOf(t *testing.T) {
	for path, want := range map[string]envelope{
		"../testdata/audit-v1.good.log":          jsonLines{},
		"../testdata/audit-v1beta1.good.log":     jsonLines{},
		"../testdata/prefixed.good.log":          jsonLines{},
		"../testdata/eventlist.good.ndjson":      eventListLines{},
		"../testdata/eventlist-pretty.good.json": documents{},
	} {
		head, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		if got := envelopeOf(path, head); !reflect.DeepEqual(got, want) {
			t.Errorf("%s: envelope %T, want %T", path, got, want)
		}
	}
	if got := envelopeOf("x.json", []byte(`{"kind":"Endpoints","apiVersion":"v1"}`)); got != nil {
		t.Errorf("an Endpoints object taken for an audit log in envelope %T", got)
	}
}
