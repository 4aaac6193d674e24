package audit

import (
	"bytes"
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/go-json-experiment/json/v1"

	"github.com/kubesift/kubesift/internal/inorder"
	"github.com/kubesift/kubesift/internal/load"
	"github.com/kubesift/kubesift/internal/source"
)

// jsonLines is the apiserver's own log (--audit-log-path): one event per line, gzipped or
// rotated, each line possibly behind a log shipper's prefix (a timestamp and host, a CRI log
// prefix, a CloudWatch export's timestamp).
type jsonLines struct{}

func (jsonLines) name() string { return "json-lines" }

func (jsonLines) detect(_ string, head []byte) bool { return looksLikeAudit(head) }

func (jsonLines) decode(f *load.File, out *events) error { return decodeLines(f, out, false) }

// eventListLines is a webhook receiver's log: one EventList batch per line (lines of single
// events among them are taken as they are).
type eventListLines struct{}

func (eventListLines) name() string { return "eventlist-lines" }

func (eventListLines) detect(_ string, head []byte) bool {
	first, _, _ := bytes.Cut(bytes.TrimLeft(head, " \t\r\n"), []byte{'\n'})
	start := jsonStart(first)
	return start >= 0 && isEventList(first[start:]) && looksLikeAudit(head)
}

func (eventListLines) decode(f *load.File, out *events) error { return decodeLines(f, out, true) }

// decodeLines cuts the file into chunks of whole lines and the chunks into batches of events,
// without copying the lines (but for container-log lines rejoined from partials, criJoiner);
// EventList lines are opened when lists is set. It reads from where the last load of a growing
// file stopped, and says where it stopped itself. The chunks are read and rejoined in order on
// one goroutine and cut into batches (validation, redaction, member scans: most of the Go side's
// work) on every CPU; their batches and rejects are handed on in the file's order (inorder.Run).
func decodeLines(f *load.File, out *events, lists bool) error {
	lr := source.NewLineReader(f.Src, f.Settings.MaxLineBytes, f.StartOffset, f.StartLine+1)
	cri := criJoiner{maxLine: lr.MaxLine}
	opt := lineOptions{maxLine: lr.MaxLine, lists: lists, redact: out.redact}
	next := func() (lineRun, bool, error) {
		c, big := lr.Next()
		if big != nil {
			return lineRun{rejects: []load.Rejected{{Line: big.Line, Offset: big.Offset, Reason: big.Reason(lr.MaxLine), Text: big.Head}}}, true, nil
		}
		if c == nil {
			return lineRun{}, false, nil
		}
		parts, tooLong := cri.split(c)
		return lineRun{parts: parts, rejects: tooLong}, true, nil
	}
	err := inorder.Run(next, func(run lineRun) (chunkResult, error) {
		return run.batches(opt), nil
	}, out.take)
	if err == errLoadStopped {
		return nil
	}
	if err != nil {
		return err
	}
	f.Lines = lr.NextLine - 1 - f.StartLine
	f.ReadBytes = lr.Base - f.StartOffset
	f.EndOffset, f.EndLine = lr.Base, lr.NextLine-1
	out.tail = lr.Tail
	if runs := cri.unfinished(); len(runs) > 0 {
		if f.Src.MayGrow() { // the final pieces may not be written yet: the next load starts at the first piece
			f.EndOffset, f.EndLine = runs[0].offset, runs[0].line-1
			f.AddNote(fmt.Sprintf("line %d is the first piece of a container log line whose final piece is not written yet: it is left for the next load", runs[0].line))
		} else {
			for _, r := range runs {
				out.rejects = append(out.rejects, load.Rejected{Line: r.line, Offset: r.offset, Reason: r.unfinishedReason(), Text: r.head})
			}
		}
	}
	return lr.ReadErr
}

// lineRun is a chunk of whole lines as decodeLines read it, the container-log lines in it
// rejoined (parts), with the lines already rejected: too long to read or to rejoin.
type lineRun struct {
	parts   []*source.Chunk
	rejects []load.Rejected
}

