package htmlreport

import (
	_ "embed"
	"encoding/json"
	"html/template"
	"io"
	"strings"
	"time"

	"github.com/kubesift/kubesift/analyze"
	"github.com/kubesift/kubesift/rules"
	"github.com/kubesift/kubesift/tabular"
)

// EvidenceRows caps the evidence table of each finding; the charts use all of it.
const EvidenceRows = 500

// Document is what the page shows, before it is rendered: the goldens compare this.
type Document struct {
	Window   string     `json:"window"`
	Span     string     `json:"span,omitempty"`
	Version  string     `json:"version,omitempty"`
	Inputs   []Input    `json:"inputs"`
	Coverage []Coverage `json:"coverage"`
	Findings []Finding  `json:"findings"`
}

// Input is a table analysed and its rows.
type Input struct {
	Table string `json:"table"`
	Rows  int64  `json:"rows"`
}

// Coverage says whether a rule was evaluated, saw all it needs in every cluster, and if not why.
type Coverage struct {
	Rule     string `json:"rule"`
	Title    string `json:"title"`
	Status   string `json:"status"` // evaluated, partial, blind, not evaluated or failed
	Reason   string `json:"reason,omitempty"`
	Findings int    `json:"findings"`
}

// Finding is one finding's section.
type Finding struct {
	Number      int      `json:"number"`
	Severity    string   `json:"severity"`
	Rule        string   `json:"rule"`
	Title       string   `json:"title"`
	Cluster     string   `json:"cluster"`
	Object      string   `json:"object"`
	Subject     string   `json:"subject"`
	FirstSeen   string   `json:"first_seen"`
	LastSeen    string   `json:"last_seen"`
	Count       int64    `json:"count"`
	Summary     string   `json:"summary"`
	Remediation string   `json:"remediation"`
	References  []string `json:"references"`
	Evidence    Evidence `json:"evidence"`
	Charts      []Chart  `json:"charts"`
}

// Evidence is a finding's evidence table, cut at EvidenceRows.
type Evidence struct {
	Columns []string   `json:"columns"`
	Total   int        `json:"total"`
	Rows    [][]string `json:"-"`
}

// Build turns a report into the page's data, drawing each finding's charts from its evidence
// or, for a chart with a query, from queried[finding][chart] (see analyze.ChartRows).
func Build(rep *analyze.Report, queried [][]json.RawMessage) *Document {
	doc := &Document{Window: rep.Window(), Version: rep.Version}
	for _, in := range rep.Inputs {
		doc.Inputs = append(doc.Inputs, Input{in.Table, in.Rows})
	}
	byID := map[string]rules.Rule{}
	for _, o := range rep.Outcomes {
		byID[o.Rule.ID] = o.Rule
		cov := Coverage{Rule: o.Rule.ID, Title: o.Rule.Title, Findings: o.Findings}
		cov.Status, cov.Reason = o.CoverageSummary()
		doc.Coverage = append(doc.Coverage, cov)
	}
	for i, f := range rep.Findings {
		r := byID[f.Rule]
		fv := Finding{
			Number: i + 1, Severity: string(f.Severity), Rule: f.Rule, Title: r.Title, Cluster: f.Cluster, Object: object(f),
			Subject: f.Subject, FirstSeen: stamp(f.FirstSeen), LastSeen: stamp(f.LastSeen), Count: f.Count,
			Summary: f.Summary, Remediation: strings.TrimSpace(r.Remediation), References: r.References,
			Evidence: evidence(f),
		}
		for j, c := range r.Charts {
			data := f.Evidence
			if c.Query != "" {
				data = nil
				if i < len(queried) && j < len(queried[i]) {
					data = queried[i][j]
				}
			}
			fv.Charts = append(fv.Charts, drawChart(c, f, data))
		}
		doc.Findings = append(doc.Findings, fv)
	}
	if first, last, ok := rep.Span(); ok {
		doc.Span = stamp(first) + " to " + stamp(last)
	}
	return doc
}

func stamp(t time.Time) string { return tabular.FormatTime(t) }

func object(f analyze.Finding) string {
	if f.Namespace == "" {
		return f.Name
	}
	return f.Namespace + "/" + f.Name
}

func evidence(f analyze.Finding) Evidence {
	t := analyze.EvidenceTable(f)
	ev := Evidence{Columns: t.ColumnNames(), Total: len(t.Rows)}
	for _, row := range t.Rows[:min(len(t.Rows), EvidenceRows)] {
		cells := make([]string, len(row))
		for i, v := range row {
			cells[i] = tabular.Text(v)
		}
		ev.Rows = append(ev.Rows, cells)
	}
	return ev
}

//go:embed report.html.tmpl
var pageTemplate string

//go:embed chart.html.tmpl
var chartTemplate string

//go:embed report.css
var pageCSS string

//go:embed report.js
var pageJS string

var reportPage = template.Must(template.Must(template.New("report").Funcs(template.FuncMap{
	"severityRank": func(s string) int { return rules.Severity(s).Rank() },
}).Parse(pageTemplate)).Parse(chartTemplate))

// Write renders doc as one HTML page with its styles, script and charts inline.
func Write(w io.Writer, doc *Document) error {
	return reportPage.Execute(w, struct {
		*Document
		CSS template.CSS
		JS  template.JS
	}{doc, template.CSS(pageCSS), template.JS(pageJS)})
}
