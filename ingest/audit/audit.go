package audit

import (
	"bytes"
	"context"
	"database/sql"
	"database/sql/driver"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"runtime"
	"slices"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/duckdb/duckdb-go/v2"
	auditv1 "k8s.io/apiserver/pkg/apis/audit/v1"

	"github.com/kubesift/kubesift/ingest/k8sobj"
	"github.com/kubesift/kubesift/internal/load"
	"github.com/kubesift/kubesift/store"
)

//go:embed load.sql
var loadSQL string

// loadQuery is load.sql with body_fields' expression in it.
var loadQuery = strings.Replace(loadSQL, "BODY_FIELDS", BodyFields("e.objectRef.resource", "e.objectRef.subresource",
	"e.objectRef.namespace", "e.verb", "e.stage", "e.responseObject", "e.requestObject"), 1)

// Loader loads kube-apiserver audit logs into audit_events, and the endpoint states in their
// Endpoints and EndpointSlice bodies into the object tables.
type Loader struct{}

// Kind names the evidence for --kind.
func (Loader) Kind() string { return "audit" }

// Detect reports whether one of the envelopes takes the file.
func (Loader) Detect(name string, head []byte) bool { return envelopeOf(name, head) != nil }

// Tables are audit_events, audit_services and the object tables the endpoint states go to.
func (Loader) Tables() []store.Table {
	return append([]store.Table{auditEventsTable, auditServicesTable}, k8sobj.Tables...)
}

// Resumable is true: a growing or rotated log is read on from where the last load stopped.
func (Loader) Resumable() bool { return true }

// Load streams one audit log into audit_events: its envelope decodes it into batches of raw
// events, DuckDB's json_transform turns them into rows in one INSERT, and then the rows that are
// not events, or that a load already has, are taken out again.
func (Loader) Load(ctx context.Context, f *load.File) error {
	env := envelopeOf(f.Src.Name, f.Src.Head)
	if env == nil {
		env = jsonLines{} // --kind audit on a file without the marks: each line not an event is rejected with its reason
	}
	earlierUndated, err := undatedBefore(ctx, f)
	if err != nil {
		return fmt.Errorf("loading %s: %w", f.Src.Name, err)
	}
	deriver := newEndpointDeriver(ctx, f)
	defer deriver.stop()
	out := &events{tail: -1, redact: !f.Settings.KeepSecrets}
	inserted, readErr, err := insert(ctx, f, env.name(), func(send func(*batch) bool) error {
		out.send = func(b *batch) bool {
			b.eachWrite(deriver.event)
			return send(b)
		}
		return env.decode(f, out)
	})
	if err != nil {
		return fmt.Errorf("loading %s: %w", f.Src.Name, err)
	}
	f.RowsIn()
	rejects, problems, err := settle(ctx, f, inserted, earlierUndated)
	if err != nil {
		return fmt.Errorf("loading %s: %w", f.Src.Name, err)
	}
	removed := len(rejects) > 0 || f.Duplicates > 0 // rows of the load's events deleted again
	rejects = holdBackTail(f, append(rejects, out.rejects...), out.tail)
	if problems {
		if err := takeWarnings(ctx, f); err != nil {
			return fmt.Errorf("loading %s: %w", f.Src.Name, err)
		}
	}
	if err := deriver.finish(ctx, f, removed); err != nil {
		return fmt.Errorf("loading %s: %w", f.Src.Name, err)
	}
	if out.repaired > 0 {
		f.AddNote(fmt.Sprintf("%s had invalid UTF-8, replaced by U+FFFD", load.Plural(out.repaired, "event")))
	}
	if readErr != nil {
		f.AddNote(fmt.Sprintf("reading stopped after line %d (byte %d of the decompressed stream): %v; the lines before it were loaded", f.Lines, f.ReadBytes, readErr))
		rejects = append(rejects, load.Rejected{Line: f.Lines + 1, Offset: -1, Reason: "unreadable: " + readErr.Error()})
	}
	return f.RecordRejects(ctx, rejects)
}

