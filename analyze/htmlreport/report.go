package htmlreport

import (
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"html/template"
	"io"
	"iter"
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

// header is the page's data without the findings, and the rules by id.
func header(rep *analyze.Report) (*Document, map[string]rules.Rule) {
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
	if first, last, ok := rep.Span(); ok {
		doc.Span = stamp(first) + " to " + stamp(last)
	}
	return doc, byID
}

// overview is finding i's line in the table of findings: its section without evidence and charts.
func overview(byID map[string]rules.Rule, i int, f analyze.Finding) Finding {
	r := byID[f.Rule]
	return Finding{
		Number: i + 1, Severity: string(f.Severity), Rule: f.Rule, Title: r.Title, Cluster: f.Cluster, Object: object(f),
		Subject: f.Subject, FirstSeen: stamp(f.FirstSeen), LastSeen: stamp(f.LastSeen), Count: f.Count,
		Summary: f.Summary, Remediation: strings.TrimSpace(r.Remediation), References: r.References,
	}
}

// section is finding i's section: its evidence, and its charts drawn from the evidence or, for
// a chart with a query, from queried[chart].
func section(byID map[string]rules.Rule, i int, f analyze.Finding, queried []json.RawMessage) (Finding, error) {
	fv := overview(byID, i, f)
	raw, err := f.Evidence()
	if err != nil {
		return Finding{}, err
	}
	if fv.Evidence, err = evidence(f); err != nil {
		return Finding{}, err
	}
	for j, c := range byID[f.Rule].Charts {
		data := raw
		if c.Query != "" {
			data = nil
			if j < len(queried) {
				data = queried[j]
			}
		}
		fv.Charts = append(fv.Charts, drawChart(c, f, data))
	}
	return fv, nil
}

func stamp(t time.Time) string { return tabular.FormatTime(t) }

func object(f analyze.Finding) string {
	if f.Namespace == "" {
		return f.Name
	}
	return f.Namespace + "/" + f.Name
}

func evidence(f analyze.Finding) (Evidence, error) {
	t, err := analyze.EvidenceTable(f)
	if err != nil {
		return Evidence{}, err
	}
	ev := Evidence{Columns: t.ColumnNames()}
	err = t.Each(func(row []any) error {
		ev.Total++
		if len(ev.Rows) < EvidenceRows {
			cells := make([]string, len(row))
			for i, v := range row {
				cells[i] = tabular.Text(v)
			}
			ev.Rows = append(ev.Rows, cells)
		}
		return nil
	})
	return ev, err
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

// pageData is what the template renders: the findings' overview lines and their sections come
// from iterators, so that a report can be written one finding at a time (WriteReport).
type pageData struct {
	*Document
	CSS         template.CSS
	JS          template.JS
	HasFindings bool
	Overview    iter.Seq[Finding]
	Sections    iter.Seq[Finding]
}

func renderPage(w io.Writer, p pageData) error {
	p.CSS, p.JS = template.CSS(pageCSS), template.JS(pageJS)
	return reportPage.Execute(w, p)
}

// WriteReport renders rep as one HTML page with its styles, script and charts inline, one
// finding at a time: each section (its evidence read back, its chart rows from chartRows, see
// analyze.Charts) is built, written and dropped before the next, so the page's size does not
// have to fit in memory.
func WriteReport(w io.Writer, rep *analyze.Report, chartRows func(analyze.Finding) ([]json.RawMessage, error)) error {
	doc, byID := header(rep)
	var sectionErr error
	sections := func(yield func(Finding) bool) {
		for i, f := range rep.Findings {
			queried, err := chartRows(f)
			if err == nil {
				var fv Finding
				if fv, err = section(byID, i, f, queried); err == nil {
					if !yield(fv) {
						return
					}
					continue
				}
			}
			sectionErr = fmt.Errorf("finding %d (%s on %s): %w", i+1, f.Rule, object(f), err)
			return
		}
	}
	overviews := func(yield func(Finding) bool) {
		for i, f := range rep.Findings {
			if !yield(overview(byID, i, f)) {
				return
			}
		}
	}
	err := renderPage(w, pageData{Document: doc, HasFindings: len(rep.Findings) > 0, Overview: overviews, Sections: sections})
	return errors.Join(sectionErr, err)
}
