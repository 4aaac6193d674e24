package main

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/go-json-experiment/json/jsontext"
	"github.com/google/uuid"
	"github.com/klauspost/compress/gzip"
)

// recording is one audit log (JSON lines) held in memory, with where each event's auditID and
// times are, so that copies of it can be written with fresh IDs and shifted times.
type recording struct {
	name   string
	data   []byte
	events []eventFields
	// first is the earliest requestReceivedTimestamp, last the latest stageTimestamp.
	first, last time.Time
}

// span is a value's byte range in recording.data, quotes included; end 0 when absent.
type span struct{ start, end int }

// eventFields are the positions of one event's line and of its top-level fields that a copy
// rewrites.
type eventFields struct {
	line                     span
	auditID, received, stage span
}

// period is how far each copy of r is shifted from the previous one: its events' time span,
// rounded up to the next whole second, so that copies follow each other without overlapping.
func (r *recording) period() time.Duration {
	return r.last.Sub(r.first).Truncate(time.Second) + time.Second
}

// readRecording reads an audit log of JSON lines (gzipped when its name ends in .gz).
func readRecording(path string) (*recording, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var r io.Reader = f
	if strings.HasSuffix(path, ".gz") {
		zr, err := gzip.NewReader(f)
		if err != nil {
			return nil, fmt.Errorf("reading %s: %w", path, err)
		}
		defer zr.Close()
		r = zr
	}
	data, err := io.ReadAll(r)
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", path, err)
	}
	rec := &recording{name: path, data: data}
	for start, n := 0, 1; start < len(data); n++ {
		end := len(data)
		if i := bytes.IndexByte(data[start:], '\n'); i >= 0 {
			end = start + i + 1
		}
		if len(bytes.TrimSpace(data[start:end])) > 0 {
			ev, err := rec.scan(start, end)
			if err != nil {
				return nil, fmt.Errorf("reading %s line %d: %w", path, n, err)
			}
			rec.events = append(rec.events, ev)
		}
		start = end
	}
	if len(rec.events) == 0 {
		return nil, fmt.Errorf("reading %s: no audit events", path)
	}
	return rec, nil
}

// scan finds the top-level auditID, requestReceivedTimestamp and stageTimestamp of the event on
// data[start:end] and widens the recording's time span by its times.
func (r *recording) scan(start, end int) (eventFields, error) {
	ev := eventFields{line: span{start, end}}
	dec := jsontext.NewDecoder(bytes.NewReader(r.data[start:end]))
	if tok, err := dec.ReadToken(); err != nil || tok.Kind() != '{' {
		return ev, fmt.Errorf("not a JSON object: %v", err)
	}
	for dec.PeekKind() != '}' {
		tok, err := dec.ReadToken()
		if err != nil {
			return ev, err
		}
		key := tok.String() // before the next read, which reuses the token's buffer
		value, err := dec.ReadValue()
		if err != nil {
			return ev, err
		}
		at := span{start + int(dec.InputOffset()) - len(value), start + int(dec.InputOffset())}
		switch key {
		case "auditID":
			ev.auditID = at
		case "requestReceivedTimestamp":
			ev.received = at
		case "stageTimestamp":
			ev.stage = at
		}
	}
	if ev.auditID.end == 0 || ev.received.end == 0 || ev.stage.end == 0 {
		return ev, fmt.Errorf("event without auditID, requestReceivedTimestamp or stageTimestamp")
	}
	received, err := r.time(ev.received)
	if err != nil {
		return ev, err
	}
	stage, err := r.time(ev.stage)
	if err != nil {
		return ev, err
	}
	if r.first.IsZero() || received.Before(r.first) {
		r.first = received
	}
	if stage.After(r.last) {
		r.last = stage
	}
	return ev, nil
}

func (r *recording) time(s span) (time.Time, error) {
	return time.Parse(time.RFC3339Nano, string(r.data[s.start+1:s.end-1]))
}

