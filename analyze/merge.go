package analyze

import "errors"

// Merge combines the reports of the same rules run separately over parts of the evidence (each
// cluster of a dataset, see store.OpenDataset) into one report: the findings of all, the row
// counts added up, and per rule evaluated if it was anywhere, its findings added up, its
// failures joined and each part's coverage listed. Suppressions are applied to the merged report,
// not before. Closing the merged report closes the reports merged.
func Merge(reps []*Report) *Report {
	if len(reps) == 1 {
		return reps[0]
	}
	out := &Report{}
	rows := map[string]int64{}
	var order []string // tables in schema order, as each report lists them
	for i, rep := range reps {
		if i == 0 {
			out.Since, out.Until = rep.Since, rep.Until
			out.Outcomes = append(out.Outcomes, rep.Outcomes...)
		} else {
			for j, o := range rep.Outcomes {
				m := &out.Outcomes[j]
				m.Findings += o.Findings
				m.Err = errors.Join(m.Err, o.Err)
				m.Coverage = append(m.Coverage, o.Coverage...)
				if o.Evaluated && !m.Evaluated {
					m.Evaluated, m.Reason = true, ""
				}
				if m.Reason == "" && !m.Evaluated {
					m.Reason = o.Reason
				}
			}
		}
		out.Findings = append(out.Findings, rep.Findings...)
		out.spills = append(out.spills, rep.spills...)
		for _, in := range rep.Inputs {
			if _, seen := rows[in.Table]; !seen {
				order = append(order, in.Table)
			}
			rows[in.Table] += in.Rows
		}
	}
	for _, table := range order {
		out.Inputs = append(out.Inputs, Input{table, rows[table]})
	}
	sortFindings(out.Findings)
	return out
}
