package analyze

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/kubesift/kubesift/rules"
)

// TestJSONIsTheEncodedDocument: -o json, written a finding at a time, is byte for byte the whole
// document encoded by json.Encoder with two-space indents (what it was before the evidence moved
// out of memory): with and without findings, window, suppressed findings, warnings and a failure.
func TestJSONIsTheEncodedDocument(t *testing.T) {
	since, until := time.Date(2026, 11, 21, 5, 0, 0, 0, time.UTC), time.Date(2026, 11, 21, 6, 0, 0, 0, time.UTC)
	f := func(name, evidence string) Finding {
		return Finding{Rule: "r", Severity: rules.Warning, Namespace: "ns", Name: name, Subject: "<s> & co",
			FirstSeen: since, LastSeen: until, Count: 2, Summary: "two \"writes\""}.WithEvidence(json.RawMessage(evidence))
	}
	outcomes := []Outcome{{Rule: rules.Rule{ID: "r", Title: "R", Severity: rules.Warning}, Evaluated: true, Findings: 2},
		{Rule: rules.Rule{ID: "q"}, Err: errors.New("q failed")}}
	full := &Report{Since: &since, Until: &until, Outcomes: slices.Clone(outcomes), Warnings: []string{"expired"},
		findings: []Finding{f("a", `[{"at":"2026-11-21T05:00:00Z","html":"<b>"}]`), f("b", `[]`),
			f("spaced", " [ {\"line sep\": \"a\u2028b\", \"escaped\": \"\\u00e9\\/\\n\", \"list\" : [ ], \"obj\":{}, \"n\": [1, {\"m\": null}]} ]\n"),
			f("c", `[{"x":[1,2]}]`), f("d", `[{"y":"<z>"}]`)}}
	if err := full.Suppress([]Suppression{{Rule: "r", Object: "ns/c", Expires: until, Reason: "known"}, {Rule: "r", Object: "ns/d", Expires: until, Reason: "also known"}}, since); err != nil || full.NumSuppressed() != 2 {
		t.Fatalf("suppressing c and d: %d suppressed, %v", full.NumSuppressed(), err)
	}
	for name, rep := range map[string]*Report{
		"empty":    {Outcomes: outcomes},
		"no rules": {},
		"full":     full,
	} {
		t.Run(name, func(t *testing.T) {
			var got bytes.Buffer
			if err := WriteContext(context.Background(), &got, rep, "json"); err != nil {
				t.Fatal(err)
			}
			if want := encodedDocument(t, rep); got.String() != want {
				t.Errorf("got\n%s\nwant\n%s", got.String(), want)
			}
		})
	}
}

// encodedDocument is rep as one json.Encoder call encodes it.
func encodedDocument(t *testing.T, rep *Report) string {
	t.Helper()
	doc := struct {
		Since      *string      `json:"since"`
		Until      *string      `json:"until"`
		Findings   []Finding    `json:"findings"`
		Suppressed []Suppressed `json:"suppressed,omitempty"`
		Warnings   []string     `json:"warnings,omitempty"`
		Rules      []jsonRule   `json:"rules"`
	}{Warnings: rep.Warnings}
	var err error
	if doc.Findings, err = rep.AllFindings(); err != nil {
		t.Fatal(err)
	}
	if err := rep.EachSuppressed(func(s Suppressed) error {
		doc.Suppressed = append(doc.Suppressed, s)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if len(doc.Findings) == 0 {
		doc.Findings = []Finding{}
	}
	if rep.Since != nil {
		s, u := rfc3339(*rep.Since), rfc3339(*rep.Until)
		doc.Since, doc.Until = &s, &u
	}
	for _, o := range rep.Outcomes {
		jr := jsonRule{ID: o.Rule.ID, Title: o.Rule.Title, Severity: string(o.Rule.Severity), Evaluated: o.Evaluated, Reason: o.Reason, Findings: o.Findings}
		if o.Err != nil {
			jr.Reason, jr.Error = "", o.Err.Error()
		}
		doc.Rules = append(doc.Rules, jr)
	}
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetIndent("", "  ")
	if err := enc.Encode(doc); err != nil {
		t.Fatal(err)
	}
	return b.String()
}
