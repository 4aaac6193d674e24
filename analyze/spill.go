package analyze

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"sync"

	"github.com/go-json-experiment/json/jsontext"
)

// evidenceSpill holds the evidence of a report's findings on disk, so that only the small fields
// of each finding stay in memory: at 4M audit events a report held 25,115 findings with about
// 28 KB of evidence each. The file is unlinked as soon as it is created and lives on as an open
// descriptor, so no exit path (an error, an interrupt, SIGKILL) leaves it behind; Close frees
// its space. It is created on the first finding, in the temporary directory ($TMPDIR).
type evidenceSpill struct {
	f    *os.File
	w    *bufio.Writer
	size int64 // bytes appended, buffered ones included
	// flushing lets the writers of a report read evidence back on several goroutines (see
	// formatInOrder): the first read writes out what add buffered.
	flushing sync.Mutex
}

// add appends raw, a finding's evidence of items items (see countEvidence), and returns where a finding finds it
// again.
func (s *evidenceSpill) add(raw json.RawMessage, items int) (evidence, error) {
	if err := s.open(); err != nil {
		return evidence{}, err
	}
	if _, err := s.w.Write(raw); err != nil {
		return evidence{}, fmt.Errorf("keeping a finding's evidence in %s: %w", s.f.Name(), err)
	}
	ev := evidence{spill: s, offset: s.size, length: len(raw), items: items}
	s.size += int64(len(raw))
	return ev, nil
}

// open creates the file on the first call, and the buffer when seal has let it go.
func (s *evidenceSpill) open() error {
	if s.f == nil {
		f, err := os.CreateTemp("", "kubesift-evidence-*")
		if err != nil {
			return fmt.Errorf("creating the file the findings' evidence is kept in: %w", err)
		}
		if err := os.Remove(f.Name()); err != nil {
			f.Close()
			return fmt.Errorf("unlinking the evidence file %s: %w", f.Name(), err)
		}
		s.f = f
	}
	if s.w == nil {
		s.w = bufio.NewWriterSize(s.f, 1<<20)
	}
	return nil
}

// seal writes out what add buffered and lets the buffer go: a report whose findings are all in
// keeps its file but not the buffer's 1 MiB, which a sweep of a fleet would keep per cluster.
func (s *evidenceSpill) seal() error {
	if s.w == nil {
		return nil
	}
	if err := s.w.Flush(); err != nil {
		return fmt.Errorf("keeping the findings' evidence in %s: %w", s.f.Name(), err)
	}
	s.w = nil
	return nil
}

// read returns the length bytes at offset.
func (s *evidenceSpill) read(offset int64, length int) (json.RawMessage, error) {
	s.flushing.Lock()
	err := s.seal()
	s.flushing.Unlock()
	if err != nil {
		return nil, err
	}
	raw := make(json.RawMessage, length)
	if _, err := s.f.ReadAt(raw, offset); err != nil {
		return nil, fmt.Errorf("reading a finding's evidence back from %s: %w", s.f.Name(), err)
	}
	return raw, nil
}

// Close frees the file.
func (s *evidenceSpill) Close() error {
	if s == nil || s.f == nil {
		return nil
	}
	err := s.f.Close()
	s.f, s.w = nil, nil
	return err
}

// evidence is where a finding's evidence list is: in memory (raw, see Finding.WithEvidence) or
// in a spill file.
type evidence struct {
	raw    json.RawMessage
	spill  *evidenceSpill
	offset int64
	length int
	items  int // the number of items in the list
}

// Evidence returns the finding's evidence list as JSON: read back from the report's evidence
// file for a finding of Run.
func (f Finding) Evidence() (json.RawMessage, error) {
	ev := f.evidence
	switch {
	case ev.spill == nil && ev.raw == nil:
		return json.RawMessage("[]"), nil
	case ev.spill == nil:
		return ev.raw, nil
	case ev.spill.f == nil:
		return nil, errors.New("reading a finding's evidence: its report was closed")
	}
	return ev.spill.read(ev.offset, ev.length)
}

// WithEvidence returns f with raw (a JSON list) as its evidence, held in memory.
func (f Finding) WithEvidence(raw json.RawMessage) Finding {
	f.evidence = evidence{raw: raw, items: countItems(raw)}
	return f
}

// EvidenceCount returns the number of items in the evidence list (0 when it is not a list).
func (f Finding) EvidenceCount() int { return f.evidence.items }

// countEvidence checks that raw, the evidence of a finding, is JSON and returns the number of
// its items.
func countEvidence(raw json.RawMessage) (int, error) {
	items, err := listItems(raw)
	if err != nil {
		return 0, fmt.Errorf("evidence is not JSON (%w): %.80s", err, raw)
	}
	return items, nil
}

// countItems returns the number of items of raw, a JSON list (0 for anything else).
func countItems(raw json.RawMessage) int {
	n, _ := listItems(raw)
	return n
}

// lenient accepts what encoding/json accepts, which writes the reports: duplicate names and
// invalid UTF-8.
var lenient = []jsontext.Options{jsontext.AllowDuplicateNames(true), jsontext.AllowInvalidUTF8(true)}

// listItems checks that raw is one JSON value and returns the number of its items when it is a
// list (0 for another value), in one pass that decodes none of them.
func listItems(raw json.RawMessage) (int, error) {
	dec := jsontext.NewDecoder(bytes.NewReader(raw), lenient...)
	if dec.PeekKind() != '[' {
		if err := dec.SkipValue(); err != nil {
			return 0, err
		}
		return 0, atEnd(dec)
	}
	if _, err := dec.ReadToken(); err != nil {
		return 0, err
	}
	n := 0
	for dec.PeekKind() != ']' {
		if err := dec.SkipValue(); err != nil {
			return 0, err
		}
		n++
	}
	if _, err := dec.ReadToken(); err != nil {
		return 0, err
	}
	return n, atEnd(dec)
}

// atEnd returns an error unless dec has read all of its input (but for white space).
func atEnd(dec *jsontext.Decoder) error {
	if _, err := dec.ReadToken(); err != io.EOF {
		return fmt.Errorf("more than one JSON value (%v)", err)
	}
	return nil
}

// MarshalJSON writes f with its evidence, read back one finding at a time.
func (f Finding) MarshalJSON() ([]byte, error) {
	raw, err := f.Evidence()
	if err != nil {
		return nil, err
	}
	type fields Finding // without this method
	return json.Marshal(struct {
		fields
		Evidence json.RawMessage `json:"evidence"`
	}{fields(f), raw})
}

// Close frees the file that holds the evidence of rep's findings; the findings' evidence can no
// longer be read after it.
func (rep *Report) Close() error {
	var errs []error
	for _, s := range rep.spills {
		errs = append(errs, s.Close())
	}
	return errors.Join(errs...)
}
