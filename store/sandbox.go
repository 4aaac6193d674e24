package store

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strings"

	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/duckdb/duckdb-go/v2"
)

// ErrNotReadOnly reports user SQL that is not a single read-only query.
var ErrNotReadOnly = errors.New("only a single SELECT (or WITH ... SELECT) statement runs here")

// Sandbox runs user-supplied SQL (query, rules) where it can neither write nor touch files:
//
//   - every statement is prepared first and refused unless it is exactly one SELECT (COPY,
//     EXPORT, ATTACH, SET, CALL, PRAGMA, DML, DDL, EXPLAIN ANALYZE and several statements in one
//     string never run);
//   - a database file is attached READ_ONLY to a private in-memory DuckDB with external access
//     off. DuckDB keeps the paths it attached and its temp directory open to SQL even then, so
//     the file is attached through a hard link that is removed right after, and the instance
//     spills into a private directory of its own (allowed_directories holds only that one);
//   - a temporary in-memory database (run without --db) is sandboxed in place: external access
//     off, the configuration locked, and the statement check above.
//
// Extensions cannot be installed or loaded and the configuration is locked in both cases. The one
// file kubesift itself has such SQL write is CopyParquet's, in the private directory.
type Sandbox struct {
	conn  *sql.Conn
	own   *sql.DB // the private instance of a database file; nil for an in-memory database
	spill string  // the private instance's spill directory, removed on Close
}

// lockDown ends the configuration of every sandbox, after external access is switched off.
var lockDown = []string{
	// An ASOF join whose input DuckDB estimates at under 64 rows runs as a nested loop, quadratic
	// when the estimate is wrong (endpoint-flapping's, behind a filter on an OR: 6,110 rows, 0.45 s
	// instead of 0.02 s); the rules' plans are checked with the same setting (analyze/plans_test.go).
	"SET asof_loop_join_threshold = 0",
	// where Stage keeps stage tables: an in-memory database of the sandbox's own, whose tables
	// CompressStages compresses (a temporary table is never compressed)
	"ATTACH ':memory:' AS " + stageCatalog + " (COMPRESS)",
	"SET allow_community_extensions = false",
	"SET autoload_known_extensions = false",
	"SET autoinstall_known_extensions = false",
	"SET lock_configuration = true",
}

// blockPool returns the setting that has the sandbox's DuckDB keep the blocks of its buffer pool
// (256 KiB each: the table data it reads, its operators' pages) in a region of its own, as large
// as the memory limit, instead of taking each from its allocator and handing it back; "" for a
// database opened for writing or a file smaller than a quarter of the memory limit. A block freed
// there is advised MADV_FREE and given out again as it is, where the allocator hands freed memory
// back to the system (cli's duckDBAllocator) and every block loaded afterwards is faulted in anew:
// on a virtual machine about 17 µs a page, a third of an analysis's CPU in system time. All rules
// over 10M events of the independent mix (an 809 MB database) took 18.7-20.4 s with it against
// 22.9-23.9 s without, over 10M of the recordings 43.6-47.0 s against 60.5-64.9 s, over 4M
// (310 MB) 9.3-10.2 s against 11.1-12.1 s, the peak 55-150 MiB higher (the region's pages count
// until the process ends or the kernel, short of memory, takes them). A process that loaded files
// first keeps what the load left beside the pool (run --db over a stream of 30M events peaked at
// 1,645 MiB with it, 1,544 MiB without), so only a database opened read-only gets it (analyze,
// query, and run --db, which closes the loading instance and opens the file read-only for the
// rules: 1,347 MiB there). And the region's blocks are faulted in whole when first given out, where the
// allocator's pages are faulted in as they are written: a small database, whose blocks stay cached
// once read, lost by it (1M events, 79 MB: 3.25-3.36 s against 3.13-3.25 s; samples/watch-rewind
// 1.50-1.83 against 1.30-1.37 CPU-s), so the pool waits for a database of a quarter of the limit,
// between the two (BENCHMARKS.md). The region is advised for transparent huge pages
// (hugePagesForNewRegion; not with Options.SmallPages), so that filling the pool takes a fault per
// 2 MiB instead of per 4 KiB: all rules over 10M events in 0.77-0.93× the time, the peak 20-90 MiB
// higher.
func blockPool(readOnly bool, databaseBytes, memoryLimitBytes uint64, memoryLimit string) string {
	if !readOnly || databaseBytes < memoryLimitBytes/4 {
		return ""
	}
	return "SET block_allocator_memory = " + quote(memoryLimit)
}

