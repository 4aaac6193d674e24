package store

import (
	"context"
	"path/filepath"
	"slices"
	"testing"
)

// TestOpenAddsColumnsAnOlderVersionLacked: a database whose observations table predates the
// zone column gets it on a read-write open, keeping its rows (NULL there).
func TestOpenAddsColumnsAnOlderVersionLacked(t *testing.T) {
	ctx := context.Background()
	older := observationsTable
	older.Columns = []Column{observationsTable.Columns[0], observationsTable.Columns[1], observationsTable.Columns[3]}
	path := olderDatabase(t, NewSchema(older),
		"INSERT INTO ingest_files (load_id, source_file) VALUES (1, 'old.log')",
		"INSERT INTO observations (id, load_id) VALUES ('old', 1)")
	db, err := Open(ctx, path, testSchema, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.ExecContext(ctx, "INSERT INTO observations BY NAME SELECT 'new' AS id, 3 AS zone"); err != nil {
		t.Fatalf("loading into the upgraded table: %v", err)
	}
	var old string
	var oldZone *int64
	var zone int64
	if err := db.QueryRowContext(ctx, "SELECT a.id, a.zone, b.zone FROM observations a, observations b WHERE a.id = 'old' AND b.id = 'new'").Scan(&old, &oldZone, &zone); err != nil {
		t.Fatal(err)
	}
	if old != "old" || oldZone != nil || zone != 3 {
		t.Errorf("after the upgrade: %q zone %v, new row's zone %d", old, oldZone, zone)
	}
}

// TestUpgradeMarksOlderIngestErrorsAsErrors: ingest_errors rows written before the severity
// column existed were all rejected lines: the upgrade says so instead of leaving NULL.
func TestUpgradeMarksOlderIngestErrorsAsErrors(t *testing.T) {
	ctx := context.Background()
	db := upgraded(t,
		"ALTER TABLE ingest_errors DROP COLUMN severity",
		"INSERT INTO ingest_files (load_id, source_file) VALUES (1, 'old.log')",
		"INSERT INTO ingest_errors (source_file, line, reason, load_id) VALUES ('old.log', 3, 'truncated line', 1)")
	var severity *string
	if err := db.QueryRowContext(ctx, "SELECT severity FROM ingest_errors").Scan(&severity); err != nil {
		t.Fatal(err)
	}
	if severity == nil || *severity != "error" {
		t.Errorf("severity of an older row %v, want error", severity)
	}
	if want := []string{"ingest_errors.severity"}; !slices.Equal(db.Upgraded, want) {
		t.Errorf("upgraded %v, want %v", db.Upgraded, want)
	}
}

// TestOpenAddsATableAnOlderVersionLacked: a table of the schema that an older kubesift did not
// have is made on open and named in Upgraded.
func TestOpenAddsATableAnOlderVersionLacked(t *testing.T) {
	db := upgraded(t, "DROP TABLE observations")
	if want := []string{"observations"}; !slices.Equal(db.Upgraded, want) {
		t.Errorf("upgraded %v, want %v", db.Upgraded, want)
	}
	if _, err := db.Exec("INSERT INTO observations (id) VALUES ('new')"); err != nil {
		t.Errorf("the table made on open: %v", err)
	}
}

// TestOpenReadOnlyUpgradesAnOlderDatabase: the verbs that only read (analyze, query, report) open
// the database read-only; one an older kubesift wrote is upgraded first (its rules read the new
// columns), says what was added, and is open read-only after. A current database and a new one
// report nothing.
func TestOpenReadOnlyUpgradesAnOlderDatabase(t *testing.T) {
	ctx := context.Background()
	db := upgradedWith(t, Options{ReadOnly: true},
		"ALTER TABLE ingest_errors DROP COLUMN severity",
		"ALTER TABLE observations DROP COLUMN zone",
		"INSERT INTO ingest_files (load_id, source_file) VALUES (1, 'old.log')",
		"INSERT INTO ingest_errors (source_file, line, reason, load_id) VALUES ('old.log', 3, 'truncated line', 1)")
	if want := []string{"observations.zone", "ingest_errors.severity"}; !slices.Equal(db.Upgraded, want) {
		t.Errorf("upgraded %v, want %v", db.Upgraded, want)
	}
	var severity *string
	if err := db.QueryRowContext(ctx, "SELECT severity FROM ingest_errors").Scan(&severity); err != nil {
		t.Fatal(err)
	}
	if severity == nil || *severity != "error" {
		t.Errorf("severity of an older row %v, want error", severity)
	}
	if _, err := db.ExecContext(ctx, "INSERT INTO ingest_files (load_id, source_file) VALUES (2, 'new.log')"); err == nil {
		t.Error("the upgraded database is open for writing, want read-only")
	}

	path := filepath.Join(t.TempDir(), "k.duckdb")
	fresh, err := Open(ctx, path, testSchema, Options{})
	if err != nil {
		t.Fatal(err)
	}
	fresh.Close()
	for _, opt := range []Options{{}, {ReadOnly: true}} {
		again, err := Open(ctx, path, testSchema, opt)
		if err != nil {
			t.Fatal(err)
		}
		again.Close()
		if fresh.Upgraded != nil || again.Upgraded != nil {
			t.Errorf("read-only %v: a current database upgraded %v (when made: %v)", opt.ReadOnly, again.Upgraded, fresh.Upgraded)
		}
	}
}

// upgraded makes a database, turns it into an older version's with stmts, and opens it again
// (which upgrades it); it is closed when the test ends.
func upgraded(t *testing.T, stmts ...string) *DB {
	t.Helper()
	return upgradedWith(t, Options{}, stmts...)
}

// upgradedWith is upgraded, opening the older database again with opt.
func upgradedWith(t *testing.T, opt Options, stmts ...string) *DB {
	t.Helper()
	db, err := Open(context.Background(), olderDatabase(t, testSchema, stmts...), testSchema, opt)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

// olderDatabase makes a database of schema, runs stmts on it (turning it into an older version's,
// with its rows) and closes it; it returns its path.
func olderDatabase(t *testing.T, schema Schema, stmts ...string) string {
	t.Helper()
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "k.duckdb")
	db, err := Open(ctx, path, schema, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	for _, stmt := range stmts {
		if _, err := db.ExecContext(ctx, stmt); err != nil {
			t.Fatalf("%s: %v", stmt, err)
		}
	}
	return path
}

// TestOpenDropsObsoleteColumns: a column an older kubesift had and the schema lists as obsolete
// is dropped on open, a read-only one too (after which the database is current), and the rows
// stay.
func TestOpenDropsObsoleteColumns(t *testing.T) {
	ctx := context.Background()
	path := olderDatabase(t, testSchema, "ALTER TABLE observations ADD COLUMN legacy VARCHAR",
		"INSERT INTO ingest_files (load_id, source_file) VALUES (1, 'old.log')", "INSERT INTO observations (id, legacy, load_id) VALUES ('old', 'x', 1)")
	later := observationsTable
	later.Obsolete = []string{"legacy", "never-there"}
	schema := NewSchema(later)
	for i, want := range [][]string{{"observations.legacy"}, nil} {
		db, err := Open(ctx, path, schema, Options{ReadOnly: true})
		if err != nil {
			t.Fatal(err)
		}
		var columns, rows int64
		err = db.QueryRowContext(ctx, "SELECT (SELECT count(*) FROM duckdb_columns() WHERE table_name = 'observations'), (SELECT count(*) FROM observations WHERE id = 'old')").Scan(&columns, &rows)
		db.Close()
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(db.Dropped, want) || len(db.Upgraded) > 0 || columns != int64(len(later.Columns)) || rows != 1 {
			t.Errorf("open %d: dropped %v (want %v), upgraded %v, %d columns (want %d), %d rows (want 1)",
				i+1, db.Dropped, want, db.Upgraded, columns, len(later.Columns), rows)
		}
	}
}

// TestOpenComputesAColumnAnOlderVersionStored: a column an older kubesift stored and the schema
// now computes (Column.Generated) makes Open rewrite the table once: the rows keep their order and
// stored values, a column the older table lacked takes its Backfill, the obsolete column is gone,
// the computed column is computed for old and new rows alike, and a load need not supply it.
func TestOpenComputesAColumnAnOlderVersionStored(t *testing.T) {
	ctx := context.Background()
	older := observationsTable
	older.Columns = slices.Concat(observationsTable.Columns,
		[]Column{{Name: "zone_plus_one", Type: "BIGINT", Doc: "stored by the older version"}, {Name: "legacy", Type: "VARCHAR", Doc: "dropped later"}})
	path := olderDatabase(t, NewSchema(older),
		"INSERT INTO ingest_files (load_id, source_file) VALUES (1, 'old.log')",
		"INSERT INTO observations BY NAME SELECT 'old-' || i AS id, i AS zone, 999 AS zone_plus_one, 'x' AS legacy, 1 AS load_id FROM range(5000) r(i)")
	later := observationsTable
	later.Columns = slices.Concat(observationsTable.Columns, []Column{
		{Name: "zone_plus_one", Type: "BIGINT", Doc: "computed now", Generated: "zone + 1"},
		{Name: "zone_known", Type: "BOOLEAN", Doc: "added with a backfill", Backfill: "zone IS NOT NULL"},
	})
	later.Obsolete = []string{"legacy"}
	schema := NewSchema(later)
	for i, want := range [][]string{{"observations.zone_known", "observations.zone_plus_one (computed)"}, nil} {
		db, err := Open(ctx, path, schema, Options{ReadOnly: i > 0})
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(db.Upgraded, want) || !slices.Equal(db.Dropped, [][]string{{"observations.legacy"}, nil}[i]) {
			t.Errorf("open %d: upgraded %v (want %v), dropped %v", i+1, db.Upgraded, want, db.Dropped)
		}
		if i == 0 {
			if _, err := db.ExecContext(ctx, "INSERT INTO observations BY NAME SELECT 'new' AS id, 7 AS zone, true AS zone_known"); err != nil {
				t.Fatalf("loading into the rewritten table: %v", err)
			}
		}
		var rows, inOrder, computed, known, columns int64
		err = db.QueryRowContext(ctx, `SELECT count(*),
		        count(*) FILTER (WHERE id = CASE WHEN rn <= 5000 THEN 'old-' || (rn - 1) ELSE 'new' END),
		        count(*) FILTER (WHERE zone_plus_one = zone + 1), count(*) FILTER (WHERE zone_known),
		        (SELECT count(*) FROM duckdb_columns() WHERE table_name = 'observations')
		    FROM (SELECT *, row_number() OVER () AS rn FROM observations)`).Scan(&rows, &inOrder, &computed, &known, &columns)
		db.Close()
		if err != nil {
			t.Fatal(err)
		}
		if rows != 5001 || inOrder != 5001 || computed != 5001 || known != 5001 || columns != int64(len(later.Columns)) {
			t.Errorf("open %d: %d rows, %d in their order, %d computed, %d with the backfill, %d columns (want 5001 each, %d columns)",
				i+1, rows, inOrder, computed, known, columns, len(later.Columns))
		}
	}
}
