package audit

import (
	"bytes"
	"encoding/json"
	"io"

	"github.com/kubesift/kubesift/internal/load"
)

// documents are pretty-printed JSON documents: an EventList saved by hand or by a webhook
// receiver, a JSON array of events, or events one after the other.
type documents struct{}

func (documents) detect(_ string, head []byte) bool {
	first, _, _ := bytes.Cut(head, []byte{'\n'})
	first = bytes.TrimSpace(first)
	return (bytes.Equal(first, []byte("{")) || bytes.HasPrefix(first, []byte("["))) && looksLikeAudit(head)
}

// decode reads the documents one by one and sends their events as compact lines. Decoding stops
// at the first malformed document, which is reported with its line; the events before it are
// kept. The file is read whole each time: no resuming inside a document.
func (documents) decode(f *load.File, out *events) error {
	f.EndOffset, f.EndLine = -1, -1
	nl := &newlineIndex{r: f.Src}
	dec := json.NewDecoder(nl)
	for {
		offset := dec.InputOffset()
		var doc json.RawMessage
		err := dec.Decode(&doc)
		if err == io.EOF {
			break
		}
		if err != nil {
			at := dec.InputOffset()
			out.rejects = append(out.rejects, load.Rejected{Line: nl.lineAt(at), Offset: at, Reason: "malformed JSON document: " + err.Error() + "; the rest of the file was not read"})
			break
		}
		offset += int64(len(doc) - len(bytes.TrimLeft(doc, " \t\r\n")))
		for _, item := range documentItems(doc) {
			if !out.add(item, origin{nl.lineAt(offset), offset}) {
				return nil
			}
		}
	}
	if !out.flush() {
		return nil
	}
	f.Lines, f.ReadBytes = nl.lines(), nl.pos
	return nl.err
}

// documentItems flattens an EventList or a JSON array into its events; anything else is one item.
func documentItems(doc json.RawMessage) []json.RawMessage {
	t := bytes.TrimSpace(doc)
	if len(t) > 0 && t[0] == '[' {
		var arr []json.RawMessage
		if json.Unmarshal(t, &arr) == nil {
			var out []json.RawMessage
			for _, a := range arr {
				out = append(out, documentItems(a)...)
			}
			return out
		}
	}
	if isEventList(t) {
		if items, ok := eventListItems(t); ok {
			out := make([]json.RawMessage, len(items))
			for i, it := range items {
				out[i] = it
			}
			return out
		}
	}
	return []json.RawMessage{doc}
}

// newlineIndex records where newlines are as the decoder reads, to turn offsets into lines.
type newlineIndex struct {
	r     io.Reader
	pos   int64
	marks []int64
	err   error
}

func (n *newlineIndex) Read(p []byte) (int, error) {
	m, err := n.r.Read(p)
	for i, c := range p[:m] {
		if c == '\n' {
			n.marks = append(n.marks, n.pos+int64(i))
		}
	}
	n.pos += int64(m)
	if err != nil && err != io.EOF {
		n.err = err
	}
	return m, err
}

// lineAt returns the 1-based line holding byte offset.
func (n *newlineIndex) lineAt(offset int64) int64 {
	lo, hi := 0, len(n.marks)
	for lo < hi {
		mid := (lo + hi) / 2
		if n.marks[mid] < offset {
			lo = mid + 1
		} else {
			hi = mid
		}
	}
	return int64(lo) + 1
}

func (n *newlineIndex) lines() int64 {
	if n.pos > 0 && (len(n.marks) == 0 || n.marks[len(n.marks)-1] != n.pos-1) {
		return int64(len(n.marks)) + 1
	}
	return int64(len(n.marks))
}
