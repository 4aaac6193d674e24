package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"regexp"
	"slices"
	"strings"
	"sync"

	"database/sql/driver"

	"github.com/duckdb/duckdb-go/v2"
	"github.com/dustin/go-humanize"
)

// InMemory is the path that opens a temporary, in-memory database.
const InMemory = ":memory:"

// DefaultMemoryLimit bounds DuckDB's buffer pool. With the row group settings below, loading a
// 2 GB audit log stays under 1 GiB of resident memory; DuckDB slows down sharply when a bulk
// load gets much less than this (1.5x slower at 750MB).
const DefaultMemoryLimit = "850MB"

// defaultMemoryLimitBytes is DefaultMemoryLimit in bytes.
var defaultMemoryLimitBytes = func() uint64 {
	n, err := ParseMemoryLimit(DefaultMemoryLimit)
	if err != nil {
		panic(err)
	}
	return n
}()

// MemoryShare returns db's memory limit as a share of DefaultMemoryLimit (1 under the default).
func (db *DB) MemoryShare() float64 {
	return float64(db.memoryLimitBytes) / float64(defaultMemoryLimitBytes)
}

// MemoryLimit returns the memory limit db was opened with, as it was given (e.g. 850MB).
func (db *DB) MemoryLimit() string { return db.memoryLimit }

// SmallPages reports whether the sandbox's block pool stays in small pages (Options.SmallPages).
func (db *DB) SmallPages() bool { return db.smallPages }

// ParseMemoryLimit reads a memory limit such as 850MB, 2GB or 1.5GiB (a number of bytes with an
// SI or IEC unit) as bytes.
func ParseMemoryLimit(s string) (uint64, error) {
	n, err := humanize.ParseBytes(s)
	if err != nil {
		return 0, fmt.Errorf("memory limit %q (want a size such as 512MB or 2GB): %w", s, err)
	}
	if n == 0 {
		return 0, fmt.Errorf("memory limit %q: want more than 0 bytes", s)
	}
	return n, nil
}

// RowGroupRows is the row group size of kubesift databases. DuckDB's default (122,880 rows)
// means hundreds of MB per row group with audit events of a few KB, buffered per thread
// during a load; 16,384 rows keeps loads as fast and their memory flat.
const RowGroupRows = 16384

// StorageVersion is DuckDB's storage format of the database files Open creates, the newest of the
// DuckDB that kubesift links; it has every compression a Column names (Vocabulary, Documents),
// where DuckDB's default format, which older kubesifts wrote, has neither. The recordings
// replicated to 10M events load into 1.1 GB instead of 5.3 GB in it, and all rules over them take
// 0.81× the time (BENCHMARKS.md). DuckDB before 1.5 cannot read such a file; a write open rewrites
// a file of an older format in it (reopenConverted).
const StorageVersion = "v1.5.0"

// backgroundPurge has jemalloc's background thread return the pages DuckDB frees once they have
// been free for the allocator's decay time (cli.SetDuckDBAllocator), instead of the threads that
// allocate next doing it on their way, and the pages of arenas whose threads have gone idle too.
// It is a setting of the whole process that DuckDB sets off whenever an instance closes (an
// analysis's sandbox, then the charts' or a timeline's), so every instance sets it when it opens.
// For what it gained see cli's duckDBAllocator.
const backgroundPurge = "SET allocator_background_threads = true"

// ErrInUse reports that another process holds the database file.
var ErrInUse = errors.New("database is in use by another kubesift process")

