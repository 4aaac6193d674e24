package analyze

import (
	"bufio"
	"cmp"
	"container/heap"
	"encoding/gob"
	"errors"
	"fmt"
	"io"
	"slices"
	"time"

	"github.com/kubesift/kubesift/rules"
)

// findingOrder orders findings most severe first, then by first seen, rule, cluster,
// namespace, name and subject.
func findingOrder(a, b Finding) int {
	return cmp.Or(cmp.Compare(b.Severity.Rank(), a.Severity.Rank()), a.FirstSeen.Compare(b.FirstSeen),
		cmp.Compare(a.Rule, b.Rule), cmp.Compare(a.Cluster, b.Cluster), cmp.Compare(a.Namespace, b.Namespace),
		cmp.Compare(a.Name, b.Name), cmp.Compare(a.Subject, b.Subject))
}

// sortFindings puts findings in the order of findingOrder, keeping the order of equal ones.
func sortFindings(findings []Finding) { slices.SortStableFunc(findings, findingOrder) }

// NumFindings returns the number of the report's findings (after KeepNamespaces and Suppress).
func (rep *Report) NumFindings() int {
	n := 0
	for _, o := range rep.Outcomes {
		n += o.Findings
	}
	return n
}

// BySeverity counts the report's findings by severity.
func (rep *Report) BySeverity() (map[rules.Severity]int, error) {
	n := map[rules.Severity]int{}
	err := rep.EachFinding(func(_ int, f Finding) error {
		n[f.Severity]++
		return nil
	})
	return n, err
}

// EachFinding calls fn with each of the report's findings in order (see Report.findings) and its
// index, until fn returns an error, which it returns. A sweep's findings are read back from
// its clusters' files one at a time, so the report's size does not have to fit in memory.
func (rep *Report) EachFinding(fn func(i int, f Finding) error) error {
	next := rep.cursor()
	for i := 0; ; i++ {
		f, ok, err := next()
		if err != nil || !ok {
			return err
		}
		if err := fn(i, f); err != nil {
			return err
		}
	}
}

// AllFindings returns the report's findings in one slice, in order: for the reports that are
// built in memory anyway (xlsx) and for tests.
func (rep *Report) AllFindings() ([]Finding, error) {
	all := make([]Finding, 0, rep.NumFindings())
	err := rep.EachFinding(func(_ int, f Finding) error {
		all = append(all, f)
		return nil
	})
	return all, err
}

// cursor returns the report's findings in order, one a call (ok false after the last), but for
// those that a filter drops.
func (rep *Report) cursor() func() (f Finding, ok bool, err error) {
	return rep.cursorWith(rep.filters)
}

// cursorWith is cursor with filters instead of the report's.
func (rep *Report) cursorWith(filters []func(Finding) bool) func() (f Finding, ok bool, err error) {
	var read func() (Finding, bool, error)
	if rep.stored == nil {
		i := 0
		read = func() (Finding, bool, error) {
			if i == len(rep.findings) {
				return Finding{}, false, nil
			}
			i++
			return rep.findings[i-1], true, nil
		}
	} else {
		m := &findingMerge{}
		read = func() (Finding, bool, error) {
			if m.readers == nil {
				if err := m.open(rep.stored); err != nil {
					return Finding{}, false, err
				}
			}
			return m.next()
		}
	}
	return func() (Finding, bool, error) {
		for {
			f, ok, err := read()
			if err != nil || !ok || !slices.ContainsFunc(filters, func(drop func(Finding) bool) bool { return drop(f) }) {
				return f, ok, err
			}
		}
	}
}

// storedFindings are the findings of one report of a sweep, in the report's order, as gob
// records of storedFinding in its evidence file from start to end (see Sweep.Add).
type storedFindings struct {
	spill      *evidenceSpill
	start, end int64
	count      int
}

// storedFinding is a finding as its record in the evidence file holds it, its evidence in the
// same file.
type storedFinding struct {
	Rule, Severity, Cluster, Namespace, Name, Subject, Summary string
	FirstSeen, LastSeen                                        time.Time
	Count                                                      int64
	EvidenceOffset                                             int64
	EvidenceLength, EvidenceItems                              int
}

