package store

import (
	"context"
	"database/sql"
	"fmt"
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

// PreviousRunStart returns when the last recorded run started (nil when there was none).
func (db *DB) PreviousRunStart(ctx context.Context) (*time.Time, error) {
	t, err := db.runTime(ctx, "SELECT max(started_at) FROM runs")
	if err != nil {
		return nil, fmt.Errorf("reading the previous run from %s: %w", db.Path, err)
	}
	return t, nil
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