// DB is an open kubesift database.
type DB struct {
	*sql.DB
	Path      string
	Schema    Schema // the tables Open made sure exist
	connector *duckdb.Connector
	// how it was opened, for the sandbox (see Sandboxed); memoryLimitBytes is memoryLimit read
	readOnly         bool
	memoryLimit      string
	memoryLimitBytes uint64
	threads          int
	smallPages       bool
	sandbox          sync.Once
	sandboxed        error
	// scratch is an in-memory database's private spill directory, removed on Close
	scratch string
	// format is DuckDB's name of the storage format of the file (e.g. "v1.0.0+"; StorageVersion for
	// an in-memory database), read when it was opened for writing: its tables are declared for it
	// (see olderFormats)
	format string
	// Repaired counts, per table, the rows of interrupted loads that Open removed (see repair).
	Repaired map[string]int64
	// Upgraded names the tables and columns (table.column) that Open added to a database an older
	// kubesift wrote, and Dropped the obsolete columns it dropped.
	Upgraded, Dropped []string
	// OutsideWindow names, for a dataset (OpenDataset), the tables of which its cluster has days
	// outside the window, which the views do not read: a rule without rows of them in the window
	// says "in the window", as over a database that holds rows of other times.
	OutsideWindow []string
	// Derived names the derived tables Open filled for loads that had no rows in them: loads of
	// an ingest stopped before it derived them (killed, or the database full), or of an older
	// kubesift (see deriveNewerLoads).
	Derived []string
	// Converted is set when Open rewrote the file, in a storage format before StorageVersion, in
	// that format (reopenConverted): the file's size in bytes before and after. ConvertError says
	// why it left such a file in its format instead.
	Converted    struct{ From, To int64 }
	ConvertError error
}

// threadsSetting is the statement that caps DuckDB's threads at n, in the database and in its
// sandboxes (their own instances).
func threadsSetting(n int) string { return fmt.Sprintf("SET threads = %d", n) }

// Options tune how the database is opened.
type Options struct {
	MemoryLimit string // DuckDB memory_limit, e.g. "750MB"; empty means DefaultMemoryLimit
	ReadOnly    bool   // open without taking the write lock (for query-only verbs)
	// Threads caps DuckDB's worker threads, in the sandboxes too; 0 leaves DuckDB's default (the
	// CPUs the process may use). For databases of a handful of rows, whose queries cost their
	// setup, not their rows.
	Threads int
	// BeforeRewrite, when set, is called before an upgrade rewrites a table (Column.Generated),
	// which takes minutes for a large one, so that the caller can say why it waits.
	BeforeRewrite func(table string)
	// SmallPages leaves the sandbox's block pool in the kernel's small pages instead of advising
	// it for transparent huge pages (see blockPool): for a host where the kernel's compaction of
	// memory into huge pages costs more than the faults it saves.
	SmallPages bool
	// BlockPool has an in-memory database keep its buffer blocks in DuckDB's block pool, as the
	// sandbox of a large read-only file does (see blockPool): for a dataset's instance, which
	// only reads.
	BlockPool bool

	upgraded bool // a read-only open after the repair or upgrade that it asked for
}

var lockHolderPID = regexp.MustCompile(`PID (\d+)`)