// insert runs decode on a goroutine of its own and hands the batches it sends to DuckDB, joined
// into records of a row group (coalescer), which inserts them into audit_events with one
// statement, each row with the name of the envelope. It returns the number of rows inserted and
// decode's read error.
func insert(ctx context.Context, f *load.File, envelope string, decode func(send func(*batch) bool) error) (inserted int64, readErr, err error) {
	prodCtx, cancel := context.WithCancel(ctx) // stops the producer when DuckDB stops reading
	defer cancel()
	// Unbuffered: DuckDB takes each record when it is ready for it. Every record waiting in a
	// buffer is a row group of events (14-28 MB) kept live on the Go heap, whose soft limit while
	// files load (cli's loadingGoMemoryLimit) the load's live heap nearly filled with two of them: the
	// garbage collector ran back to back (221 cycles in 13.5 s on 1 GB of the samples mix, 53
	// unbuffered), and the load took 14.4 s instead of 11.3 s (BENCHMARKS.md).
	ch := make(chan arrow.RecordBatch)
	produced := make(chan struct{})
	var joinErr error
	go func() {
		defer close(produced)
		defer close(ch)
		var records coalescer
		defer records.release()
		send := func(recs []arrow.RecordBatch, err error) bool {
			if err != nil {
				joinErr = err
				cancel()
			}
			for i, rec := range recs {
				select {
				case ch <- rec:
				case <-prodCtx.Done():
					releaseAll(recs[i:])
					return false
				}
			}
			return err == nil
		}
		readErr = decode(func(b *batch) bool { return send(records.add(b.record())) })
		if prodCtx.Err() == nil {
			send(records.flush(runtime.GOMAXPROCS(0)))
		}
	}()

	view := fmt.Sprintf("kubesift_audit_stream_%d", f.LoadID)
	var release func()
	err = f.Conn.Raw(func(dc any) error {
		a, err := duckdb.NewArrowFromConn(dc.(driver.Conn))
		if err != nil {
			return err
		}
		release, err = a.RegisterView(&batchStream{ch: ch}, view)
		return err
	})
	if err != nil {
		cancel()
		<-produced
		return 0, nil, fmt.Errorf("handing the events to DuckDB: %w", err)
	}
	res, err := f.Conn.ExecContext(ctx, strings.Replace(loadQuery, "STREAM_VIEW", view, 1),
		sql.Named("source_file", f.Src.Name), sql.Named("load_id", f.LoadID), sql.Named("redact", !f.Settings.KeepSecrets),
		sql.Named("cluster", f.Settings.Cluster), sql.Named("apiserver", f.Settings.APIServer), sql.Named("envelope", envelope),
		sql.Named("path_apiserver", pathAPIServer(f.Src.Name)))
	cancel()
	<-produced
	for rec := range ch { // batches DuckDB did not take after a failure
		rec.Release()
	}
	release()
	if _, dropErr := f.Conn.ExecContext(context.WithoutCancel(ctx), "DROP VIEW IF EXISTS "+view); dropErr != nil && err == nil {
		err = dropErr
	}
	if err == nil {
		err = joinErr
	}
	if err != nil {
		return 0, nil, err
	}
	inserted, err = res.RowsAffected()
	return inserted, readErr, err
}

// settle takes the rows that are not audit events out of audit_events, and the rows a load
// already has, and counts what is left. It returns the rejected lines, and whether any row of
// the load had a load_problem: without one there are neither rejected rows nor warnings
// (takeWarnings) to look for.
func settle(ctx context.Context, f *load.File, inserted int64, earlierUndated bool) (rejects []load.Rejected, problems bool, err error) {
	if problems, err = hasLoadProblems(ctx, f.Conn, f.LoadID); err != nil {
		return nil, false, err
	}
	if problems {
		if rejects, err = takeRejectedRows(ctx, f.Conn, f.LoadID); err != nil {
			return nil, false, err
		}
	}
	dups, undated, err := removeDuplicateRows(ctx, f.Conn, f.LoadID, earlierUndated)
	if err != nil {
		return nil, false, fmt.Errorf("removing duplicates: %w", err)
	}
	if undated && f.Shared != nil {
		f.Shared[undatedKey] = true
	}
	f.Rows = inserted - int64(len(rejects)) - dups
	f.Duplicates = dups
	return rejects, problems, nil
}

// hasLoadProblems reports whether a row of the load has a load_problem: it is not an event, or
// an event with a field of the wrong type. It reads that column alone, NULL in almost every row;
// the queries that take such rows out test audit_id too, a wide column DuckDB then reads in every
// row of the load. For a load of 10M events without such rows, settling and looking for warnings
// took 3.3 s instead of 6.0 s (BENCHMARKS.md).
func hasLoadProblems(ctx context.Context, conn *sql.Conn, loadID int64) (bool, error) {
	var problems bool
	err := conn.QueryRowContext(ctx, "SELECT EXISTS (SELECT 1 FROM audit_events WHERE load_id = $1 AND load_problem IS NOT NULL)", loadID).Scan(&problems)
	if err != nil {
		return false, fmt.Errorf("looking for rows that are not events: %w", err)
	}
	return problems, nil
}

