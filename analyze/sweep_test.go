package analyze

import (
	"archive/zip"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/kubesift/kubesift/rules"
)

// sweepParts returns the reports of a sweep over clusters: random findings of two rules, many of
// them at the same time and severity, so that the order falls to the rule, cluster and name.
func sweepParts(clusters int) []*Report {
	rng := rand.New(rand.NewPCG(1, 2))
	at := time.Date(2026, 11, 21, 5, 0, 0, 0, time.UTC)
	var parts []*Report
	for c := range clusters {
		rep := &Report{Outcomes: []Outcome{{Rule: rules.Rule{ID: "a"}, Evaluated: true}, {Rule: rules.Rule{ID: "b"}, Evaluated: true}},
			Inputs: []Input{{"audit_events", int64(c + 1)}}}
		for i := range rng.IntN(40) {
			rule := []string{"a", "b"}[rng.IntN(2)]
			f := Finding{Rule: rule, Severity: []rules.Severity{rules.Info, rules.Warning, rules.Critical}[rng.IntN(3)],
				Cluster: fmt.Sprintf("c%d", c), Namespace: []string{"kube-system", "shop"}[rng.IntN(2)], Name: fmt.Sprintf("n%d", rng.IntN(5)),
				Subject: fmt.Sprintf("finding %d", i), FirstSeen: at.Add(time.Duration(rng.IntN(4)) * time.Minute), Count: int64(i),
				Summary: "summary"}
			f.LastSeen = f.FirstSeen.Add(time.Minute)
			rep.findings = append(rep.findings, f.WithEvidence(json.RawMessage(fmt.Sprintf(`[{"cluster":%q,"i":%d}]`, f.Cluster, i))))
			rep.Outcomes[slices.IndexFunc(rep.Outcomes, func(o Outcome) bool { return o.Rule.ID == rule })].Findings++
		}
		sortFindings(rep.findings)
		parts = append(parts, rep)
	}
	return parts
}

// TestSweepReportsAsOneReport: a sweep's report, its findings kept on disk, reads back as the one
// report of all its parts' findings in memory: the same findings in the same order with their
// evidence, the same JSON, and the same after KeepNamespaces and Suppress.
func TestSweepReportsAsOneReport(t *testing.T) {
	parts := sweepParts(7)
	whole := &Report{Outcomes: []Outcome{{Rule: rules.Rule{ID: "a"}, Evaluated: true}, {Rule: rules.Rule{ID: "b"}, Evaluated: true}},
		Inputs: []Input{{"audit_events", 28}}}
	for _, p := range parts {
		whole.findings = append(whole.findings, p.findings...)
		for i, o := range p.Outcomes {
			whole.Outcomes[i].Findings += o.Findings
			whole.Outcomes[i].Coverage = append(whole.Outcomes[i].Coverage, o.Coverage...)
		}
	}
	sortFindings(whole.findings)
	var sweep Sweep
	for _, p := range parts {
		if err := sweep.Add(p); err != nil {
			t.Fatal(err)
		}
		if p.findings != nil {
			t.Fatal("a report added to a sweep still holds its findings")
		}
	}
	defer sweep.Close()
	rep := sweep.Report()
	if len(rep.stored) < 5 || rep.NumFindings() != len(whole.findings) {
		t.Fatalf("%d reports stored, %d findings; want at least 5 and %d", len(rep.stored), rep.NumFindings(), len(whole.findings))
	}
	same := func(what string) {
		t.Helper()
		for _, format := range []string{"json", "wide", "markdown", "csv", "xlsx"} {
			write := func(r *Report) string {
				var b bytes.Buffer
				if err := WriteContext(context.Background(), &b, r, format); err != nil {
					t.Fatal(err)
				}
				if format == "xlsx" {
					return zipContents(t, b.Bytes())
				}
				return b.String()
			}
			if got, want := write(rep), write(whole); got != want {
				t.Errorf("%s, -o %s: the sweep's report\n%.3000s\nwant\n%.3000s", what, format, got, want)
			}
		}
		got, err := rep.AllFindings()
		if err != nil {
			t.Fatal(err)
		}
		wantFindings, _ := whole.AllFindings()
		gotJSON, _ := json.Marshal(got)
		wantJSON, _ := json.Marshal(wantFindings)
		if !bytes.Equal(gotJSON, wantJSON) {
			t.Errorf("%s: findings\n%s\nwant\n%s", what, gotJSON, wantJSON)
		}
	}
	same("as swept")
	for _, r := range []*Report{rep, whole} {
		if err := r.KeepNamespaces([]string{"shop"}); err != nil {
			t.Fatal(err)
		}
	}
	same("--namespace shop")
	expires := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	sups := []Suppression{{Rule: "a", Object: "shop/n1", Expires: expires, Reason: "known"}, {Rule: "b", Object: "*/n?", Expires: expires, Reason: "known"}}
	for _, r := range []*Report{rep, whole} {
		if err := r.Suppress(sups, expires.Add(-time.Hour)); err != nil {
			t.Fatal(err)
		}
	}
	if rep.NumSuppressed() == 0 || rep.NumSuppressed() != whole.NumSuppressed() || rep.NumFindings() == 0 {
		t.Fatalf("%d suppressed (%d in one report), %d left: the test suppresses some findings, not all", rep.NumSuppressed(), whole.NumSuppressed(), rep.NumFindings())
	}
	same("suppressed")
}

// TestSweepReadsAfterClose: the report of a sweep that is closed fails to read its findings; it does
// not report none.
func TestSweepReadsAfterClose(t *testing.T) {
	var sweep Sweep
	for _, p := range sweepParts(2) {
		if err := sweep.Add(p); err != nil {
			t.Fatal(err)
		}
	}
	rep := sweep.Report()
	if rep.NumFindings() == 0 {
		t.Fatal("no findings to read")
	}
	sweep.Close()
	if _, err := rep.AllFindings(); err == nil {
		t.Error("the findings of a closed report were read")
	}
}

// zipContents returns the names and contents of the files of a zip archive (an xlsx workbook),
// by name: without the times the archive stamps them with, nor their order in it.
func zipContents(t *testing.T, b []byte) string {
	t.Helper()
	zr, err := zip.NewReader(bytes.NewReader(b), int64(len(b)))
	if err != nil {
		t.Fatal(err)
	}
	files := slices.SortedFunc(slices.Values(zr.File), func(a, b *zip.File) int { return strings.Compare(a.Name, b.Name) })
	var out strings.Builder
	for _, f := range files {
		rc, err := f.Open()
		if err != nil {
			t.Fatal(err)
		}
		content, err := io.ReadAll(rc)
		rc.Close()
		if err != nil {
			t.Fatal(err)
		}
		fmt.Fprintf(&out, "== %s\n%s\n", f.Name, content)
	}
	return out.String()
}