// Open opens (creating if needed) the database at path and makes sure every table of schema
// exists, adding the columns an older kubesift did not have. A database file held by another
// process yields an error wrapping ErrInUse.
func Open(ctx context.Context, path string, schema Schema, opt Options) (*DB, error) {
	if path == "" {
		path = InMemory
	}
	if opt.MemoryLimit == "" {
		opt.MemoryLimit = DefaultMemoryLimit
	}
	memoryLimit, err := ParseMemoryLimit(opt.MemoryLimit)
	if err != nil {
		return nil, err
	}
	if opt.ReadOnly && path != InMemory {
		if _, err := os.Stat(path); err != nil {
			return nil, fmt.Errorf("opening database %s: %w", path, err)
		}
	}
	// Settings and the ATTACH are for the whole database and run with the first connection; a
	// later connection (database/sql opens them as it likes) only selects the database.
	setup := []string{
		"SET memory_limit = " + quote(opt.MemoryLimit),
		"SET write_buffer_row_group_count = 1",
		backgroundPurge,
	}
	if opt.Threads > 0 {
		setup = append(setup, threadsSetting(opt.Threads))
	}
	advisePool := func() {}
	if opt.BlockPool && path == InMemory {
		setup = append(setup, "SET block_allocator_memory = "+quote(opt.MemoryLimit))
		if !opt.SmallPages {
			// the pool's region appears when the instance opens, at the first connection (PingContext)
			advisePool = hugePagesForNewRegion(memoryLimit / 2)
		}
	}
	var perConn []string
	scratch := ""
	if path == InMemory {
		// DuckDB would spill an in-memory database into ".tmp" under the working directory,
		// which may be read-only or the user's checkout: give it a private directory instead.
		var err error
		if scratch, err = os.MkdirTemp("", "kubesift-spill-"); err != nil {
			return nil, fmt.Errorf("making a spill directory for an in-memory database: %w", err)
		}
		setup = append(setup, "SET temp_directory = "+quote(scratch)) // TempDir
	} else {
		// The file is attached to an in-memory instance rather than opened directly, because
		// only ATTACH takes a row group size. A new file is created in StorageVersion's format.
		// An existing one is attached in its own: DuckDB would convert the file in place, and its
		// declared dictionaries, which the newer format no longer writes, would then store new
		// rows uncompressed; a write open rewrites an older one instead (reopenConverted).
		mode := ""
		if opt.ReadOnly {
			mode = ", READ_ONLY"
		} else if _, err := os.Stat(path); errors.Is(err, fs.ErrNotExist) {
			mode = ", STORAGE_VERSION " + quote(StorageVersion)
		}
		setup = append(setup,
			"SET temp_directory = "+quote(path+".tmp"), // TempDir
			fmt.Sprintf("ATTACH %s AS kubesift (ROW_GROUP_SIZE %d%s)", quote(path), RowGroupRows, mode))
		perConn = []string{"USE kubesift"}
	}
	var once sync.Once
	var setupErr error
	connector, err := duckdb.NewConnector("", func(execer driver.ExecerContext) error {
		once.Do(func() {
			for _, stmt := range setup {
				if _, err := execer.ExecContext(ctx, stmt, nil); err != nil {
					setupErr = err
					return
				}
			}
		})
		if setupErr != nil {
			return setupErr
		}
		for _, stmt := range perConn {
			if _, err := execer.ExecContext(ctx, stmt, nil); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		if scratch != "" {
			os.RemoveAll(scratch)
		}
		return nil, openError(path, err)
	}
	db := &DB{DB: sql.OpenDB(connector), Path: path, Schema: schema, connector: connector, readOnly: opt.ReadOnly, memoryLimit: opt.MemoryLimit, memoryLimitBytes: memoryLimit, threads: opt.Threads, smallPages: opt.SmallPages, scratch: scratch}
	if err := db.PingContext(ctx); err != nil {
		db.Close()
		return nil, openError(path, err)
	}
	advisePool()
	if !opt.ReadOnly {
		db.format, err = db.storageFormat(ctx)
		if err == nil {
			db.Upgraded, db.Dropped, err = db.createTables(ctx, opt.BeforeRewrite)
		}
		var legacy bool // a database from before the load id sequence
		if err == nil {
			legacy, err = db.createLoadIDSequence(ctx)
		}
		if err == nil {
			condition := orphanCondition
			if legacy {
				condition = legacyOrphanCondition
			}
			db.Repaired, err = db.repair(ctx, condition)
		}
		if err == nil {
			db.Derived, err = db.deriveNewerLoads(ctx)
		}
		if err == nil {
			err = db.removeStaleTempFiles()
		}
		if err != nil {
			db.Close()
			return nil, err
		}
		if storageVersionBefore(db.format, StorageVersion) {
			return db.reopenConverted(ctx, opt)
		}
		return db, nil
	}
	if path == InMemory {
		return db, nil
	}
	stale, err := db.readOnlyStale(ctx)
	if err != nil || !stale {
		if err != nil {
			db.Close()
			return nil, err
		}
		return db, nil
	}
	if opt.upgraded {
		db.Close()
		return nil, fmt.Errorf("opening %s: it still needs a repair or upgrade after one", path)
	}
	// An interrupted load left rows behind, or an older kubesift wrote the file: repair or
	// upgrade it (that takes the write lock) and open it again read-only.
	db.Close()
	rw, err := Open(ctx, path, schema, Options{MemoryLimit: opt.MemoryLimit, BeforeRewrite: opt.BeforeRewrite})
	if err != nil {
		return nil, err
	}
	repaired, upgraded, dropped, derived := rw.Repaired, rw.Upgraded, rw.Dropped, rw.Derived
	if err := rw.Close(); err != nil {
		return nil, fmt.Errorf("closing %s after repairing or upgrading it: %w", path, err)
	}
	opt.upgraded = true
	if db, err = Open(ctx, path, schema, opt); err != nil {
		return nil, err
	}
	db.Repaired, db.Upgraded, db.Dropped, db.Derived = repaired, upgraded, dropped, derived
	return db, nil
}

// readOnlyStale reports whether a kubesift database opened read-only needs writing before the
// rules read it: an older kubesift wrote it (it lacks a table or column of the schema, or has an
// obsolete column, or loaded into it without deriving a table with a Derive), or an interrupted
// load left rows behind. A database without an ingest_files table is not kubesift's.
func (db *DB) readOnlyStale(ctx context.Context) (bool, error) {
	have, err := db.columns(ctx)
	if err != nil || !have[ingestFilesTable.Name] {
		return false, err
	}
	for _, t := range db.Schema {
		for _, c := range t.Columns {
			if stored, ok := have[t.Name+"."+c.Name]; !ok || (stored && c.Generated != "") {
				return true, nil
			}
		}
		for _, c := range t.Obsolete {
			if _, ok := have[t.Name+"."+c]; ok {
				return true, nil
			}
		}
	}
	if hasSequence, err := db.hasLoadIDSequence(ctx); err != nil || !hasSequence {
		return true, err // from before the sequence: its repair looks for orphans among every load id
	}
	orphans, err := db.orphanRows(ctx, orphanCondition)
	if err != nil || len(orphans) > 0 {
		return len(orphans) > 0, err
	}
	for _, t := range db.Schema { // a table with a Derive that lacks an older kubesift's loads
		if t.Derive == "" {
			continue
		}
		newer, err := db.newerLoads(ctx, t)
		if err != nil {
			return false, err
		}
		var behind bool
		if err := db.QueryRowContext(ctx, "SELECT EXISTS (SELECT 1 FROM ("+t.Derive+")"+newer.where+")", newer.args...).Scan(&behind); err != nil || behind {
			return behind, err
		}
	}
	return false, nil
}

// TempDir is where temporary files of this database go: DuckDB's spill directory next to a
// database file (writable wherever the database is), a private directory under the system's
// temporary directory, removed on Close, for an in-memory one.
func (db *DB) TempDir() string {
	if db.Path == InMemory {
		return db.scratch
	}
	return db.Path + ".tmp"
}

// quote makes s a SQL string literal.
func quote(s string) string { return "'" + strings.ReplaceAll(s, "'", "''") + "'" }

func openError(path string, err error) error {
	msg := err.Error()
	if strings.Contains(msg, "Could not set lock") || strings.Contains(msg, "Conflicting lock") {
		holder := ""
		if m := lockHolderPID.FindStringSubmatch(msg); m != nil {
			holder = " (pid " + m[1] + ")"
		}
		return fmt.Errorf("opening %s: %w%s; wait for it to finish or use another --db", path, ErrInUse, holder)
	}
	return fmt.Errorf("opening database %s: %w", path, err)
}

// DeriveNewerLoads inserts into each table with a Derive what it makes of the loads newer than the
// newest it holds rows of (of every row when it holds none): an ingest calls it once its files are
// loaded. Over committed rows, in a few statements per ingest: derived by each load inside its own
// transaction, the rows of the load were scanned again uncommitted (audit_services took 7.2-9.8 s
// of a 14.3 GB load), and a GROUP BY (endpoint_objects) cost 37 ms a file, a third of a snapshot
// file's load (BENCHMARKS.md).
func (db *DB) DeriveNewerLoads(ctx context.Context) error {
	_, err := db.deriveNewerLoads(ctx)
	return err
}

// deriveChunkRows bounds the loads one statement of DeriveNewerLoads derives, by their rows in
// ingest_files: a GROUP BY whose states are lists (endpoint_objects) cannot spill to disk, and over a
// week of 15-minute snapshots at once (4M endpoint_addresses rows) it held 763 MiB (BENCHMARKS.md).
const deriveChunkRows = 1_000_000

// deriveNewerLoads is DeriveNewerLoads. When Open calls it, the loads it finds are those an
// ingest stopped before deriving (interrupted, or the database full) or those of an older kubesift,
// which does not know the table (or a table just added to a database an older kubesift wrote,
// whose rows may predate load ids): without them the table would lack their rows for good. It
// returns the tables it added rows to that Open did not just add (Upgraded names those). The
// scans read only the row groups of those loads, whose ids are the newest.
func (db *DB) deriveNewerLoads(ctx context.Context) ([]string, error) {
	var added []string
	for _, t := range db.Schema {
		if t.Derive == "" {
			continue
		}
		newest, err := db.newestLoad(ctx, t)
		if err != nil {
			return nil, err
		}
		chunks, err := db.loadChunks(ctx, newest)
		if err != nil {
			return nil, err
		}
		var rows int64
		for _, c := range chunks {
			res, err := db.ExecContext(ctx, t.deriveInsert(c.where), c.args...)
			if err != nil {
				return nil, fmt.Errorf("filling table %s in %s: %w", t.Name, db.Path, err)
			}
			n, _ := res.RowsAffected()
			rows += n
		}
		if rows > 0 && !slices.Contains(db.Upgraded, t.Name) {
			added = append(added, t.Name)
		}
	}
	return added, nil
}

// loadFilter keeps some loads' rows: a " WHERE …" over a Derive's columns and its arguments.
type loadFilter struct {
	where string
	args  []any
}

// newerLoads returns the filter that keeps the rows of the loads newer than the newest t holds
// rows of; every row (where "") when it holds none.
func (db *DB) newerLoads(ctx context.Context, t Table) (loadFilter, error) {
	newest, err := db.newestLoad(ctx, t)
	if err != nil || !newest.Valid {
		return loadFilter{}, err
	}
	return loadsAfter(newest), nil
}

// newestLoad returns the newest load t holds rows of; NULL when it holds none.
func (db *DB) newestLoad(ctx context.Context, t Table) (sql.NullInt64, error) {
	var newest sql.NullInt64
	if err := db.QueryRowContext(ctx, "SELECT max(load_id) FROM "+t.Name).Scan(&newest); err != nil {
		return newest, fmt.Errorf("reading the newest load of %s in %s: %w", t.Name, db.Path, err)
	}
	return newest, nil
}

// loadChunks returns filters that together keep the rows of the loads after newest (every row
// when it is NULL, those without a load id too), each the loads of about deriveChunkRows rows
// (ingest_files.rows) in load order, the last open-ended.
func (db *DB) loadChunks(ctx context.Context, newest sql.NullInt64) ([]loadFilter, error) {
	var chunks []loadFilter
	if !newest.Valid {
		chunks = append(chunks, loadFilter{where: " WHERE load_id IS NULL"})
	}
	after := loadsAfter(newest)
	rows, err := db.QueryContext(ctx, `SELECT load_id, coalesce("rows", 0) FROM ingest_files`+after.where+` ORDER BY load_id`, after.args...)
	if err != nil {
		return nil, fmt.Errorf("reading the loads of %s: %w", db.Path, err)
	}
	var sum int64
	for rows.Next() {
		var id, n int64
		if err := rows.Scan(&id, &n); err != nil {
			rows.Close()
			return nil, err
		}
		if sum += n; sum >= deriveChunkRows {
			chunks = append(chunks, loadFilter{after.where + fmt.Sprintf(" AND load_id <= $%d", len(after.args)+1), append(slices.Clone(after.args), id)})
			after, sum = loadsAfter(sql.NullInt64{Int64: id, Valid: true}), 0
		}
	}
	if err := errors.Join(rows.Err(), rows.Close()); err != nil {
		return nil, fmt.Errorf("reading the loads of %s: %w", db.Path, err)
	}
	return append(chunks, after), nil
}

// loadsAfter keeps the rows of the loads after load id; of every load when it is NULL.
func loadsAfter(id sql.NullInt64) loadFilter {
	if !id.Valid {
		return loadFilter{where: " WHERE load_id IS NOT NULL"}
	}
	return loadFilter{" WHERE load_id > $1", []any{id.Int64}}
}

// createTables creates the schema's tables that the database lacks, adds the columns its tables
// lack (at the end; loads insert by name), NULL in the rows loaded before unless the column has a
// Backfill, drops their obsolete columns, and rewrites a table that stores a column the schema
// computes (Column.Generated: DuckDB cannot turn a stored column into a computed one in place). It
// returns what it added, dropped and rewrote (table or table.column) in a database that had
// kubesift's tables before.
func (db *DB) createTables(ctx context.Context, beforeRewrite func(table string)) (upgraded, dropped []string, err error) {
	have, err := db.columns(ctx)
	if err != nil {
		return nil, nil, err
	}
	older := have[ingestFilesTable.Name]
	for _, t := range db.Schema {
		if !have[t.Name] {
			if _, err := db.ExecContext(ctx, t.ddl(t.Name, db.format)); err != nil {
				return nil, nil, fmt.Errorf("creating table %s in %s: %w", t.Name, db.Path, err)
			}
			if older {
				upgraded = append(upgraded, t.Name) // one with a Derive is filled by deriveNewerLoads
			}
			continue
		}
		var storedGenerated []string
		for _, c := range t.Columns {
			if stored, ok := have[t.Name+"."+c.Name]; c.Generated != "" && (stored || !ok) {
				storedGenerated = append(storedGenerated, c.Name) // DuckDB adds no generated column to a table
			}
		}
		if len(storedGenerated) > 0 {
			if beforeRewrite != nil {
				beforeRewrite(t.Name)
			}
			added, err := db.rewriteTable(ctx, t, have)
			if err != nil {
				return nil, nil, fmt.Errorf("upgrading table %s in %s (computing %s instead of storing it): %w",
					t.Name, db.Path, strings.Join(storedGenerated, ", "), err)
			}
			upgraded = append(upgraded, added...)
			for _, name := range storedGenerated {
				upgraded = append(upgraded, t.Name+"."+name+" (computed)")
			}
			for _, c := range t.Obsolete {
				if _, ok := have[t.Name+"."+c]; ok {
					dropped = append(dropped, t.Name+"."+c)
				}
			}
			continue
		}
		for _, c := range t.Columns {
			if _, ok := have[t.Name+"."+c.Name]; ok {
				continue
			}
			if _, err := db.ExecContext(ctx, fmt.Sprintf("ALTER TABLE %s ADD COLUMN \"%s\" %s", t.Name, c.Name, c.Type)); err != nil {
				return nil, nil, fmt.Errorf("upgrading table %s in %s (adding column %s): %w", t.Name, db.Path, c.Name, err)
			}
			if c.Backfill != "" {
				if _, err := db.ExecContext(ctx, fmt.Sprintf("UPDATE %s SET \"%s\" = %s", t.Name, c.Name, c.Backfill)); err != nil {
					return nil, nil, fmt.Errorf("upgrading table %s in %s (filling column %s): %w", t.Name, db.Path, c.Name, err)
				}
			}
			upgraded = append(upgraded, t.Name+"."+c.Name)
		}
		for _, c := range t.Obsolete {
			if _, ok := have[t.Name+"."+c]; !ok {
				continue
			}
			if _, err := db.ExecContext(ctx, fmt.Sprintf("ALTER TABLE %s DROP COLUMN \"%s\"", t.Name, c)); err != nil {
				return nil, nil, fmt.Errorf("upgrading table %s in %s (dropping column %s): %w", t.Name, db.Path, c, err)
			}
			dropped = append(dropped, t.Name+"."+c)
		}
	}
	return upgraded, dropped, nil
}

// rewriteTable copies t's rows, in their order, into a new table of t's DDL, which replaces it:
// its stored columns keep what they hold, the columns it lacks take their Backfill (or NULL), its
// obsolete columns are left behind, and its generated columns are computed. One transaction, so
// that an interrupted upgrade leaves the table as it was. It returns the columns it added.
func (db *DB) rewriteTable(ctx context.Context, t Table, have map[string]bool) (added []string, err error) {
	var values []string
	for _, c := range t.Columns {
		_, ok := have[t.Name+"."+c.Name]
		switch {
		case c.Generated != "":
		case ok:
			values = append(values, `"`+c.Name+`"`)
		default:
			added = append(added, t.Name+"."+c.Name)
			if c.Backfill != "" {
				values = append(values, fmt.Sprintf(`%s AS "%s"`, c.Backfill, c.Name))
			}
		}
	}
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return nil, err
	}
	defer tx.Rollback()
	old := t.Name + "_before_upgrade"
	for _, q := range []string{
		fmt.Sprintf("ALTER TABLE %s RENAME TO %s", t.Name, old),
		t.ddl(t.Name, db.format),
		fmt.Sprintf("INSERT INTO %s BY NAME SELECT %s FROM %s", t.Name, strings.Join(values, ", "), old),
		"DROP TABLE " + old,
	} {
		if _, err := tx.ExecContext(ctx, q); err != nil {
			return nil, err
		}
	}
	return added, tx.Commit()
}

// columns returns the database's tables and columns, as "table" and "table.column", each column
// mapped to whether it is stored (false for a generated column: kubesift declares no defaults, so a
// column with an expression is a generated one).
func (db *DB) columns(ctx context.Context) (map[string]bool, error) {
	rows, err := db.QueryContext(ctx, "SELECT table_name, column_name, column_default IS NULL FROM duckdb_columns() WHERE database_name = current_database() AND schema_name = 'main'")
	if err != nil {
		return nil, fmt.Errorf("reading the columns of %s: %w", db.Path, err)
	}
	have := map[string]bool{}
	for rows.Next() {
		var table, column string
		var stored bool
		if err := rows.Scan(&table, &column, &stored); err != nil {
			rows.Close()
			return nil, err
		}
		have[table] = true
		have[table+"."+column] = stored
	}
	if err := errors.Join(rows.Err(), rows.Close()); err != nil {
		return nil, fmt.Errorf("reading the columns of %s: %w", db.Path, err)
	}
	return have, nil
}

// Close closes the database and its connector.
func (db *DB) Close() error {
	err := errors.Join(db.DB.Close(), db.connector.Close())
	if db.scratch != "" {
		err = errors.Join(err, os.RemoveAll(db.scratch))
	}
	return err
}

// releaseFloor is the memory limit ReleaseCache sets for a moment: what DuckDB keeps of the
// database's blocks beyond it is evicted.
const releaseFloor = "32MB"

// ReleaseCache evicts the blocks of the database that DuckDB's buffer pool keeps cached, by
// setting the memory limit to releaseFloor for a moment and back: a long ingest otherwise keeps
// the blocks of every file it wrote cached up to the limit, beside what Go and the next load need
// (loading 30M events of rotated logs in one process: 630-650 MiB of them, the peak RSS at 1,524
// MiB; BENCHMARKS.md). The blocks are on disk and are read again when a later query needs them.
// Blocks in use (a pinned metadata block) stay: DuckDB then refuses the floor after evicting what
// it could, which is no error here. Nothing is done for an in-memory database, whose blocks have
// no file to be read back from. It runs to its end even when ctx is cancelled (an interrupted
// ingest): the limit must not stay at the floor.
func (db *DB) ReleaseCache(ctx context.Context) error {
	if db.Path == InMemory {
		return nil
	}
	ctx = context.WithoutCancel(ctx)
	if _, err := db.ExecContext(ctx, "SET memory_limit = "+quote(releaseFloor)); err != nil && !IsOutOfMemory(err) {
		return fmt.Errorf("evicting the cached blocks of %s: %w", db.Path, err)
	}
	if _, err := db.ExecContext(ctx, "SET memory_limit = "+quote(db.memoryLimit)); err != nil {
		return fmt.Errorf("setting the memory limit of %s back to %s: %w", db.Path, db.memoryLimit, err)
	}
	return nil
}

// CopyDatabase copies the database file src, closed and checkpointed (no WAL beside it), to
// dst, which must not exist yet.
func CopyDatabase(dst, src string) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return fmt.Errorf("copying %s: %w", src, err)
	}
	return out.Close()
}
