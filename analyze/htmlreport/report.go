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

// ChartsPerRule is how many findings of each rule get a section with charts and evidence by
// default (analyze's --html-charts): the first in the report's order, i.e. the most severe, then
// the earliest. The others are listed in a table with their summary. A chart query costs about
// a second of CPU per finding on a database of millions of events, and a page of thousands of
// charted sections is too heavy for a browser.
const ChartsPerRule = 50

// Document is what the page shows, before it is rendered: the goldens compare this.
type Document struct {
	Window   string     `json:"window"`
	Span     string     `json:"span,omitempty"`
	Version  string     `json:"version,omitempty"`
	Inputs   []Input    `json:"inputs"`
	Coverage []Coverage `json:"coverage"`
	Findings []Finding  `json:"findings"`         // the findings with a section: charts and evidence
	Cuts     []Cut      `json:"cuts,omitempty"`   // the rules with more findings than sections
	Listed   []Finding  `json:"listed,omitempty"` // the other findings: a line each, with the summary
}

// Cut says that only the first Charted of a rule's Findings have a section with charts and
// evidence; the others are listed.
type Cut struct {
	Rule     string `json:"rule"`
	Charted  int    `json:"charted"`
	Findings int    `json:"findings"`
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
func header(rep *analyze.Report, chartsPerRule int) (*Document, map[string]rules.Rule, error) {
	cuts, err := cuts(rep, chartsPerRule)
	if err != nil {
		return nil, nil, err
	}
	doc := &Document{Window: rep.Window(), Version: rep.Version, Cuts: cuts}
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
	first, last, ok, err := rep.Span()
	if ok {
		doc.Span = stamp(first) + " to " + stamp(last)
	}
	return doc, byID, err
}

// cuts are the rules of rep with more findings than chartsPerRule, in the order of their first
// finding.
func cuts(rep *analyze.Report, chartsPerRule int) ([]Cut, error) {
	var out []Cut
	at := map[string]int{}
	err := rep.EachFinding(func(_ int, f analyze.Finding) error {
		i, ok := at[f.Rule]
		if !ok {
			i = len(out)
			at[f.Rule] = i
			out = append(out, Cut{Rule: f.Rule})
		}
		out[i].Findings++
		return nil
	})
	if err != nil {
		return nil, err
	}
	kept := out[:0]
	for _, c := range out {
		if c.Findings > chartsPerRule {
			c.Charted = chartsPerRule
			kept = append(kept, c)
		}
	}
	return kept, nil
}

// charted tells, finding by finding in report order, whether it gets a section: the first
// chartsPerRule of its rule do.
func charted(chartsPerRule int) func(analyze.Finding) bool {
	seen := map[string]int{}
	return func(f analyze.Finding) bool {
		seen[f.Rule]++
		return seen[f.Rule] <= chartsPerRule
	}
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

// pageData is what the template renders: the findings' overview lines, their sections and the
// listed findings come from iterators, so that a report can be written one finding at a time
// (WriteReport).
type pageData struct {
	*Document
	CSS         template.CSS
	JS          template.JS
	HasFindings bool
	HasListed   bool
	Overview    iter.Seq[Finding]
	Sections    iter.Seq[Finding]
	ListedSeq   iter.Seq[Finding]
}

func renderPage(w io.Writer, p pageData) error {
	p.CSS, p.JS = template.CSS(pageCSS), template.JS(pageJS)
	return reportPage.Execute(w, p)
}

// WriteReport renders rep as one HTML page with its styles, script and charts inline, one
// finding at a time: the first chartsPerRule findings of each rule get a section (its evidence
// read back, its chart rows from chartRows, see analyze.Charts), built, written and dropped
// before the next, so the page's size does not have to fit in memory; the page says which rules
// have more, and lists those others in a table with their summary, without evidence or charts.
func WriteReport(w io.Writer, rep *analyze.Report, chartRows func(analyze.Finding) ([]json.RawMessage, error), chartsPerRule int) error {
	doc, byID, err := header(rep, chartsPerRule)
	if err != nil {
		return err
	}
	// the iterators stop at the first error, which the page's end returns
	var readErr error
	each := func(fn func(i int, f analyze.Finding) bool) {
		err := rep.EachFinding(func(i int, f analyze.Finding) error {
			if !fn(i, f) {
				return errStop
			}
			return nil
		})
		if err != nil && err != errStop {
			readErr = errors.Join(readErr, err)
		}
	}
	sections := func(yield func(Finding) bool) {
		hasSection := charted(chartsPerRule)
		each(func(i int, f analyze.Finding) bool {
			if !hasSection(f) {
				return true
			}
			queried, err := chartRows(f)
			if err == nil {
				var fv Finding
				if fv, err = section(byID, i, f, queried); err == nil {
					return yield(fv)
				}
			}
			readErr = errors.Join(readErr, fmt.Errorf("finding %d (%s on %s): %w", i+1, f.Rule, object(f), err))
			return false
		})
	}
	overviews := func(listed bool) iter.Seq[Finding] {
		return func(yield func(Finding) bool) {
			hasSection := charted(chartsPerRule)
			each(func(i int, f analyze.Finding) bool {
				if listed && hasSection(f) {
					return true
				}
				return yield(overview(byID, i, f))
			})
		}
	}
	err = renderPage(w, pageData{Document: doc, HasFindings: rep.NumFindings() > 0, HasListed: len(doc.Cuts) > 0,
		Overview: overviews(false), Sections: sections, ListedSeq: overviews(true)})
	return errors.Join(readErr, err)
}

// errStop stops EachFinding where an iterator's consumer stopped.
var errStop = errors.New("stop")