// batches cuts the run's parts into batches (chunkToBatches).
func (run lineRun) batches(opt lineOptions) chunkResult {
	r := chunkResult{rejects: run.rejects}
	for _, part := range run.parts {
		batches, tooLong, repaired := chunkToBatches(part, opt)
		r.batches = append(r.batches, batches...)
		r.rejects = append(r.rejects, tooLong...)
		r.repaired += repaired
	}
	return r
}

// lineOptions say how chunkToBatches treats the lines of a chunk.
type lineOptions struct {
	maxLine int  // longer lines are rejected
	lists   bool // open EventList lines
	redact  bool // take secrets out of events (redactEvent)
}

// chunkToBatches turns a chunk of lines into batches. Lines are used in place; a line with a
// prefix before its JSON object (a log shipper's host or timestamp) or, when lists is set, an
// EventList forces the remaining lines to be compacted toward the front of the chunk, which is
// safe because the write position never passes the read position. A batch holds at most
// source.ChunkBytes of events, however big the chunk grew around a long line.
// Lines longer than maxLine are returned as rejected instead. A line that is not valid UTF-8
// (checked only when the chunk as a whole is not) is repaired into a batch of its own; repaired
// counts those lines. Events the redactor rewrote go to batches of their own too.
func chunkToBatches(c *source.Chunk, opt lineOptions) (batches []*batch, rejects []load.Rejected, repaired int) {
	buf := c.Data
	valid := utf8.Valid(buf)
	b := newBatch(buf, opt.redact)
	cut := func() {
		if b.rows() > 0 {
			batches = append(batches, b)
			b = newBatch(buf, opt.redact)
		}
	}
	rewritten := events{redact: opt.redact, redacted: true} // events changed: their bytes no longer fit in place
	rewritten.send = func(full *batch) bool {
		batches = append(batches, full)
		return true
	}
	// inPlace says whether event, at line and offset, stays where it is; if so, scan is its
	// member scan. An event Go's decoder would not read is rejected; one that asGoReads or the
	// redactor changed is added to rewritten instead. Batches keep the file's order of events:
	// the endpoint deriver reads them in that order.
	var scan memberScan
	var reader eventReader
	inPlace := func(event []byte, line, offset int64, list string) bool {
		event, changed, bad := reader.read(event, &scan)
		if bad {
			rejects = append(rejects, load.Rejected{Line: line, Offset: offset, Reason: rejectReason(event), Text: bytes.Clone(event)})
			return false
		}
		// an event asGoReads rewrote (duplicate names) is redacted here too: rewritten does not
		// redact again
		if opt.redact {
			var took bool
			event, took = redactEvent(event, &scan)
			changed = changed || took
		}
		if changed {
			cut()
			rewritten.add(event, origin{line: line, offset: offset, listAPIVersion: list})
			return false
		}
		rewritten.flush()
		return true
	}
	w := 0 // end of the values written so far
	pos := 0
	line := c.FirstLine
	for pos < len(buf) {
		end := len(buf)
		next := len(buf)
		if i := bytes.IndexByte(buf[pos:], '\n'); i >= 0 {
			end, next = pos+i, pos+i+1
		}
		text := buf[pos:end]
		offset := c.Base + int64(pos)
		start := jsonStart(text)
		big := len(text) >= isolateBytes
		if big || b.bytes() >= source.ChunkBytes {
			cut()
		}
		switch {
		case len(text) > opt.maxLine:
			o := source.Oversized{Line: line, Offset: offset, Length: int64(len(text)), Head: text[:min(len(text), 200)]}
			rejects = append(rejects, load.Rejected{Line: line, Offset: offset, Reason: o.Reason(opt.maxLine), Text: o.Head})
			// w stays put: the lines after this one are compacted over it.
		case start < 0: // blank line: nothing to load
			if w == pos {
				w = next
				if b.rows() > 0 {
					b.offsets[len(b.offsets)-1] = int32(w)
				}
			}
		case !valid && !utf8.Valid(text):
			// The repaired line is longer than the original: it cannot stay in place, and w
			// stays put so that the lines after it are compacted over it.
			cut()
			rewritten.flush()
			fixed := &source.Chunk{Data: append(toValidUTF8(text), '\n'), Base: offset, FirstLine: line}
			more, tooLong, _ := chunkToBatches(fixed, opt)
			batches, rejects = append(batches, more...), append(rejects, tooLong...)
			repaired++
		case opt.lists && isEventList(text[start:]):
			items, listVersion, ok := eventListItems(text[start:])
			if !ok { // w stays put: the lines after this one are compacted over it
				rejects = append(rejects, load.Rejected{Line: line, Offset: offset, Reason: rejectReason(text[start:]), Text: bytes.Clone(text[start:])})
				break
			}
			for _, it := range items {
				if !inPlace(it, line, offset, listVersion) {
					continue
				}
				if len(it) >= isolateBytes || b.bytes() >= source.ChunkBytes {
					cut()
				}
				n := copy(buf[w:], it)
				b.add(w, w+n, origin{line: line, offset: offset, listAPIVersion: listVersion}, &scan)
				w += n
				if len(it) >= isolateBytes {
					cut()
				}
			}
		case !inPlace(text[start:], line, offset, ""):
			// w stays put: the lines after this one are compacted over it.
		default:
			w = b.place(buf, w, pos, start, end, next, line, offset, &scan)
		}
		if big {
			cut()
		}
		pos = next
		line++
	}
	cut()
	rewritten.flush()
	return batches, rejects, repaired
}

