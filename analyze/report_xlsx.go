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

// ofRule calls fn with each of the report's findings of rule id, in order, and its number in the
// report (1-based), until fn returns an error.
func (rep *Report) ofRule(id string) func(fn func(number int, f Finding) error) error {
	return func(fn func(number int, f Finding) error) error {
		return rep.EachFinding(func(i int, f Finding) error {
			if f.Rule != id {
				return nil
			}
			return fn(i+1, f)
		})
	}
}

// writeXLSX writes a Summary sheet (one row per finding, then the window, the version, the
// inputs and the rules) and one sheet per rule with findings: its findings' evidence, one row
// per evidence item. The sheets are streamed, a finding at a time (Table.Scan).
func writeXLSX(w io.Writer, rep *Report) error {
	wb, err := tabular.NewWorkbook()
	if err != nil {
		return err
	}
	defer wb.Close()
	wb.SheetName("Summary") // reserved before the rule sheets take names
	// The rule sheets are written after the summary but named first, so the summary can say where.
	names := map[string]string{}
	for _, o := range rep.Outcomes {
		if o.Findings > 0 {
			names[o.Rule.ID] = wb.SheetName(o.Rule.ID)
		}
	}
	summary := &tabular.Table{Name: "Summary"}
	for _, c := range []string{"finding", "severity", "rule", "cluster", "namespace", "name", "subject", "first_seen", "last_seen", "count", "evidence", "summary", "sheet"} {
		summary.Columns = append(summary.Columns, tabular.Column{Name: c})
	}
	summary.Scan = func(yield func(row []any) error) error {
		return rep.EachFinding(func(i int, f Finding) error {
			return yield([]any{i + 1, string(f.Severity), f.Rule, f.Cluster, f.Namespace, f.Name, f.Subject,
				f.FirstSeen, f.LastSeen, f.Count, f.EvidenceCount(), f.Summary, names[f.Rule]})
		})
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
	for _, o := range rep.Outcomes {
		id := o.Rule.ID
		if names[id] == "" {
			continue
		}
		t, err := evidenceTable(id, rep.ofRule(id), true)
		if err != nil {
			return err
		}
		if _, err := wb.AddSheet(tabular.Sheet{Name: names[id], Table: t, Reserved: true}); err != nil {
			return err
		}
	}
	return wb.Write(w)
}
