package ingest

import (
	"bytes"
	"context"
	"database/sql"
	"database/sql/driver"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"unicode/utf8"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/duckdb/duckdb-go/v2"
	auditv1 "k8s.io/apiserver/pkg/apis/audit/v1"
)

//go:embed audit_load.sql
var auditLoadSQL string

// rejected is one input line that did not become a row.
type rejected struct {
	line   int64
	offset int64
	reason string
	text   []byte
}

// loadAudit streams one audit log into audit_events inside the caller's transaction on conn.
func (in *Ingester) loadAudit(ctx context.Context, conn *sql.Conn, src *source, st *FileResult) error {
	prodCtx, cancel := context.WithCancel(ctx) // stops the producer when DuckDB stops reading
	defer cancel()

	ch := make(chan arrow.RecordBatch, 2)
	deriver := newEndpointDeriver(ctx, conn, src.Name, st.LoadID, !in.opt.NoAuditEndpoints, in.db.TempDir())
	defer deriver.stop()
	var goRejects []rejected
	var readErr error
	tail := int64(-1)
	produced := make(chan struct{})
	go func() {
		defer close(produced)
		defer close(ch)
		send := func(b *auditBatch) bool {
			b.each(deriver.event)
			select {
			case ch <- b.record():
				return true
			case <-prodCtx.Done():
				return false
			}
		}
		if isDocumentStream(src.Head) {
			// Pretty-printed documents are read whole each time: no resuming inside a document.
			st.endOffset, st.endLine = -1, -1
			goRejects, readErr = produceDocuments(src, send, st)
			return
		}
		lr := newLineReader(src, in.opt.MaxLineBytes, st.startOffset, st.startLine+1)
		for {
			c, big := lr.next()
			if big != nil {
				goRejects = append(goRejects, rejected{line: big.line, offset: big.offset, reason: big.reason(lr.maxLine), text: big.head})
				continue
			}
			if c == nil {
				break
			}
			batches, tooLong := chunkToBatches(c, lr.maxLine)
			goRejects = append(goRejects, tooLong...)
			for _, b := range batches {
				if !send(b) {
					return
				}
			}
		}
		st.Lines = lr.nextLine - 1 - st.startLine
		st.readBytes = lr.base - st.startOffset
		st.endOffset, st.endLine = lr.base, lr.nextLine-1
		tail = lr.tail
		readErr = lr.readErr
	}()

	view := fmt.Sprintf("kubesift_audit_stream_%d", st.LoadID)
	stream := &batchStream{ch: ch}
	var release func()
	err := conn.Raw(func(dc any) error {
		a, err := duckdb.NewArrowFromConn(dc.(driver.Conn))
		if err != nil {
			return err
		}
		release, err = a.RegisterView(stream, view)
		return err
	})
	if err != nil {
		cancel()
		<-produced
		return fmt.Errorf("handing %s to DuckDB: %w", src.Name, err)
	}
	res, err := conn.ExecContext(ctx, strings.Replace(auditLoadSQL, "STREAM_VIEW", view, 1),
		sql.Named("source_file", src.Name), sql.Named("load_id", st.LoadID), sql.Named("redact", !in.opt.KeepSecretBodies))
	cancel()
	<-produced
	for rec := range ch { // batches DuckDB did not take after a failure
		rec.Release()
	}
	release()
	if _, dropErr := conn.ExecContext(context.WithoutCancel(ctx), "DROP VIEW IF EXISTS "+view); dropErr != nil && err == nil {
		err = dropErr
	}
	if err != nil {
		return fmt.Errorf("loading %s: %w", src.Name, err)
	}
	inserted, err := res.RowsAffected()
	if err != nil {
		return err
	}

	rejects, err := takeRejectedRows(ctx, conn, st.LoadID)
	if err != nil {
		return fmt.Errorf("loading %s: %w", src.Name, err)
	}
	dups, err := removeDuplicateAuditRows(ctx, conn, st.LoadID)
	if err != nil {
		return fmt.Errorf("removing duplicates of %s: %w", src.Name, err)
	}
	st.Rows = inserted - int64(len(rejects)) - dups
	st.Duplicates = dups
	rejects = in.holdBackTail(st, rejects, tail)
	unusable, err := deriver.finish(ctx, conn, st.LoadID)
	if err != nil {
		return fmt.Errorf("%s: %w", src.Name, err)
	}
	if len(unusable) > 0 {
		// The events were loaded; only the endpoint states in their bodies could not be read.
		if err := in.writeErrors(ctx, conn, st, KindEndpoints, unusable); err != nil {
			return err
		}
		st.Note = fmt.Sprintf("%s with Endpoints bodies that gave no endpoint states (see ingest_errors, kind endpoints)", plural(len(unusable), "event"))
	}
	rejects = append(rejects, goRejects...)
	if readErr != nil {
		st.Note = joinNotes(st.Note, fmt.Sprintf("reading stopped after line %d (byte %d of the decompressed stream): %v; the lines before it were loaded", st.Lines, st.readBytes, readErr))
		rejects = append(rejects, rejected{line: st.Lines + 1, offset: -1, reason: "unreadable: " + readErr.Error()})
	}
	return in.recordRejects(ctx, conn, st, "audit", rejects)
}

