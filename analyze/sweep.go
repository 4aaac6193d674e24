package analyze

import (
	"errors"
	"slices"
)

// Sweep combines the reports of the same rules run separately over parts of the evidence (each
// cluster of a dataset, see store.OpenDataset) into one report. Add keeps each report's findings
// in its evidence file and drops them from memory, so that a sweep of a fleet holds the findings
// of one cluster at a time; the combined report reads them back in order, merged (see
// Report.EachFinding).
type Sweep struct {
	out   *Report
	rows  map[string]int64
	order []string // tables in schema order, as each report lists them
}

// Add adds rep: its findings, its row counts added up, and per rule evaluated if it was
// anywhere, its findings added up, its failures joined and each part's coverage listed. The
// sweep owns rep from then on, even when Add fails: Close closes it.
func (s *Sweep) Add(rep *Report) error {
	if s.out == nil {
		s.out = &Report{Since: rep.Since, Until: rep.Until, Outcomes: slices.Clone(rep.Outcomes), stored: []storedFindings{}}
		s.rows = map[string]int64{}
	} else {
		for j, o := range rep.Outcomes {
			m := &s.out.Outcomes[j]
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
	for _, in := range rep.Inputs {
		if _, seen := s.rows[in.Table]; !seen {
			s.order = append(s.order, in.Table)
		}
		s.rows[in.Table] += in.Rows
	}
	s.out.spills = append(s.out.spills, rep.spills...)
	if len(rep.findings) == 0 {
		return nil
	}
	spill := &evidenceSpill{}
	if len(rep.spills) > 0 {
		spill = rep.spills[0]
	} else {
		s.out.spills = append(s.out.spills, spill)
	}
	stored, err := spill.store(rep.findings)
	if err != nil {
		return err
	}
	s.out.stored = append(s.out.stored, stored)
	rep.findings = nil
	return nil
}

// Close frees the files of the reports added; the combined report's findings can no longer be
// read after it.
func (s *Sweep) Close() error {
	if s.out == nil {
		return nil
	}
	return s.out.Close()
}

// Report returns the combined report. Suppressions are applied to it, not to the reports added.
func (s *Sweep) Report() *Report {
	if s.out == nil {
		return &Report{}
	}
	s.out.Inputs = nil
	for _, table := range s.order {
		s.out.Inputs = append(s.out.Inputs, Input{table, s.rows[table]})
	}
	return s.out
}

// NewReport returns the report of outcomes with findings found elsewhere (a benchmark's), in
// order, each outcome's count of findings set from them.
func NewReport(outcomes []Outcome, findings []Finding) *Report {
	rep := &Report{Outcomes: outcomes, findings: slices.Clone(findings)}
	sortFindings(rep.findings)
	for i := range rep.Outcomes {
		rep.Outcomes[i].Findings = 0
		for _, f := range findings {
			if f.Rule == rep.Outcomes[i].Rule.ID {
				rep.Outcomes[i].Findings++
			}
		}
	}
	return rep
}
