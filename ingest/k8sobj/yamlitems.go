package k8sobj

import (
	"bytes"
	"fmt"

	"gopkg.in/yaml.v3"
)

// maxYAMLItemBytes bounds one list item, and one document outside list items, of a YAML
// snapshot: the default longest audit line, for the same reason (memory grows with it).
const maxYAMLItemBytes = 16 << 20

// yamlItems streams the items of a YAML List document (`items:` at column 0 followed by a block
// sequence, as kubectl writes it) one at a time, so that memory follows the size of an item, not
// of the list: yaml.v3 has no streaming decoder, so the sequence is cut textually at its entries
// ("- " at the sequence's indentation) and each entry is decoded on its own. The lines of the
// document around the items stay in the document, which is still decoded for its errors.
type yamlItems struct {
	d       *decoder
	pending []byte // the items: line, until the next line shows a block sequence follows
	active  bool   // inside the sequence
	indent  int    // the sequence's indentation, -1 before its first entry
	lc      listContext
	item    bytes.Buffer // the entry being read, its dash blanked
	line    int64        // where the entry starts
	off     int64
	tooBig  bool // the entry went over maxYAMLItemBytes: its lines are skipped
	budget  int  // alias budget of the document
	streams bool // the document's items were streamed
}

// isItemsKey says whether a line is `items:` at column 0 with nothing after it.
func isItemsKey(l []byte) bool {
	rest, ok := bytes.CutPrefix(l, []byte("items:"))
	if !ok {
		return false
	}
	rest = bytes.TrimSpace(rest)
	return len(rest) == 0 || rest[0] == '#'
}

// take offers the document's line l (number line, at offset off) to the streamer, with the
// document so far in doc. It returns false when the line belongs to the document; the caller
// puts an empty line in the document for each line of an entry, to keep its line numbers.
func (s *yamlItems) take(doc *bytes.Buffer, l []byte, line, off int64) (bool, error) {
	trimmed := bytes.TrimSpace(l)
	blank := len(trimmed) == 0 || trimmed[0] == '#'
	switch {
	case s.pending != nil:
		indent := len(l) - len(bytes.TrimLeft(l, " "))
		switch {
		case blank:
			s.pending = append(s.pending, l...)
			return true, nil
		case !isEntry(l[indent:]): // not a block sequence: the document decodes it
			doc.Write(s.pending)
			s.pending = nil
			return false, nil
		}
		s.lc = listHeader(doc.Bytes())
		doc.Write(bytes.Repeat([]byte{'\n'}, bytes.Count(s.pending, []byte{'\n'})))
		s.pending, s.active, s.indent, s.streams = nil, true, indent, true
		s.d.st.Lists++
		return true, s.start(l, indent, line, off)
	case s.active:
		indent := len(l) - len(bytes.TrimLeft(l, " "))
		switch {
		case blank || indent > s.indent:
			s.write(l)
			return true, nil
		case indent == s.indent && isEntry(l[indent:]):
			if err := s.flush(); err != nil {
				return true, err
			}
			return true, s.start(l, indent, line, off)
		}
		s.active = false
		return false, s.flush()
	case isItemsKey(l) && !s.streams:
		s.pending = append([]byte(nil), l...)
		return true, nil
	}
	return false, nil
}

func isEntry(l []byte) bool {
	return len(l) > 0 && l[0] == '-' && (len(l) == 1 || l[1] == ' ' || l[1] == '\n' || l[1] == '\r')
}

// start begins an entry at its dash line.
func (s *yamlItems) start(l []byte, indent int, line, off int64) error {
	s.item.Reset()
	s.line, s.off, s.tooBig = line, off, false
	s.item.Write(l[:indent])
	s.item.WriteByte(' ')
	s.write(l[indent+1:])
	return nil
}

func (s *yamlItems) write(l []byte) {
	if s.tooBig {
		return
	}
	if s.item.Len()+len(l) > maxYAMLItemBytes {
		s.tooBig = true
		s.item.Reset()
		return
	}
	s.item.Write(l)
}

// flush decodes the entry read so far into an object.
func (s *yamlItems) flush() error {
	if s.tooBig {
		s.tooBig = false
		s.d.bad(s.line, s.off, fmt.Sprintf("YAML list item at line %d is longer than %d bytes", s.line, maxYAMLItemBytes), "")
		return nil
	}
	if s.item.Len() == 0 {
		return nil
	}
	b := s.item.Bytes()
	defer s.item.Reset()
	var n yaml.Node
	if err := yaml.Unmarshal(b, &n); err != nil {
		s.d.bad(s.line, s.off, fmt.Sprintf("YAML list item at line %d: %v", s.line, err), excerptOf(b, excerptLen))
		return nil
	}
	if n.Kind != yaml.DocumentNode || len(n.Content) == 0 {
		return s.d.object([]byte("null"), &s.lc, Origin{Line: s.line}, s.off, false)
	}
	j, err := nodeJSON(n.Content[0], &s.budget)
	if err != nil {
		s.d.bad(s.line, s.off, fmt.Sprintf("YAML list item at line %d: %v", s.line, err), excerptOf(b, excerptLen))
		return nil
	}
	// The item is where its node starts, as when the whole document is decoded: the line after
	// the dash when the dash is alone on its line.
	return s.d.object(j, &s.lc, Origin{Line: s.line + int64(n.Content[0].Line) - 1}, s.off, false)
}

// end finishes the document: the last entry is decoded, and a pending items: line (with
// nothing after it) goes back to the document. It says whether the items were streamed.
func (s *yamlItems) end(doc *bytes.Buffer) (bool, error) {
	if s.pending != nil {
		doc.Write(s.pending)
	}
	var err error
	if s.active {
		err = s.flush()
	}
	streamed := s.streams
	*s = yamlItems{d: s.d, budget: maxAliasNodes}
	return streamed, err
}

// listHeader reads kind and apiVersion from the lines of a List before its items.
func listHeader(head []byte) listContext {
	var h struct {
		Kind       string `yaml:"kind"`
		APIVersion string `yaml:"apiVersion"`
	}
	yaml.Unmarshal(head, &h)
	return listContext{kind: h.Kind, apiVersion: h.APIVersion}
}