// holdBackTail treats a rejected last line without a newline as not written yet when the file
// may still be growing (see source.MayGrow): it is left for the next load (which starts before
// it) instead of being reported. In a file that no longer changes it is rejected like any other.
func holdBackTail(f *load.File, rejects []load.Rejected, tail int64) []load.Rejected {
	if tail < 0 || f.EndOffset < 0 || !f.Src.MayGrow() {
		return rejects
	}
	i := slices.IndexFunc(rejects, func(rj load.Rejected) bool { return rj.Offset == tail })
	if i < 0 {
		return rejects
	}
	if tail < f.EndOffset { // else the load already stops before it (an unfinished container log line)
		f.EndOffset, f.EndLine = tail, rejects[i].Line-1
	}
	f.AddNote(fmt.Sprintf("line %d has no end yet (still being written?): it is left for the next load", rejects[i].Line))
	return slices.Delete(rejects, i, i+1)
}

// takeRejectedRows deletes the rows DuckDB could not read as audit events and returns them.
func takeRejectedRows(ctx context.Context, conn *sql.Conn, loadID int64) ([]load.Rejected, error) {
	rows, err := conn.QueryContext(ctx,
		`DELETE FROM audit_events WHERE load_id = $1 AND audit_id IS NULL AND load_problem IS NOT NULL RETURNING source_line, source_offset, load_problem`, loadID)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []load.Rejected
	for rows.Next() {
		var r load.Rejected
		var text string
		if err := rows.Scan(&r.Line, &r.Offset, &text); err != nil {
			return nil, err
		}
		r.Text = []byte(text)
		r.Reason = rejectReason(r.Text)
		out = append(out, r)
	}
	return out, rows.Err()
}

// takeWarnings records the events of this load that were kept with a field of the wrong type
// (read as NULL) as warnings in ingest_errors, and clears their bookkeeping column.
func takeWarnings(ctx context.Context, f *load.File) error {
	rows, err := f.Conn.QueryContext(ctx, `SELECT source_line, source_offset, load_problem, audit_id FROM audit_events
		WHERE load_id = $1 AND audit_id IS NOT NULL AND load_problem IS NOT NULL ORDER BY source_line`, f.LoadID)
	if err != nil {
		return err
	}
	var warnings []load.Rejected
	for rows.Next() {
		var w load.Rejected
		var fields, auditID string
		if err := rows.Scan(&w.Line, &w.Offset, &fields, &auditID); err != nil {
			rows.Close()
			return err
		}
		w.Reason = "unreadable field, loaded as NULL (the event is kept): " + fields
		w.Text = []byte("auditID " + auditID)
		warnings = append(warnings, w)
	}
	if err := errors.Join(rows.Err(), rows.Close()); err != nil || len(warnings) == 0 {
		return err
	}
	if _, err := f.Conn.ExecContext(ctx, "UPDATE audit_events SET load_problem = NULL WHERE load_id = $1 AND audit_id IS NOT NULL AND load_problem IS NOT NULL", f.LoadID); err != nil {
		return err
	}
	return f.RecordWarnings(ctx, warnings)
}

// undatedKey is what audit loads keep in load.File.Shared: whether audit_events holds a row
// without stage_at.
const undatedKey = "audit_events has undated rows"

// undatedBefore reports whether audit_events holds a row without stage_at before the load of f:
// from what an earlier load in the same transaction kept (settle), else from DuckDB.
func undatedBefore(ctx context.Context, f *load.File) (bool, error) {
	if undated, ok := f.Shared[undatedKey].(bool); ok {
		return undated, nil
	}
	undated, err := hasUndatedEvents(ctx, f.Conn)
	if err == nil && f.Shared != nil {
		f.Shared[undatedKey] = undated
	}
	return undated, err
}

// hasUndatedEvents reports whether audit_events holds a row without stage_at. Asked before a load
// inserts anything, DuckDB answers it from the table's statistics when there is none (where there
// are some, it reads until the first); once the load's transaction holds rows of its own, the same
// filter reads stage_at in every row group: 0.79 CPU-s of a one-event load into six days of 1M
// events (BENCHMARKS.md).
func hasUndatedEvents(ctx context.Context, conn *sql.Conn) (bool, error) {
	var undated bool
	if err := conn.QueryRowContext(ctx, "SELECT EXISTS (SELECT 1 FROM audit_events WHERE stage_at IS NULL)").Scan(&undated); err != nil {
		return false, fmt.Errorf("looking for events without stageTimestamp: %w", err)
	}
	return undated, nil
}

