package audit

import (
	"bytes"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/kubesift/kubesift/internal/load"
	"github.com/kubesift/kubesift/internal/source"
)

// An envelope is one way audit events are packed into a file. It recognises its files from
// their name and first bytes, and decodes one into raw event JSON, each event with its origin;
// DuckDB turns the events into rows as they come. A new envelope is one file with a type that
// implements envelope, and its line in envelopes.
type envelope interface {
	// name is the envelope's name in audit_events.envelope, which tells what the events can
	// carry (a GKE LogEntry has no request URI, so no watch parameters).
	name() string
	// detect reports whether a file with this name and first bytes (decompressed) is an audit
	// log in this envelope.
	detect(name string, head []byte) bool
	// decode hands the file's events to out in file order, and says in f how much it read
	// (Lines, ReadBytes) and where the next load of a growing file starts (EndOffset, EndLine;
	// -1 when it cannot resume). It returns the read failure that stopped it early, if any: the
	// events before it are loaded.
	decode(f *load.File, out *events) error
}

// envelopes are asked in order; the first that detects a file decodes it.
var envelopes = []envelope{
	eksFirehose{},
	eksLogEvents{},
	aksDiagnostics{},
	gkeLogEntries{},
	documents{},
	eventListLines{},
	jsonLines{},
}

// envelopeNames lists the envelopes' names, for the documentation of audit_events.envelope.
func envelopeNames() string {
	names := make([]string, len(envelopes))
	for i, e := range envelopes {
		names[i] = e.name()
	}
	return strings.Join(names, ", ")
}

// envelopeOf returns the envelope of a file, nil when it is not an audit log.
func envelopeOf(name string, head []byte) envelope {
	if i := slices.IndexFunc(envelopes, func(e envelope) bool { return e.detect(name, head) }); i >= 0 {
		return envelopes[i]
	}
	return nil
}

// looksLikeAudit reports whether head starts an audit log: events (possibly behind a shipper's
// prefix) or EventList documents, one per line or pretty-printed.
func looksLikeAudit(head []byte) bool {
	probe := head[:min(len(head), 8<<10)]
	return bytes.Contains(probe, []byte(`audit.k8s.io/`)) &&
		(bytes.Contains(probe, []byte(`"auditID"`)) || bytes.Contains(probe, []byte(`"EventList"`)))
}

// isolateBytes is the event size from which an event travels to DuckDB in a batch of its own:
// DuckDB's JSON functions need several times an event's size while decoding it, so big events
// are decoded one at a time rather than side by side in one vector.
const isolateBytes = 1 << 20

// chunkResult is what a worker made of about a chunk of a file (a chunk of lines, a run of
// documents): its batches, the input it rejected and how many events it repaired.
type chunkResult struct {
	batches  []*batch
	rejects  []load.Rejected
	repaired int
}

// errLoadStopped ends a file's decoding where the load stopped taking batches.
var errLoadStopped = errors.New("the load stopped taking batches")

// take adds what a worker made to e, in the file's order: its rejects and repairs, and its
// batches sent on. It returns errLoadStopped when the load stops taking them.
func (e *events) take(r chunkResult) error {
	e.rejects = append(e.rejects, r.rejects...)
	e.repaired += r.repaired
	for _, b := range r.batches {
		if !e.send(b) {
			return errLoadStopped
		}
	}
	return nil
}

// events takes what an envelope decodes to the load: batches of raw events, and the input it
// rejected itself.
type events struct {
	// send hands a batch to DuckDB; false when the load stopped and the envelope should too.
	send    func(*batch) bool
	rejects []load.Rejected
	// tail is the offset of a last line without a newline (-1 when none): it may still be being
	// written, and is left for the next load when DuckDB rejects it.
	tail int64
	// repaired counts the events whose invalid UTF-8 was replaced by U+FFFD.
	repaired int
	// redact says to take secrets out of the events (redactEvent) and to drop the bodies of
	// sensitive ones (batch.redact).
	redact bool
	// redacted says the events come redacted already: add does not redact them again.
	redacted bool
	cur      *batch // the batch add fills
	reader   eventReader
	scan     memberScan // the members of the event add reads
}

// add copies one event (compacted when it spans lines) into the batch being filled and sends the
// batch when it is full: for envelopes that decode their input rather than cut it into lines. It
// returns false when the load stopped.
func (e *events) add(event []byte, o origin) bool {
	big := len(event) >= isolateBytes
	if big && !e.flush() {
		return false
	}
	if e.cur == nil {
		e.cur = newBatch(nil, e.redact)
	}
	if !utf8.Valid(event) {
		event = toValidUTF8(event)
		e.repaired++
	}
	// one pass validates the event and finds its members, as for a log of JSON lines
	event, _, bad := e.reader.read(event, &e.scan)
	if bad {
		e.rejects = append(e.rejects, load.Rejected{Line: o.line, Offset: o.offset, Reason: rejectReason(event), Text: bytes.Clone(event)})
		return true
	}
	scan := &e.scan
	if e.redact && !e.redacted {
		var changed bool
		if event, changed = redactEvent(event, scan); changed {
			scan = nil // the members moved: the batch finds them again
		}
	}
	// an event on one line goes as it is, as the events of a log of JSON lines do (the messages of
	// CloudWatch and Azure records are the apiserver's own lines): compacting every event took an
	// eighth of the CPU of a load of CloudWatch pages
	if bytes.IndexByte(event, '\n') >= 0 {
		var buf bytes.Buffer
		if json.Compact(&buf, event) == nil {
			event, scan = buf.Bytes(), nil
		}
	}
	start := len(e.cur.values)
	e.cur.values = append(e.cur.values, event...)
	e.cur.add(start, len(e.cur.values), o, scan)
	if big || len(e.cur.values) >= source.ChunkBytes {
		return e.flush()
	}
	return true
}

// flush sends the batch add filled; the envelope calls it after its last add.
func (e *events) flush() bool {
	if e.cur == nil || e.cur.rows() == 0 {
		return true
	}
	b := e.cur
	e.cur = nil
	return e.send(b)
}