// Sandboxed returns a Sandbox over db. For a database file opened for writing, db is
// checkpointed first so that the read-only copy sees everything committed. Close it before
// writing to db again.
func (db *DB) Sandboxed(ctx context.Context) (*Sandbox, error) {
	if db.Path == InMemory {
		return db.sandboxInPlace(ctx)
	}
	if !db.readOnly {
		if _, err := db.ExecContext(ctx, "CHECKPOINT"); err != nil {
			return nil, fmt.Errorf("checkpointing %s for the sandbox: %w", db.Path, err)
		}
	}
	setup := []string{"SET memory_limit = " + quote(db.memoryLimit), backgroundPurge}
	if db.threads > 0 {
		setup = append(setup, threadsSetting(db.threads))
	}
	info, err := os.Stat(db.Path)
	if err != nil {
		return nil, fmt.Errorf("sandboxing %s: %w", db.Path, err)
	}
	pool := blockPool(db.readOnly, uint64(info.Size()), db.memoryLimitBytes, db.memoryLimit)
	if pool != "" {
		setup = append(setup, pool)
	}
	// DuckDB leaves the paths it attached and its temp directory open to SQL even with external
	// access off. The database is attached through a hard link in a private spill directory,
	// removed once attached, so that no SQL can name it; where no such link can be made (a
	// read-only volume), file access is disabled altogether and the sandbox cannot spill.
	spill, link := db.sandboxLink()
	if spill != "" {
		setup = append(setup,
			"SET temp_directory = "+quote(spill),
			fmt.Sprintf("ATTACH %s AS kubesift (READ_ONLY)", quote(link)),
			"USE kubesift",
			"SET enable_external_access = false")
	} else {
		setup = append(setup,
			"SET temp_directory = ''",
			fmt.Sprintf("ATTACH %s AS kubesift (READ_ONLY)", quote(db.Path)),
			"USE kubesift",
			"SET enable_external_access = false",
			"SET disabled_filesystems = 'LocalFileSystem'")
	}
	setup = append(setup, lockDown...)
	// the block pool's region appears when the instance opens
	advisePool := func() {}
	if pool != "" && !db.smallPages {
		advisePool = hugePagesForNewRegion(db.memoryLimitBytes / 2)
	}
	connector, err := duckdb.NewConnector("", nil)
	if err != nil {
		return nil, fmt.Errorf("opening the sandbox for %s: %w", db.Path, err)
	}
	own := sql.OpenDB(connector)
	own.SetMaxOpenConns(1) // the private instance lives in this one connection
	conn, err := own.Conn(ctx)
	if err == nil {
		for _, stmt := range setup {
			if _, err = conn.ExecContext(ctx, stmt); err != nil {
				err = fmt.Errorf("sandboxing %s (%s): %w", db.Path, stmt, err)
				break
			}
		}
	}
	if err == nil && link != "" {
		err = os.Remove(link)
	}
	if err == nil {
		advisePool()
	}
	if err != nil {
		if conn != nil {
			conn.Close()
		}
		own.Close()
		os.RemoveAll(spill)
		return nil, err
	}
	return &Sandbox{conn: conn, own: own, spill: spill}, nil
}

// sandboxLink makes a private spill directory in the database's temp directory and a hard link
// to the database in it; "", "" when it cannot.
func (db *DB) sandboxLink() (spill, link string) {
	if err := os.MkdirAll(db.TempDir(), 0o700); err != nil {
		return "", ""
	}
	spill, err := os.MkdirTemp(db.TempDir(), sandboxDirPrefix)
	if err != nil {
		return "", ""
	}
	link = filepath.Join(spill, "db")
	if err := os.Link(db.Path, link); err != nil {
		os.Remove(spill)
		return "", ""
	}
	return spill, link
}

// removeStaleTempFiles removes what killed processes left in the database's temp directory: the
// spill directories of sandboxes, and the files of rows a load held back (HeldFilePrefix). It
// runs when the database is opened for writing, when no other process has it open.
func (db *DB) removeStaleTempFiles() error {
	if db.Path == InMemory {
		return nil
	}
	var stale []string
	for _, pattern := range []string{sandboxDirPrefix + "*", HeldFilePrefix + "*"} {
		found, err := filepath.Glob(filepath.Join(db.TempDir(), pattern))
		if err != nil {
			return fmt.Errorf("removing stale temporary files of %s: %w", db.Path, err)
		}
		stale = append(stale, found...)
	}
	var err error
	for _, path := range stale {
		err = errors.Join(err, os.RemoveAll(path))
	}
	if err != nil {
		return fmt.Errorf("removing stale temporary files of %s: %w", db.Path, err)
	}
	return nil
}

// sandboxDirPrefix starts the names of sandbox spill directories.
const sandboxDirPrefix = "sandbox-"

// HeldFilePrefix starts the names of the files in TempDir that hold rows a load keeps back
// until its connection is free (rows.Writer.Hold).
const HeldFilePrefix = "kubesift-held-"

