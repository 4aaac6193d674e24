package htmlreport

import (
	"context"
	"encoding/json"
	"io"
	"slices"
	"testing"

	"github.com/kubesift/kubesift/analyze"
	"github.com/kubesift/kubesift/store"
)

// The whole-document form of the page, which the tests inspect and compare WriteReport with.

// Build turns a report into the page's data: the first chartsPerRule findings of each rule get
// a section, each chart drawn from the finding's evidence or, for a chart with a query, from
// queried[finding][chart] (see buildDoc); the others are listed.
func Build(rep *analyze.Report, queried [][]json.RawMessage, chartsPerRule int) (*Document, error) {
	doc, byID, err := header(rep, chartsPerRule)
	if err != nil {
		return nil, err
	}
	all, err := rep.AllFindings()
	if err != nil {
		return nil, err
	}
	hasSection := charted(chartsPerRule)
	for i, f := range all {
		if !hasSection(f) {
			doc.Listed = append(doc.Listed, overview(byID, i, f))
			continue
		}
		var rows []json.RawMessage
		if i < len(queried) {
			rows = queried[i]
		}
		fv, err := section(byID, i, f, rows)
		if err != nil {
			return nil, err
		}
		doc.Findings = append(doc.Findings, fv)
	}
	return doc, nil
}

// Write renders doc as one HTML page with its styles, script and charts inline.
func Write(w io.Writer, doc *Document) error {
	all := slices.SortedFunc(slices.Values(slices.Concat(doc.Findings, doc.Listed)), func(a, b Finding) int { return a.Number - b.Number })
	return renderPage(w, pageData{Document: doc, HasFindings: len(all) > 0, HasListed: len(doc.Listed) > 0,
		Overview: slices.Values(all), Sections: slices.Values(doc.Findings), ListedSeq: slices.Values(doc.Listed)})
}

// buildDoc builds rep's whole document, running the chart queries of its findings that get a
// section over db.
func buildDoc(t testing.TB, ctx context.Context, db *store.DB, rep *analyze.Report, chartsPerRule int) *Document {
	t.Helper()
	charts := analyze.NewCharts(ctx, db, rep)
	defer charts.Close()
	all := findingsOf(t, rep)
	queried := make([][]json.RawMessage, len(all))
	hasSection := charted(chartsPerRule)
	for i, f := range all {
		if !hasSection(f) {
			continue
		}
		var err error
		if queried[i], err = charts.Rows(f); err != nil {
			t.Fatal(err)
		}
	}
	doc, err := Build(rep, queried, chartsPerRule)
	if err != nil {
		t.Fatal(err)
	}
	return doc
}

// findingsOf returns rep's findings.
func findingsOf(t testing.TB, rep *analyze.Report) []analyze.Finding {
	t.Helper()
	all, err := rep.AllFindings()
	if err != nil {
		t.Fatal(err)
	}
	return all
}
