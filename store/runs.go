package store

import (
	"context"
	"database/sql"
	"fmt"
	"strings"
	"time"
)

// Run is one row of the runs table: a kubesift run with a database file.
type Run struct {
	Started                 time.Time
	Since, Until            *time.Time // the analyzed window; nil is unbounded
	Files                   int
	Rows, Rejected          int64
	Critical, Warning, Info int // findings by severity
	ExitCode                int
}

// RecordRun adds r to the runs table; it finished now.
func (db *DB) RecordRun(ctx context.Context, r Run) error {
	_, err := db.ExecContext(ctx, `INSERT INTO runs VALUES ($1, now(), $2, $3, $4, $5, $6, $7, $8, $9, $10)`,
		r.Started, r.Since, r.Until, r.Files, r.Rows, r.Rejected, r.Critical, r.Warning, r.Info, r.ExitCode)
	if err != nil {
		return fmt.Errorf("recording the run in %s: %w", db.Path, err)
	}
	return nil
}

// EvidenceSpan returns the earliest and the latest time of the evidence rows added by the loads
// that committed after after (ingest_files.finished_at; nil after: every load), over the time
// column of every evidence table: the window of what arrived since then, whatever time it tells
// of. first and last are nil when those loads added no rows with a time.
func (db *DB) EvidenceSpan(ctx context.Context, after *time.Time) (first, last *time.Time, err error) {
	var parts []string
	for _, t := range db.Schema {
		if t.Evidence == "" || t.TimeColumn == "" {
			continue
		}
		parts = append(parts, fmt.Sprintf(`SELECT min("%[2]s") AS lo, max("%[2]s") AS hi FROM %[1]s
			WHERE load_id IN (SELECT load_id FROM ingest_files WHERE CAST($1 AS TIMESTAMPTZ) IS NULL OR finished_at > $1)`, t.Name, t.TimeColumn))
	}
	var lo, hi sql.NullTime
	q := "SELECT min(lo), max(hi) FROM (" + strings.Join(parts, " UNION ALL ") + ")"
	if err := db.QueryRowContext(ctx, q, after).Scan(&lo, &hi); err != nil {
		return nil, nil, fmt.Errorf("reading what was loaded since %v from %s: %w", after, db.Path, err)
	}
	if !lo.Valid {
		return nil, nil, nil
	}
	l, h := lo.Time.UTC(), hi.Time.UTC()
	return &l, &h, nil
}

// LastRunFinishedWithout returns when the last recorded run whose exit code was not exitCode
// finished (nil when there was none).
func (db *DB) LastRunFinishedWithout(ctx context.Context, exitCode int) (*time.Time, error) {
	t, err := db.runTime(ctx, "SELECT max(finished_at) FROM runs WHERE exit_code <> $1", exitCode)
	if err != nil {
		return nil, fmt.Errorf("reading the last run from %s: %w", db.Path, err)
	}
	return t, nil
}

func (db *DB) runTime(ctx context.Context, query string, args ...any) (*time.Time, error) {
	var t sql.NullTime
	if err := db.QueryRowContext(ctx, query, args...).Scan(&t); err != nil {
		return nil, err
	}
	if !t.Valid {
		return nil, nil
	}
	u := t.Time.UTC()
	return &u, nil
}
