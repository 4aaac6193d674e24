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

// Build turns a report into the page's data, drawing each finding's charts from its evidence
// or, for a chart with a query, from queried[finding][chart] (see buildDoc).
func Build(rep *analyze.Report, queried [][]json.RawMessage) (*Document, error) {
	doc, byID := header(rep)
	for i, f := range rep.Findings {
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
	return renderPage(w, pageData{Document: doc, HasFindings: len(doc.Findings) > 0,
		Overview: slices.Values(doc.Findings), Sections: slices.Values(doc.Findings)})
}

// buildDoc builds rep's whole document, running its findings' chart queries over db.
func buildDoc(t testing.TB, ctx context.Context, db *store.DB, rep *analyze.Report) *Document {
	t.Helper()
	charts := analyze.NewCharts(ctx, db, rep)
	defer charts.Close()
	queried := make([][]json.RawMessage, len(rep.Findings))
	for i, f := range rep.Findings {
		var err error
		if queried[i], err = charts.Rows(f); err != nil {
			t.Fatal(err)
		}
	}
	doc, err := Build(rep, queried)
	if err != nil {
		t.Fatal(err)
	}
	return doc
}