// store appends findings (the evidence of each already in s, or in memory and added now) to s
// and returns where they are.
func (s *evidenceSpill) store(findings []Finding) (storedFindings, error) {
	for i, f := range findings {
		if f.evidence.spill == s {
			continue
		}
		raw, err := f.Evidence()
		if err != nil {
			return storedFindings{}, err
		}
		if findings[i].evidence, err = s.add(raw, f.evidence.items); err != nil {
			return storedFindings{}, err
		}
	}
	if err := s.open(); err != nil {
		return storedFindings{}, err
	}
	start := s.size
	counted := &countingWriter{w: s.w}
	enc := gob.NewEncoder(counted)
	for _, f := range findings {
		ev := f.evidence
		err := enc.Encode(storedFinding{Rule: f.Rule, Severity: string(f.Severity), Cluster: f.Cluster, Namespace: f.Namespace, Name: f.Name,
			Subject: f.Subject, Summary: f.Summary, FirstSeen: f.FirstSeen, LastSeen: f.LastSeen, Count: f.Count,
			EvidenceOffset: ev.offset, EvidenceLength: ev.length, EvidenceItems: ev.items})
		if err != nil {
			return storedFindings{}, fmt.Errorf("keeping the findings in %s: %w", s.f.Name(), err)
		}
	}
	s.size += counted.n
	if err := s.seal(); err != nil {
		return storedFindings{}, err
	}
	return storedFindings{spill: s, start: start, end: s.size, count: len(findings)}, nil
}

type countingWriter struct {
	w io.Writer
	n int64
}

func (c *countingWriter) Write(b []byte) (int, error) {
	n, err := c.w.Write(b)
	c.n += int64(n)
	return n, err
}

// storedReader reads the findings of one storedFindings back in order.
type storedReader struct {
	from storedFindings
	dec  *gob.Decoder
	left int
	head Finding // the next finding of the merge
	part int     // the index of from in the sweep: equal findings keep the order of the sweep's reports
}

func (r *storedReader) read() (ok bool, err error) {
	if r.left == 0 {
		return false, nil
	}
	var rec storedFinding
	if err := r.dec.Decode(&rec); err != nil {
		return false, fmt.Errorf("reading the findings back from %s: %w", r.from.spill.f.Name(), err)
	}
	r.left--
	r.head = Finding{Rule: rec.Rule, Severity: rules.Severity(rec.Severity), Cluster: rec.Cluster, Namespace: rec.Namespace, Name: rec.Name,
		Subject: rec.Subject, Summary: rec.Summary, FirstSeen: rec.FirstSeen, LastSeen: rec.LastSeen, Count: rec.Count,
		evidence: evidence{spill: r.from.spill, offset: rec.EvidenceOffset, length: rec.EvidenceLength, items: rec.EvidenceItems}}
	return true, nil
}

// findingMerge merges the findings of a sweep's reports, each in order, into one order: a heap
// of one finding per report, so that memory holds as many findings as there are reports.
type findingMerge struct {
	readers []*storedReader
}

func (m *findingMerge) open(parts []storedFindings) error {
	m.readers = []*storedReader{}
	for i, p := range parts {
		if p.spill.f == nil {
			return errors.New("reading the findings back: the report was closed")
		}
		section := io.NewSectionReader(p.spill.f, p.start, p.end-p.start)
		r := &storedReader{from: p, dec: gob.NewDecoder(bufio.NewReaderSize(section, 16<<10)), left: p.count, part: i}
		ok, err := r.read()
		if err != nil {
			return err
		}
		if ok {
			m.readers = append(m.readers, r)
		}
	}
	heap.Init(m)
	return nil
}

func (m *findingMerge) next() (Finding, bool, error) {
	if len(m.readers) == 0 {
		return Finding{}, false, nil
	}
	r := m.readers[0]
	f := r.head
	ok, err := r.read()
	switch {
	case err != nil:
		return Finding{}, false, err
	case ok:
		heap.Fix(m, 0)
	default:
		heap.Pop(m)
	}
	return f, true, nil
}

func (m *findingMerge) Len() int { return len(m.readers) }
func (m *findingMerge) Less(i, j int) bool {
	a, b := m.readers[i], m.readers[j]
	return cmp.Or(findingOrder(a.head, b.head), cmp.Compare(a.part, b.part)) < 0
}
func (m *findingMerge) Swap(i, j int) { m.readers[i], m.readers[j] = m.readers[j], m.readers[i] }
func (m *findingMerge) Push(x any)    { m.readers = append(m.readers, x.(*storedReader)) }
func (m *findingMerge) Pop() any {
	last := m.readers[len(m.readers)-1]
	m.readers = m.readers[:len(m.readers)-1]
	return last
}