// holdBackTail treats a rejected last line without a newline as not written yet: it is left for
// the next load (which starts before it) instead of being reported.
func (in *Ingester) holdBackTail(st *FileResult, rejects []rejected, tail int64) []rejected {
	if tail < 0 || st.endOffset < 0 {
		return rejects
	}
	for i, rj := range rejects {
		if rj.offset == tail {
			st.endOffset, st.endLine = tail, rj.line-1
			st.Note = joinNotes(st.Note, fmt.Sprintf("line %d has no end yet (still being written?): it is left for the next load", rj.line))
			return append(rejects[:i], rejects[i+1:]...)
		}
	}
	return rejects
}

// takeRejectedRows deletes the rows DuckDB could not read as audit events and returns them.
func takeRejectedRows(ctx context.Context, conn *sql.Conn, loadID int64) ([]rejected, error) {
	rows, err := conn.QueryContext(ctx,
		`DELETE FROM audit_events WHERE load_id = $1 AND load_reject IS NOT NULL RETURNING source_line, source_offset, load_reject`, loadID)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []rejected
	for rows.Next() {
		var r rejected
		var text string
		if err := rows.Scan(&r.line, &r.offset, &text); err != nil {
			return nil, err
		}
		r.text = []byte(text)
		r.reason = auditRejectReason(r.text)
		out = append(out, r)
	}
	return out, rows.Err()
}

// removeDuplicateAuditRows deletes rows of this load whose (audit_id, stage) is already present,
// from an earlier load or earlier in this one, and returns how many it deleted.
func removeDuplicateAuditRows(ctx context.Context, conn *sql.Conn, loadID int64) (int64, error) {
	var lo, hi sql.NullTime
	var n, distinct int64
	err := conn.QueryRowContext(ctx, `SELECT min(stage_at), max(stage_at), count(*), count(DISTINCT hash(audit_id, stage))
		FROM audit_events WHERE load_id = $1`, loadID).Scan(&lo, &hi, &n, &distinct)
	if err != nil || n == 0 {
		return 0, err
	}
	var total int64
	if distinct < n { // equal hashes: maybe duplicates inside this load; settle it exactly
		res, err := conn.ExecContext(ctx, `DELETE FROM audit_events WHERE rowid IN (
			SELECT rid FROM (
				SELECT rowid AS rid, row_number() OVER (PARTITION BY audit_id, stage ORDER BY source_line, rowid) AS copy
				FROM audit_events WHERE load_id = $1)
			WHERE copy > 1)`, loadID)
		if err != nil {
			return 0, err
		}
		d, _ := res.RowsAffected()
		total += d
	}
	res, err := conn.ExecContext(ctx, `DELETE FROM audit_events WHERE rowid IN (
		SELECT n.rowid FROM audit_events n SEMI JOIN (
			SELECT audit_id, stage FROM audit_events
			WHERE load_id <> $1 AND (stage_at BETWEEN $2 AND $3 OR stage_at IS NULL)) o
		ON n.audit_id = o.audit_id AND n.stage = o.stage
		WHERE n.load_id = $1)`, loadID, lo, hi)
	if err != nil {
		return 0, err
	}
	d, _ := res.RowsAffected()
	return total + d, nil
}

