package audit

import (
	"bytes"
	"cmp"
	"fmt"
	"slices"

	"github.com/kubesift/kubesift/internal/load"
	"github.com/kubesift/kubesift/internal/source"
)

// criJoiner rejoins the lines of a container log (CRI format: "<time> <stream> <tag> <text>")
// that the container runtime split into partials: lines tagged P are the first pieces of one
// line, the next line of the same stream tagged F its last. The runtime splits lines longer
// than its buffer (16 KiB by default), so every big audit event collected from a container log
// arrives in pieces. The streams (stdout, stderr) are rejoined each on its own, as their lines
// interleave.
type criJoiner struct {
	maxLine int
	runs    map[string]*criRun // open runs of partials, by stream
}

// criRun is the pieces of one line read so far.
type criRun struct {
	line, offset int64  // where the first piece is
	text         []byte // the pieces, nil once they are longer than maxLine
	length       int64
	head         []byte // the first bytes of the first piece, for the rejection
}

// criPartials mark a line that may be a partial; a chunk without such a line is passed on as
// it is. The mark follows the line's time, within its first criPrefixBytes bytes.
var criPartials = [][]byte{[]byte(" stdout P "), []byte(" stderr P "), []byte(" stdout P:"), []byte(" stderr P:")}

// criPrefixBytes bounds where a container-log line's stream and tag can end: an RFC 3339 time
// with nanoseconds and a zone offset is 35 bytes.
const criPrefixBytes = 64

// mayHoldPartials reports whether a line of chunk data may be a container-log partial: a line
// that starts with a JSON object (an audit event as the apiserver writes it) cannot be, so only
// the heads of the other lines are searched for the marks.
func mayHoldPartials(data []byte) bool {
	for pos := 0; pos < len(data); {
		end := len(data)
		if i := bytes.IndexByte(data[pos:], '\n'); i >= 0 {
			end = pos + i
		}
		if data[pos] != '{' {
			head := data[pos:min(end, pos+criPrefixBytes)]
			if slices.ContainsFunc(criPartials, func(p []byte) bool { return bytes.Contains(head, p) }) {
				return true
			}
		}
		pos = end + 1
	}
	return false
}

// criLine splits a container-log line into its stream, whether it is a partial, and its text;
// ok is false for any other line.
func criLine(line []byte) (stream string, partial bool, text []byte, ok bool) {
	fields := bytes.SplitN(line, []byte{' '}, 4)
	if len(fields) != 4 || len(fields[0]) == 0 || bytes.IndexByte(fields[0], '{') >= 0 {
		return "", false, nil, false
	}
	stream = string(fields[1])
	if stream != "stdout" && stream != "stderr" {
		return "", false, nil, false
	}
	tag, _, _ := bytes.Cut(fields[2], []byte{':'})
	switch string(tag) {
	case "P":
		return stream, true, fields[3], true
	case "F":
		return stream, false, fields[3], true
	}
	return "", false, nil, false
}

// split cuts a chunk into chunks where every run of partials is one line: the lines between
// runs stay in place (slices of c), a rejoined line is a chunk of its own at its first piece's
// line and offset, and it comes where its last piece was. Pieces of a run that goes on past
// the chunk are kept for the next one. A rejoined line longer than maxLine is rejected instead.
func (j *criJoiner) split(c *source.Chunk) (parts []*source.Chunk, rejects []load.Rejected) {
	if len(j.runs) == 0 && !mayHoldPartials(c.Data) {
		return []*source.Chunk{c}, nil
	}
	buf := c.Data
	segStart, segLine := 0, c.FirstLine
	flush := func(end int) {
		if end > segStart {
			parts = append(parts, &source.Chunk{Data: buf[segStart:end], Base: c.Base + int64(segStart), FirstLine: segLine})
		}
	}
	line := c.FirstLine
	for pos := 0; pos < len(buf); line++ {
		end, next := len(buf), len(buf)
		if i := bytes.IndexByte(buf[pos:], '\n'); i >= 0 {
			end, next = pos+i, pos+i+1
		}
		text := bytes.TrimSuffix(buf[pos:end], []byte{'\r'})
		stream, partial, piece, ok := criLine(text)
		run := j.runs[stream]
		if ok && run != nil && startsAuditEvent(piece) {
			// A piece that starts an audit event cannot continue a line: the runtime restarted,
			// or the log was cut, after the run's last piece. That line ends unfinished here,
			// and this piece starts a line of its own.
			delete(j.runs, stream)
			rejects = append(rejects, load.Rejected{Line: run.line, Offset: run.offset, Reason: run.unfinishedReason(), Text: run.head})
			run = nil
		}
		if ok && (partial || run != nil) {
			flush(pos)
			segStart, segLine = next, line+1
			if run == nil {
				run = &criRun{line: line, offset: c.Base + int64(pos), head: bytes.Clone(piece[:min(len(piece), 200)])}
				if j.runs == nil {
					j.runs = map[string]*criRun{}
				}
				j.runs[stream] = run
			}
			run.length += int64(len(piece))
			if run.length > int64(j.maxLine) {
				run.text = nil
			} else {
				run.text = append(run.text, piece...)
			}
			if !partial {
				delete(j.runs, stream)
				if run.length > int64(j.maxLine) {
					rejects = append(rejects, run.reject(j.maxLine))
				} else {
					parts = append(parts, &source.Chunk{Data: append(run.text, '\n'), Base: run.offset, FirstLine: run.line})
				}
			}
		}
		pos = next
	}
	flush(len(buf))
	return parts, rejects
}

// auditEventStart is how the apiserver writes the start of an audit event to its log (on stdout
// for a container log). A body inside an event never starts so: its apiVersion is not
// audit.k8s.io's.
var auditEventStart = []byte(`{"kind":"Event","apiVersion":"audit.k8s.io/`)

func startsAuditEvent(piece []byte) bool { return bytes.HasPrefix(piece, auditEventStart) }

func (r *criRun) reject(maxLine int) load.Rejected {
	o := source.Oversized{Line: r.line, Offset: r.offset, Length: r.length, Head: r.head}
	return load.Rejected{Line: r.line, Offset: r.offset, Reason: "container log line rejoined from partials: " + o.Reason(maxLine), Text: r.head}
}

// unfinished returns the runs of partials that the input ended in, first line first: their
// last piece (F) never came.
func (j *criJoiner) unfinished() []*criRun {
	var runs []*criRun
	for _, r := range j.runs {
		runs = append(runs, r)
	}
	slices.SortFunc(runs, func(a, b *criRun) int { return cmp.Compare(a.line, b.line) })
	return runs
}

// unfinishedReason is why an unfinished run of partials is rejected.
func (r *criRun) unfinishedReason() string {
	return fmt.Sprintf("container log line split into partials (P) from line %d on ends without its final piece (F)", r.line)
}
