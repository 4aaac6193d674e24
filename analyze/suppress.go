package analyze

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/kubesift/kubesift/rules"
)

// Suppression silences the findings of a rule about some objects until it expires, for
// scheduled runs with a known, accepted problem. A file of them (--ignore) is a YAML list:
//
//   - rule: watch-rewind
//     object: "lab/*"        # namespace/name (or node) glob: * matches anything
//     expires: 2026-12-31    # from that day (UTC) on it no longer applies, and says so
//     reason: svc-cleanup-operator fix rolling out (OPS-123)
type Suppression struct {
	Rule    string    `yaml:"rule" json:"rule"`
	Object  string    `yaml:"object" json:"object"`
	Expires time.Time `yaml:"expires" json:"expires"`
	Reason  string    `yaml:"reason" json:"reason"`
}

// Suppressed is a finding a suppression silenced: reported apart, never dropped.
type Suppressed struct {
	Finding     Finding     `json:"finding"`
	Suppression Suppression `json:"suppression"`
}

// ParseSuppressions reads a suppression file strictly: every entry needs a known rule, an
// object glob, an expiry date and a reason.
func ParseSuppressions(name string, data []byte, rs []rules.Rule) ([]Suppression, error) {
	var out []Suppression
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	if err := dec.Decode(&out); err != nil && !errors.Is(err, io.EOF) {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	known := map[string]bool{}
	for _, r := range rs {
		known[r.ID] = true
	}
	var errs []error
	for i, s := range out {
		bad := func(msg string) { errs = append(errs, fmt.Errorf("%s: entry %d: %s", name, i+1, msg)) }
		if !known[s.Rule] {
			bad(fmt.Sprintf("unknown rule %q", s.Rule))
		}
		if s.Object == "" {
			bad(`missing object (namespace/name, a glob such as "lab/*")`)
		}
		if s.Expires.IsZero() {
			bad("missing expires (a date: suppressions do not last forever)")
		}
		if strings.TrimSpace(s.Reason) == "" {
			bad("missing reason")
		}
	}
	return out, errors.Join(errs...)
}

// Suppress moves the findings that an unexpired suppression matches out of the report's findings
// to its suppressed ones (EachSuppressed), and counts again; a suppression expired at now is a
// warning in rep.Warnings and silences nothing. It is called once, after KeepNamespaces.
func (rep *Report) Suppress(sups []Suppression, now time.Time) error {
	var active []Suppression
	for _, s := range sups {
		if !now.Before(s.Expires) {
			rep.Warnings = append(rep.Warnings, fmt.Sprintf("suppression of %s on %s expired on %s (%s): its findings are reported again",
				s.Rule, s.Object, s.Expires.UTC().Format(time.DateOnly), s.Reason))
			continue
		}
		active = append(active, s)
	}
	if len(active) == 0 {
		return nil
	}
	objects := make([]func(string) bool, len(active)) // each finding is matched on every read
	for i, s := range active {
		objects[i] = rules.GlobMatcher(s.Object)
	}
	rep.suppressedBy = func(f Finding) (Suppression, bool) {
		for i, s := range active {
			if s.Rule == f.Rule && objects[i](object(f)) {
				return s, true
			}
		}
		return Suppression{}, false
	}
	rep.suppressedAfter = len(rep.filters)
	var err error
	rep.suppressed, err = rep.drop(func(f Finding) bool {
		_, ok := rep.suppressedBy(f)
		return ok
	})
	return err
}

// NumSuppressed returns the number of findings that Suppress silenced.
func (rep *Report) NumSuppressed() int { return rep.suppressed }

// EachSuppressed calls fn with each finding that Suppress silenced, in the order of the
// report's findings, and the suppression that silenced it, until fn returns an error. Like
// EachFinding it reads a sweep's findings back from disk.
func (rep *Report) EachSuppressed(fn func(Suppressed) error) error {
	if rep.suppressed == 0 {
		return nil
	}
	next := rep.cursorWith(rep.filters[:rep.suppressedAfter])
	for {
		f, ok, err := next()
		if err != nil || !ok {
			return err
		}
		if s, ok := rep.suppressedBy(f); ok {
			if err := fn(Suppressed{f, s}); err != nil {
				return err
			}
		}
	}
}