// appendCopy appends copy number n of the recording's events to dst: every auditID replaced by
// a fresh one (a name-based UUID of n and the original ID, so that the stages of one request
// keep sharing theirs) and both times shifted by shift, written with as many fractional digits
// as the original. Everything else is copied byte for byte.
func (r *recording) appendCopy(dst []byte, ev eventFields, n int, shift time.Duration) ([]byte, error) {
	dst = append(dst, r.data[ev.line.start:ev.auditID.start]...)
	id := uuid.NewSHA1(uuid.NameSpaceOID, fmt.Appendf(nil, "%d/%s", n, r.data[ev.auditID.start+1:ev.auditID.end-1]))
	dst = append(append(append(dst, '"'), id.String()...), '"')
	dst = append(dst, r.data[ev.auditID.end:ev.received.start]...)
	dst, err := r.appendShifted(dst, ev.received, shift)
	if err != nil {
		return nil, err
	}
	dst = append(dst, r.data[ev.received.end:ev.stage.start]...)
	if dst, err = r.appendShifted(dst, ev.stage, shift); err != nil {
		return nil, err
	}
	dst = append(dst, r.data[ev.stage.end:ev.line.end]...)
	if dst[len(dst)-1] != '\n' {
		dst = append(dst, '\n')
	}
	return dst, nil
}

func (r *recording) appendShifted(dst []byte, s span, shift time.Duration) ([]byte, error) {
	t, err := r.time(s)
	if err != nil {
		return nil, err
	}
	layout := "2006-01-02T15:04:05Z07:00"
	if v := string(r.data[s.start+1 : s.end-1]); strings.Contains(v, ".") {
		digits := len(v) - strings.IndexByte(v, '.') - 1 - len("Z")
		layout = "2006-01-02T15:04:05." + strings.Repeat("0", digits) + "Z07:00"
	}
	return append(t.Add(shift).UTC().AppendFormat(append(dst, '"'), layout), '"'), nil
}

// readSamples reads the audit logs of the recordings under dir (dir/*/audit.log and
// dir/*/audit.log.gz).
func readSamples(dir string) ([]*recording, error) {
	var paths []string
	for _, pattern := range []string{"*/audit.log", "*/audit.log.gz"} {
		m, err := filepath.Glob(filepath.Join(dir, pattern))
		if err != nil {
			return nil, err
		}
		paths = append(paths, m...)
	}
	if len(paths) == 0 {
		return nil, fmt.Errorf("no audit logs under %s (want %s/*/audit.log or audit.log.gz)", dir, dir)
	}
	recs := make([]*recording, len(paths))
	for i, p := range paths {
		var err error
		if recs[i], err = readRecording(p); err != nil {
			return nil, err
		}
	}
	return recs, nil
}

// replicate writes rounds of copies of the recordings to w until size bytes (the last line may
// pass it): round n
// holds copy n of each recording in turn, shifted by n times the recording's period, so each
// recording's copies follow each other in time. It returns the events and bytes written.
func replicate(w io.Writer, recs []*recording, size int64) (events, written int64, err error) {
	var line []byte
	for n := 0; written < size; n++ {
		for _, r := range recs {
			for _, ev := range r.events {
				if line, err = r.appendCopy(line[:0], ev, n, time.Duration(n)*r.period()); err != nil {
					return events, written, err
				}
				if _, err := w.Write(line); err != nil {
					return events, written, err
				}
				events++
				written += int64(len(line))
				if written >= size {
					return events, written, nil
				}
			}
		}
	}
	return events, written, nil
}

// writeCopy writes copy n of the recording to w, shifted by shift; it returns the events and
// bytes written.
func writeCopy(w io.Writer, r *recording, n int, shift time.Duration) (events, written int64, err error) {
	var line []byte
	for _, ev := range r.events {
		if line, err = r.appendCopy(line[:0], ev, n, shift); err != nil {
			return events, written, err
		}
		if _, err := w.Write(line); err != nil {
			return events, written, err
		}
		events++
		written += int64(len(line))
	}
	return events, written, nil
}