// sandboxInPlace locks down the in-memory database itself, once: it stays so afterwards.
func (db *DB) sandboxInPlace(ctx context.Context) (*Sandbox, error) {
	conn, err := db.Conn(ctx)
	if err != nil {
		return nil, err
	}
	db.sandbox.Do(func() {
		for _, stmt := range append([]string{"SET enable_external_access = false"}, lockDown...) {
			if _, err := conn.ExecContext(ctx, stmt); err != nil {
				db.sandboxed = fmt.Errorf("sandboxing the query connection (%s): %w", stmt, err)
				return
			}
		}
	})
	if db.sandboxed != nil {
		conn.Close()
		return nil, db.sandboxed
	}
	return &Sandbox{conn: conn}, nil
}

// Close closes the sandbox (and its private instance).
func (s *Sandbox) Close() error {
	err := s.conn.Close()
	if s.own != nil {
		err = errors.Join(err, s.own.Close(), os.RemoveAll(s.spill))
	}
	return err
}

// Check returns an error wrapping ErrNotReadOnly unless query is exactly one SELECT
// statement; SQL that does not parse or bind gets DuckDB's error.
func (s *Sandbox) Check(ctx context.Context, query string) error {
	return s.conn.Raw(func(dc any) error {
		// Prepare (without a context) refuses several statements instead of running all but the last.
		stmt, err := dc.(*duckdb.Conn).Prepare(query)
		if err != nil {
			if strings.Contains(err.Error(), "multi-statement") {
				return fmt.Errorf("%w: the SQL holds several statements", ErrNotReadOnly)
			}
			return err
		}
		defer stmt.Close()
		t, err := stmt.(*duckdb.Stmt).StatementType()
		if err != nil {
			return err
		}
		if t != duckdb.STATEMENT_TYPE_SELECT {
			return fmt.Errorf("%w, not %s", ErrNotReadOnly, statementName(t))
		}
		return nil
	})
}

// statementName names a statement type for an error message: "COPY", "CREATE".
func statementName(t duckdb.StmtType) string {
	names := map[duckdb.StmtType]string{
		duckdb.STATEMENT_TYPE_INSERT: "INSERT", duckdb.STATEMENT_TYPE_UPDATE: "UPDATE", duckdb.STATEMENT_TYPE_DELETE: "DELETE",
		duckdb.STATEMENT_TYPE_EXPLAIN: "EXPLAIN", duckdb.STATEMENT_TYPE_CREATE: "CREATE", duckdb.STATEMENT_TYPE_ALTER: "ALTER",
		duckdb.STATEMENT_TYPE_DROP: "DROP", duckdb.STATEMENT_TYPE_COPY: "COPY", duckdb.STATEMENT_TYPE_EXPORT: "EXPORT",
		duckdb.STATEMENT_TYPE_ATTACH: "ATTACH", duckdb.STATEMENT_TYPE_DETACH: "DETACH", duckdb.STATEMENT_TYPE_SET: "SET",
		duckdb.STATEMENT_TYPE_VARIABLE_SET: "SET VARIABLE", duckdb.STATEMENT_TYPE_PRAGMA: "PRAGMA", duckdb.STATEMENT_TYPE_CALL: "CALL",
		duckdb.STATEMENT_TYPE_TRANSACTION: "a transaction statement", duckdb.STATEMENT_TYPE_LOAD: "LOAD/INSTALL",
		duckdb.STATEMENT_TYPE_VACUUM: "VACUUM", duckdb.STATEMENT_TYPE_ANALYZE: "ANALYZE",
	}
	if n, ok := names[t]; ok {
		return n
	}
	return fmt.Sprintf("statement type %d", t)
}

// Define runs statements that kubesift itself ships (the rules' shared CREATE TEMP MACROs) on
// the sandbox's connection: temporary definitions, visible to the queries run after them. It
// is never for user SQL, which Check would refuse.
func (s *Sandbox) Define(ctx context.Context, statements string) error {
	_, err := s.conn.ExecContext(ctx, statements)
	return err
}

// stageTable is the form of the name of a table that Stage makes (rules.StageTablePrefix).
var stageTable = regexp.MustCompile(`^stage_[a-z0-9_]+$`)

// stageCatalog is the sandbox's own in-memory database, attached (with compression) when the
// sandbox is made, that holds the stage tables.
const stageCatalog = "kubesift_stages"

