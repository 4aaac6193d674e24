package audit

import (
	"bytes"
	"errors"
	"io"
	"slices"

	"github.com/go-json-experiment/json/jsontext"
	"github.com/go-json-experiment/json/v1"

	"github.com/kubesift/kubesift/internal/inorder"
	"github.com/kubesift/kubesift/internal/load"
	"github.com/kubesift/kubesift/internal/source"
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
// The file is read whole each time: no resuming inside a document; the elements of a top-level
// array are documents of their own. The documents are read in
// order on one goroutine and opened and cut into batches (validation, redaction, member scans)
// on every CPU, in runs of about a chunk; their batches and rejects are handed on in the file's
// order (inorder.Run).
func eachDocument(f *load.File, out *events, record string, open func(doc []byte, at origin) ([]event, error)) error {
	f.EndOffset, f.EndLine = -1, -1
	nl := &newlineIndex{r: f.Src}
	// jsontext reads a document in one pass, where encoding/json's decoder scanned it three times:
	// with the records then decoded by go-json-experiment's encoding/json v1, CloudWatch pages of
	// the independent mix's events went at 110 MB/s instead of 51 (BENCHMARKS.md). As lenient as
	// encoding/json: names may repeat and strings may hold invalid UTF-8 (each event is validated
	// on its own afterwards).
	dec := jsontext.NewDecoder(nl, jsontext.AllowDuplicateNames(true), jsontext.AllowInvalidUTF8(true))
	ended := false   // the decoder reached the end of the file or a malformed document
	inArray := false // inside a top-level array, whose elements are the documents
	next := func() (documentRun, bool, error) {
		var run documentRun
		for !ended && run.bytes < source.ChunkBytes {
			// A top-level array (`gcloud logging read --format=json`, a JSON array of events) is
			// read element by element: a day of a cluster's log is one array of gigabytes, and an
			// array cut off keeps the elements before the cut.
			if kind := dec.PeekKind(); kind == '[' && !inArray || kind == ']' && inArray {
				if _, err := dec.ReadToken(); err == nil {
					inArray = kind == '['
					continue
				}
			}
			offset := dec.InputOffset()
			value, err := dec.ReadValue()
			if err == io.EOF {
				ended = true
				break
			}
			if err != nil { // the malformed document starts after the white space (and comma) the decoder holds
				held := dec.UnreadBuffer()
				offset += int64(len(held) - len(bytes.TrimLeft(held, " \t\r\n,")))
				run.malformed = &load.Rejected{Line: nl.lineAt(offset), Offset: offset,
					Reason: "malformed " + record + ": " + err.Error() + "; the rest of the file was not read"}
				ended = true
				break
			}
			doc := bytes.Clone(value) // value is the decoder's until its next read; events keep parts of doc
			offset = dec.InputOffset() - int64(len(doc))
			run.docs = append(run.docs, document{doc, origin{line: nl.lineAt(offset), offset: offset}})
			run.bytes += len(doc)
		}
		return run, len(run.docs) > 0 || run.malformed != nil, nil
	}
	errEnded := errors.New("the decoding ended at a document that cannot be opened")
	err := inorder.Run(next, func(run documentRun) (documentsResult, error) {
		return run.batches(record, open, out.redact), nil
	}, func(r documentsResult) error {
		if err := out.take(r.chunkResult); err != nil {
			return err
		}
		if r.last {
			return errEnded
		}
		return nil
	})
	if err == errLoadStopped {
		return nil
	}
	if err != nil && err != errEnded {
		return err
	}
	f.Lines, f.ReadBytes = nl.lines(), nl.pos
	return nl.err
}

// document is one JSON document of a file and where it starts.
type document struct {
	doc []byte
	at  origin
}

// documentRun is a run of documents eachDocument hands to a worker, and the malformed document
// that ended the file's decoding after them, if one did.
type documentRun struct {
	docs      []document
	bytes     int
	malformed *load.Rejected
}

// documentsResult is what a worker made of a run; last says the file's decoding ends with it.
type documentsResult struct {
	chunkResult
	last bool
}

// batches opens the run's documents and cuts their events into batches, up to the first document
// open cannot read as a record.
func (run documentRun) batches(record string, open func(doc []byte, at origin) ([]event, error), redact bool) documentsResult {
	var r documentsResult
	evs := events{redact: redact, send: func(b *batch) bool {
		r.batches = append(r.batches, b)
		return true
	}}
	for _, d := range run.docs {
		opened, err := open(d.doc, d.at)
		if err != nil {
			evs.rejects = append(evs.rejects, load.Rejected{Line: d.at.line, Offset: d.at.offset, Text: d.doc,
				Reason: "malformed " + record + ": " + err.Error() + "; the rest of the file was not read"})
			r.last = true
			break
		}
		for _, ev := range opened {
			evs.add(ev.raw, ev.at)
		}
	}
	evs.flush()
	if run.malformed != nil && !r.last {
		evs.rejects = append(evs.rejects, *run.malformed)
		r.last = true
	}
	r.rejects, r.repaired = evs.rejects, evs.repaired
	return r
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

// newlineIndex records where newlines are as the decoder reads, to turn offsets into lines. It
// keeps the newlines past the last offset asked about only (offsets are asked in increasing
// order): a pretty-printed export of gigabytes has a newline every few dozen bytes.
type newlineIndex struct {
	r       io.Reader
	pos     int64
	marks   []int64 // the newlines read and not yet passed by lineAt, in order
	dropped int64   // the newlines before marks
	newline bool    // the last byte read is a newline
	err     error
}

func (n *newlineIndex) Read(p []byte) (int, error) {
	m, err := n.r.Read(p)
	for i, c := range p[:m] {
		if c == '\n' {
			n.marks = append(n.marks, n.pos+int64(i))
		}
	}
	n.pos += int64(m)
	if m > 0 {
		n.newline = p[m-1] == '\n'
	}
	if err != nil && err != io.EOF {
		n.err = err
	}
	return m, err
}

// lineAt returns the 1-based line holding byte offset, which must not be before an offset it was
// asked about before.
func (n *newlineIndex) lineAt(offset int64) int64 {
	passed, _ := slices.BinarySearch(n.marks, offset)
	n.dropped += int64(passed)
	n.marks = n.marks[passed:]
	return n.dropped + 1
}

// lines returns how many lines were read, a last one without a newline included.
func (n *newlineIndex) lines() int64 {
	total := n.dropped + int64(len(n.marks))
	if n.pos > 0 && !n.newline {
		return total + 1
	}
	return total
}