// toValidUTF8 replaces invalid UTF-8 in an event by U+FFFD, as the apiserver's JSON encoder
// does with the strings it writes, so that DuckDB can read the rest of the event.
func toValidUTF8(event []byte) []byte {
	return bytes.ToValidUTF8(event, []byte("\uFFFD"))
}

// place adds the line buf[pos+start:end] as one row, in place when nothing was compacted yet;
// scan is the member scan of the line's event, or nil.
func (b *batch) place(buf []byte, w, pos, start, end, next int, line, offset int64, scan *memberScan) int {
	if start == 0 && w == pos {
		b.add(pos, next, origin{line: line, offset: offset}, scan)
		return next
	}
	n := copy(buf[w:], buf[pos+start:end])
	b.add(w, w+n, origin{line: line, offset: offset}, scan)
	return w + n
}

// jsonStart returns where the JSON object of a line starts: 0 for a plain NDJSON line, after
// the prefix for shipper-prefixed lines, the whole line (so DuckDB rejects it with the line
// as evidence) when there is text but no object, and -1 for a blank line.
func jsonStart(text []byte) int {
	i := skipSpace(text, 0)
	if i == len(text) {
		return -1
	}
	if text[i] == '{' {
		return 0
	}
	if j := bytes.IndexByte(text, '{'); j >= 0 {
		return j
	}
	return 0
}

// isEventList reports whether a line is a webhook-style batch {"kind":"EventList","items":[...]}:
// its kind says so (the scanner stops at the kind member, which the apiserver writes first), or,
// when it has no kind that can be read, it has items and an audit.k8s.io apiVersion. A list
// written again with its keys in order (jq -S, Python's sort_keys) has its kind after its items,
// which a long first line cuts off from the head a file is detected by.
func isEventList(obj []byte) bool {
	if kind, ok := topLevelString(obj, "kind"); ok {
		return kind == "EventList"
	}
	apiVersion, _ := topLevelString(obj, "apiVersion")
	items, ok := topLevelFrom(obj, "items")
	return ok && strings.HasPrefix(apiVersion, "audit.k8s.io/") && bytes.HasPrefix(items, []byte("["))
}

// eventListItems returns the raw items of an EventList line and the list's apiVersion, or
// ok=false if it is malformed.
func eventListItems(obj []byte) (items [][]byte, apiVersion string, ok bool) {
	var list struct {
		APIVersion string            `json:"apiVersion"`
		Items      []json.RawMessage `json:"items"`
	}
	if err := json.Unmarshal(obj, &list); err != nil {
		return nil, "", false
	}
	items = make([][]byte, len(list.Items))
	for i, it := range list.Items {
		items[i] = it
	}
	return items, list.APIVersion, true
}