// Stage keeps the rows of query, which must pass Check, as the table name (stage_…), replacing
// any table of that name: a rule's stage (see rules.Stage), read by the queries run after it on
// this connection until DropStage. The table lives in the sandbox's own in-memory database
// (stageCatalog: it spills to the sandbox's private directory, never to the database), under a
// temporary view of its name, through which the queries read it.
func (s *Sandbox) Stage(ctx context.Context, name, query string, args ...any) error {
	if err := checkStageName(name); err != nil {
		return err
	}
	if err := s.Check(ctx, query); err != nil {
		return err
	}
	// query is one SELECT (Check), so it can only be the body of the CREATE
	if _, err := s.conn.ExecContext(ctx, "CREATE OR REPLACE TABLE "+stageCatalog+".main."+name+" AS "+query+"\n", args...); err != nil {
		return err
	}
	_, err := s.conn.ExecContext(ctx, "CREATE OR REPLACE TEMP VIEW "+name+" AS SELECT * FROM "+stageCatalog+".main."+name)
	return err
}

// CompressStages compresses the stage tables made so far, as DuckDB compresses a database file
// (dictionaries, FSST, bit packing): they are then read many times by a rule that runs in
// pieces. election-lock-churn's stages at 10M events take 61 MiB instead of 630 MiB (of which
// 120 MiB spilled), for 2 s.
func (s *Sandbox) CompressStages(ctx context.Context) error {
	_, err := s.conn.ExecContext(ctx, "CHECKPOINT "+stageCatalog)
	return err
}

// DropStage drops the table name that Stage made.
func (s *Sandbox) DropStage(ctx context.Context, name string) error {
	if err := checkStageName(name); err != nil {
		return err
	}
	if _, err := s.conn.ExecContext(ctx, "DROP VIEW IF EXISTS temp."+name); err != nil {
		return err
	}
	_, err := s.conn.ExecContext(ctx, "DROP TABLE IF EXISTS "+stageCatalog+".main."+name)
	return err
}

// checkStageName refuses a name that is not of the form of a stage table, before it is put into SQL.
func checkStageName(name string) error {
	if !stageTable.MatchString(name) {
		return fmt.Errorf("stage table %q: want stage_ followed by lowercase letters, digits and underscores", name)
	}
	return nil
}

// QueryContext checks query (see Check) and runs it.
func (s *Sandbox) QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error) {
	if err := s.Check(ctx, query); err != nil {
		return nil, err
	}
	return s.conn.QueryContext(ctx, query, args...)
}

// QueryRowContext checks query (see Check) and runs it; a refused query's error comes from Scan.
func (s *Sandbox) QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row {
	if err := s.Check(ctx, query); err != nil {
		return s.conn.QueryRowContext(ctx, "SELECT error($1)", err.Error())
	}
	return s.conn.QueryRowContext(ctx, query, args...)
}

// QueryArrow checks query (see Check), runs it and hands its rows to fn as Arrow.
func (s *Sandbox) QueryArrow(ctx context.Context, query string, fn func(array.RecordReader) error) error {
	if err := s.Check(ctx, query); err != nil {
		return err
	}
	return s.conn.Raw(func(dc any) error {
		ar, err := duckdb.NewArrowFromConn(dc.(driver.Conn))
		if err != nil {
			return err
		}
		reader, err := ar.QueryContext(ctx, query)
		if err != nil {
			return err
		}
		defer reader.Release()
		return fn(reader)
	})
}

// CopyParquet checks query (see Check) and writes its rows to w as Parquet (zstd) with DuckDB's
// COPY inside the sandbox, into its private directory (the one place its SQL may write): the rows
// stream from the query into the file under the memory limit, where fetching them first would
// hold the whole result in memory. ok is false, and nothing is written, for a sandbox without a
// directory of its own (an in-memory database, or a database on a read-only volume).
func (s *Sandbox) CopyParquet(ctx context.Context, query string, w io.Writer) (ok bool, err error) {
	if s.spill == "" {
		return false, nil
	}
	if err := s.Check(ctx, query); err != nil {
		return true, err
	}
	path := filepath.Join(s.spill, "result.parquet")
	defer os.Remove(path)
	// query is one SELECT (Check), so it can only be the subquery; a comment ending it ends at its line
	if _, err := s.conn.ExecContext(ctx, "COPY ("+query+"\n) TO "+quote(path)+" (FORMAT parquet, COMPRESSION zstd)"); err != nil {
		return true, err
	}
	f, err := os.Open(path)
	if err != nil {
		return true, err
	}
	defer f.Close()
	_, err = io.Copy(w, f)
	return true, err
}

// IsOutOfMemory reports whether err is DuckDB's out-of-memory error: a query needed more than the
// memory limit in state it cannot spill (an aggregate's strings and lists, for one).
func IsOutOfMemory(err error) bool {
	var de *duckdb.Error
	return errors.As(err, &de) && de.Type == duckdb.ErrorTypeOutOfMemory
}
