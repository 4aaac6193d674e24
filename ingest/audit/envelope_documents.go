package audit

import (
	"bytes"
	"io"

	"github.com/go-json-experiment/json/jsontext"
	"github.com/go-json-experiment/json/v1"

	"github.com/kubesift/kubesift/internal/load"
)

// documents are pretty-printed JSON documents: an EventList saved by hand or by a webhook
// receiver, a JSON array of events, or events one after the other.
type documents struct{}

func (documents) name() string { return "json-documents" }

func (documents) detect(_ string, head []byte) bool {
	first, _, _ := bytes.Cut(head, []byte{'\n'})
	first = bytes.TrimSpace(first)
	return (bytes.Equal(first, []byte("{")) || bytes.HasPrefix(first, []byte("["))) && looksLikeAudit(head)
}

// decode reads the documents one by one and sends their events as compact lines.
func (documents) decode(f *load.File, out *events) error {
	return eachDocument(f, out, "JSON document", func(doc []byte, at origin) ([]event, error) {
		items := documentItems(doc, "")
		evs := make([]event, len(items))
		for i, it := range items {
			o := at
			o.listAPIVersion = it.listAPIVersion
			evs[i] = event{it.raw, o}
		}
		return evs, nil
	})
}

// event is one audit event an envelope took out of a document, with its origin.
type event struct {
	raw []byte
	at  origin
}

// eachDocument reads the JSON documents of a file one after the other (pretty-printed,
// one per line or back to back) and adds the events open takes out of each. A malformed
// document, or one open cannot read as a record of its envelope, stops the decoding and is
// reported with its line and what it should have been (record); the events before it are kept.
// The file is read whole each time: no resuming inside a document.
func eachDocument(f *load.File, out *events, record string, open func(doc []byte, at origin) ([]event, error)) error {
	f.EndOffset, f.EndLine = -1, -1
	nl := &newlineIndex{r: f.Src}
	// jsontext reads a document in one pass, where encoding/json's decoder scanned it three times:
	// with the records then decoded by go-json-experiment's encoding/json v1, CloudWatch pages of
	// the independent mix's events went at 110 MB/s instead of 51 (BENCHMARKS.md). As lenient as
	// encoding/json: names may repeat and strings may hold invalid UTF-8 (each event is validated
	// on its own afterwards).
	dec := jsontext.NewDecoder(nl, jsontext.AllowDuplicateNames(true), jsontext.AllowInvalidUTF8(true))
	for {
		offset := dec.InputOffset()
		value, err := dec.ReadValue()
		if err == io.EOF {
			break
		}
		var doc []byte
		var evs []event
		if err == nil {
			doc = bytes.Clone(value) // value is the decoder's until its next read; events keep parts of doc
			offset = dec.InputOffset() - int64(len(doc))
			evs, err = open(doc, origin{line: nl.lineAt(offset), offset: offset})
		} else { // the malformed document starts after the white space the decoder holds
			offset = dec.InputOffset()
			held := dec.UnreadBuffer()
			offset += int64(len(held) - len(bytes.TrimLeft(held, " \t\r\n")))
		}
		if err != nil {
			out.rejects = append(out.rejects, load.Rejected{Line: nl.lineAt(offset), Offset: offset, Text: doc,
				Reason: "malformed " + record + ": " + err.Error() + "; the rest of the file was not read"})
			break
		}
		for _, ev := range evs {
			if !out.add(ev.raw, ev.at) {
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

// documentItem is one event of a document, with the apiVersion of the EventList it is in.
type documentItem struct {
	raw            []byte
	listAPIVersion string
}

// documentItems flattens an EventList or a JSON array into its events; anything else is one
// item. listVersion is the apiVersion of the EventList doc is in, "" outside one.
func documentItems(doc []byte, listVersion string) []documentItem {
	t := bytes.TrimSpace(doc)
	if len(t) > 0 && t[0] == '[' {
		var arr []json.RawMessage
		if json.Unmarshal(t, &arr) == nil {
			var out []documentItem
			for _, a := range arr {
				out = append(out, documentItems(a, listVersion)...)
			}
			return out
		}
	}
	if isEventList(t) {
		if items, version, ok := eventListItems(t); ok {
			out := make([]documentItem, len(items))
			for i, it := range items {
				out[i] = documentItem{it, version}
			}
			return out
		}
	}
	return []documentItem{{doc, listVersion}}
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