// removeDuplicateRows deletes rows of this load whose (audit_id, stage, cluster) is already present,
// from an earlier load or earlier in this one, and returns how many it deleted and whether the
// load has rows without stage_at. Earlier loads are searched within this load's stage_at range
// (and, when earlierUndated, among rows without stage_at); a row of this load without stage_at
// is looked for among all of them.
func removeDuplicateRows(ctx context.Context, conn *sql.Conn, loadID int64, earlierUndated bool) (int64, bool, error) {
	var lo, hi sql.NullTime
	var n, undated int64
	err := conn.QueryRowContext(ctx, `SELECT min(stage_at), max(stage_at), count(*), count(*) - count(stage_at)
		FROM audit_events WHERE load_id = $1`, loadID).Scan(&lo, &hi, &n, &undated)
	if err != nil || n == 0 {
		return 0, false, err
	}
	// Equal hashes: maybe duplicates inside this load. They are found as equal neighbours in the
	// sorted hashes, not by count(DISTINCT …), whose hash table of every event of the load made
	// the check of a load of 10M events take 5.3-5.4 s instead of 2.4-2.7 s (BENCHMARKS.md).
	var sameHash bool
	err = conn.QueryRowContext(ctx, `SELECT count(*) > 0 FROM (
			SELECT h = lag(h) OVER (ORDER BY h) AS same FROM (
				SELECT hash(audit_id, stage, cluster) AS h FROM audit_events WHERE load_id = $1))
		WHERE same`, loadID).Scan(&sameHash)
	if err != nil {
		return 0, false, err
	}
	var total int64
	deleted := func(query string, args ...any) error {
		res, err := conn.ExecContext(ctx, query, args...)
		if err != nil {
			return err
		}
		d, _ := res.RowsAffected()
		total += d
		return nil
	}
	if sameHash { // settle it exactly
		err := deleted(`DELETE FROM audit_events WHERE rowid IN (
			SELECT rid FROM (
				SELECT rowid AS rid, row_number() OVER (PARTITION BY audit_id, stage, cluster ORDER BY source_line, rowid) AS copy
				FROM audit_events WHERE load_id = $1)
			WHERE copy > 1)`, loadID)
		if err != nil {
			return 0, false, err
		}
	}
	// two scans, not one filter on "in the range OR NULL": the range's is pruned by the row groups'
	// statistics, where the OR read every row group of the table for every file loaded (a
	// 5-minute range of a 10M-event database: 1.12 s against 0.05 s). The undated rows' scan is
	// not (within the load's transaction it reads stage_at in every row group), so it runs only
	// where hasUndatedEvents found such rows before the load.
	undatedEarlier := ""
	if earlierUndated {
		undatedEarlier = `
			UNION ALL
			SELECT audit_id, stage, cluster FROM audit_events WHERE load_id <> $1 AND stage_at IS NULL`
	}
	err = deleted(`DELETE FROM audit_events WHERE rowid IN (
		SELECT n.rowid FROM audit_events n SEMI JOIN (
			SELECT audit_id, stage, cluster FROM audit_events WHERE load_id <> $1 AND stage_at BETWEEN $2 AND $3`+undatedEarlier+`) o
		ON n.audit_id = o.audit_id AND n.stage = o.stage AND n.cluster IS NOT DISTINCT FROM o.cluster
		WHERE n.load_id = $1)`, loadID, lo, hi)
	if err != nil || undated == 0 {
		return total, undated > 0, err
	}
	err = deleted(`DELETE FROM audit_events WHERE rowid IN (
		SELECT n.rowid FROM audit_events n SEMI JOIN (SELECT audit_id, stage, cluster FROM audit_events WHERE load_id <> $1) o
		ON n.audit_id = o.audit_id AND n.stage = o.stage AND n.cluster IS NOT DISTINCT FROM o.cluster
		WHERE n.load_id = $1 AND n.stage_at IS NULL)`, loadID)
	return total, true, err
}

// rejectReason explains why a line is not an audit event, in the words of Go's decoder.
func rejectReason(text []byte) string {
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
		case errors.As(err, &syn) && syn.Error() == "unexpected end of JSON input":
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
