package analyze

import (
	"io"
	"time"

	"github.com/kubesift/kubesift/tabular"
)

// Window describes the analysis window: "all data", "since T", "until T" or "T to T".
func (rep *Report) Window() string {
	switch {
	case rep.Since == nil && rep.Until == nil:
		return "all data"
	case rep.Until == nil:
		return "since " + rfc3339(*rep.Since)
	case rep.Since == nil:
		return "until " + rfc3339(*rep.Until)
	}
	return rfc3339(*rep.Since) + " to " + rfc3339(*rep.Until)
}

// Span returns the earliest first_seen and the latest last_seen of the findings (ok false when
// there are none).
func (rep *Report) Span() (first, last time.Time, ok bool, err error) {
	err = rep.EachFinding(func(i int, f Finding) error {
		if i == 0 || f.FirstSeen.Before(first) {
			first = f.FirstSeen
		}
		if i == 0 || f.LastSeen.After(last) {
			last = f.LastSeen
		}
		ok = true
		return nil
	})
	return first, last, ok, err
}

// byRule groups the findings per rule (in the order of the outcomes) with their numbers in the
// report (1-based, the order of the report's findings).
func (rep *Report) byRule(all []Finding) (ids []string, findings map[string][]Finding, numbers map[string][]int) {
	findings, numbers = map[string][]Finding{}, map[string][]int{}
	for _, o := range rep.Outcomes {
		ids = append(ids, o.Rule.ID)
	}
	for i, f := range all {
		findings[f.Rule] = append(findings[f.Rule], f)
		numbers[f.Rule] = append(numbers[f.Rule], i+1)
	}
	return ids, findings, numbers
}

// writeXLSX writes a Summary sheet (one row per finding, then the window, the version, the
// inputs and the rules) and one sheet per rule with findings: its findings' evidence, one row
// per evidence item. The workbook is built in memory, its findings with it.
func writeXLSX(w io.Writer, rep *Report) error {
	all, err := rep.AllFindings()
	if err != nil {
		return err
	}
	wb, err := tabular.NewWorkbook()
	if err != nil {
		return err
	}
	defer wb.Close()
	wb.SheetName("Summary") // reserved before the rule sheets take names
	ids, findings, numbers := rep.byRule(all)
	// The rule sheets are written after the summary but named first, so the summary can say where.
	names := map[string]string{}
	for _, id := range ids {
		if len(findings[id]) > 0 {
			names[id] = wb.SheetName(id)
		}
	}
	summary := &tabular.Table{Name: "Summary"}
	for _, c := range []string{"finding", "severity", "rule", "cluster", "namespace", "name", "subject", "first_seen", "last_seen", "count", "evidence", "summary", "sheet"} {
		summary.Columns = append(summary.Columns, tabular.Column{Name: c})
	}
	for i, f := range all {
		summary.Rows = append(summary.Rows, []any{i + 1, string(f.Severity), f.Rule, f.Cluster, f.Namespace, f.Name, f.Subject,
			f.FirstSeen, f.LastSeen, f.Count, f.EvidenceCount(), f.Summary, names[f.Rule]})
	}
	after := [][]any{
		{tabular.Heading("report"), ""},
		{"kubesift version", rep.Version},
		{"window analysed", rep.Window()},
		{"times", "UTC"},
	}
	if rep.HTMLReport != "" {
		after = append(after, []any{"HTML report (charts)", tabular.Link{Target: rep.HTMLReport}})
	}
	if first, last, ok, err := rep.Span(); err != nil {
		return err
	} else if ok {
		after = append(after, []any{"findings from", first}, []any{"findings to", last})
	}
	after = append(after, []any{}, []any{tabular.Heading("input table"), tabular.Heading("rows")})
	for _, in := range rep.Inputs {
		after = append(after, []any{in.Table, in.Rows})
	}
	after = append(after, []any{}, []any{tabular.Heading("rule"), tabular.Heading("evaluated"), tabular.Heading("findings"), tabular.Heading("sheet or reason"),
		tabular.Heading("coverage"), tabular.Heading("coverage reason")})
	for _, o := range rep.Outcomes {
		note := names[o.Rule.ID]
		if !o.Evaluated {
			note = o.Reason
		}
		status, reason := o.CoverageSummary()
		after = append(after, []any{o.Rule.ID, o.Evaluated, o.Findings, note, status, reason})
	}
	if _, err := wb.AddSheet(tabular.Sheet{Name: "Summary", Table: summary, After: after, Reserved: true}); err != nil {
		return err
	}
	for _, id := range ids {
		if names[id] == "" {
			continue
		}
		t, err := evidenceTable(id, findings[id], numbers[id], true)
		if err != nil {
			return err
		}
		if _, err := wb.AddSheet(tabular.Sheet{Name: names[id], Table: t, Reserved: true}); err != nil {
			return err
		}
	}
	return wb.Write(w)
}