// auditRejectReason explains why a line is not an audit event, in the words of Go's decoder.
func auditRejectReason(text []byte) string {
	t := bytes.TrimSpace(text)
	if len(t) == 0 || t[0] != '{' {
		return "no JSON object on the line"
	}
	var probe struct {
		Kind       string `json:"kind"`
		APIVersion string `json:"apiVersion"`
		AuditID    string `json:"auditID"`
		Stage      string `json:"stage"`
	}
	if err := json.Unmarshal(t, &probe); err != nil {
		var syn *json.SyntaxError
		switch {
		case errors.As(err, &syn) && syn.Offset >= int64(len(t)):
			return fmt.Sprintf("unexpected end of JSON after %d bytes (truncated line)", len(t))
		case errors.As(err, &syn):
			return fmt.Sprintf("invalid JSON at byte %d: %v", syn.Offset, err)
		}
		return "invalid JSON: " + err.Error()
	}
	switch {
	case probe.Kind != "Event" || !strings.HasPrefix(probe.APIVersion, "audit.k8s.io/"):
		return fmt.Sprintf("not an audit event (kind %q, apiVersion %q)", probe.Kind, probe.APIVersion)
	case probe.AuditID == "":
		return "audit event without auditID"
	case probe.Stage == "":
		return "audit event without stage"
	}
	var ev auditv1.Event
	if err := json.Unmarshal(t, &ev); err != nil {
		return "malformed audit event: " + err.Error()
	}
	return "rejected by the JSON decoder"
}

// excerpt returns at most 200 bytes of text, cut at a rune boundary.
func excerpt(text []byte) string {
	const limit = 200
	if len(text) <= limit {
		return strings.ToValidUTF8(string(text), "?")
	}
	cut := limit
	for cut > 0 && !utf8.RuneStart(text[cut]) {
		cut--
	}
	return strings.ToValidUTF8(string(text[:cut]), "?") + "…"
}

// isDocumentStream reports whether the input is pretty-printed JSON documents (an EventList
// saved by hand or by a webhook receiver) rather than one event per line.
func isDocumentStream(head []byte) bool {
	first, _, _ := bytes.Cut(head, []byte{'\n'})
	first = bytes.TrimSpace(first)
	return bytes.Equal(first, []byte("{")) || bytes.HasPrefix(first, []byte("["))
}

// produceDocuments decodes a stream of JSON documents (events, EventLists or arrays of them)
// and sends their events as compact lines. Decoding stops at the first malformed document,
// which is reported with its line; the events before it are kept.
func produceDocuments(src io.Reader, send func(*auditBatch) bool, st *FileResult) ([]rejected, error) {
	nl := &newlineIndex{r: src}
	dec := json.NewDecoder(nl)
	b := newAuditBatch(nil)
	flush := func() bool {
		if b.rows() == 0 {
			return true
		}
		ok := send(b)
		b = newAuditBatch(nil)
		return ok
	}
	add := func(item json.RawMessage, offset int64) bool {
		if len(item) >= isolateBytes && !flush() {
			return false
		}
		var buf bytes.Buffer
		if json.Compact(&buf, item) != nil {
			buf.Reset()
			buf.Write(item)
		}
		start := len(b.values)
		b.values = append(b.values, buf.Bytes()...)
		b.add(start, len(b.values), nl.lineAt(offset), offset)
		return len(item) < isolateBytes || flush()
	}
	var rejects []rejected
	for {
		offset := dec.InputOffset()
		var doc json.RawMessage
		err := dec.Decode(&doc)
		if err == io.EOF {
			break
		}
		if err != nil {
			at := dec.InputOffset()
			rejects = append(rejects, rejected{line: nl.lineAt(at), offset: at, reason: "malformed JSON document: " + err.Error() + "; the rest of the file was not read"})
			break
		}
		offset += int64(len(doc) - len(bytes.TrimLeft(doc, " \t\r\n")))
		for _, item := range documentItems(doc) {
			if !add(item, offset) {
				return rejects, nil
			}
		}
		if len(b.values) >= defaultChunkBytes && !flush() {
			return rejects, nil
		}
	}
	flush()
	st.Lines, st.readBytes = nl.lines(), nl.pos
	return rejects, nl.err
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
