package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// storageFormat returns DuckDB's name of the storage format of the database's file (e.g.
// "v1.0.0+"), or StorageVersion for an in-memory database.
func (db *DB) storageFormat(ctx context.Context) (string, error) {
	if db.Path == InMemory {
		return StorageVersion, nil
	}
	var tag sql.NullString
	if err := db.QueryRowContext(ctx, "SELECT tags['storage_version'] FROM duckdb_databases() WHERE database_name = current_database()").Scan(&tag); err != nil {
		return "", fmt.Errorf("reading the storage format of %s: %w", db.Path, err)
	}
	return tag.String, nil
}

// storageVersionBefore reports whether tag, DuckDB's name for a file's storage format (e.g.
// "v1.0.0+"), is older than version (e.g. "v1.5.0"). A tag it cannot read counts as older, so that
// the file's tables name only the compressions every format has (olderFormats).
func storageVersionBefore(tag, version string) bool {
	var have, want [3]int
	if _, err := fmt.Sscanf(tag, "v%d.%d.%d", &have[0], &have[1], &have[2]); err != nil {
		return true
	}
	fmt.Sscanf(version, "v%d.%d.%d", &want[0], &want[1], &want[2])
	return slices.Compare(have[:], want[:]) < 0
}

// convertSuffix names the file beside the database that a conversion writes before it replaces the
// database (reopenConverted).
const convertSuffix = ".convert"

// convertCatalog is the name the conversion attaches its new file under.
const convertCatalog = "kubesift_convert"

// reopenConverted converts the file of db, opened for writing in a storage format before
// StorageVersion, into that format (convertFormat), replaces the file with the conversion (the file
// a symbolic link names, not the link; with the file's permissions) and opens it again with opt.
// Where the conversion cannot be made, db is returned as it is, in its format, with the reason in
// ConvertError.
func (db *DB) reopenConverted(ctx context.Context, opt Options) (*DB, error) {
	if foreign, err := db.foreignObjects(ctx); err != nil || foreign != "" {
		if err == nil {
			err = fmt.Errorf("it holds %s, which kubesift does not make", foreign)
		}
		db.ConvertError = err
		return db, nil
	}
	file, err := filepath.EvalSymlinks(db.Path)
	if err != nil {
		db.ConvertError = err
		return db, nil
	}
	before, err := os.Stat(file)
	if err != nil {
		db.ConvertError = err
		return db, nil
	}
	if opt.BeforeRewrite != nil {
		opt.BeforeRewrite("every table into DuckDB " + StorageVersion + "'s storage format")
	}
	conversion := file + convertSuffix
	if err := db.convertFormat(ctx, conversion); err != nil {
		db.ConvertError = err
		return db, nil
	}
	after, err := os.Stat(conversion)
	if err == nil {
		err = os.Chmod(conversion, before.Mode().Perm())
	}
	if err != nil {
		os.Remove(conversion)
		db.ConvertError = err
		return db, nil
	}
	repaired, upgraded, dropped := db.Repaired, db.Upgraded, db.Dropped
	if err := db.Close(); err != nil {
		os.Remove(conversion)
		return nil, fmt.Errorf("closing %s before replacing it with its conversion: %w", db.Path, err)
	}
	if err := os.Rename(conversion, file); err != nil {
		os.Remove(conversion)
		return nil, fmt.Errorf("replacing %s with its conversion: %w", file, err)
	}
	converted, err := Open(ctx, db.Path, db.Schema, opt)
	if err != nil {
		return nil, err
	}
	converted.Repaired, converted.Upgraded, converted.Dropped = repaired, upgraded, dropped
	converted.Converted.From, converted.Converted.To = before.Size(), after.Size()
	return converted, nil
}

// convertFormat writes every table of the schema, with the schema's DDL and its rows in their
// order, and the load id sequence where it continues, into a new file at path in StorageVersion's
// format, and checks that each table has as many rows there. On an error the new file is removed
// and the database is as it was.
func (db *DB) convertFormat(ctx context.Context, path string) (err error) {
	for _, leftover := range []string{path, path + ".wal"} {
		if err := os.Remove(leftover); err != nil && !errors.Is(err, os.ErrNotExist) {
			return fmt.Errorf("removing %s, left by a conversion that did not finish: %w", leftover, err)
		}
	}
	if _, err := db.ExecContext(ctx, fmt.Sprintf("ATTACH %s AS %s (STORAGE_VERSION %s, ROW_GROUP_SIZE %d)",
		quote(path), convertCatalog, quote(StorageVersion), RowGroupRows)); err != nil {
		return fmt.Errorf("creating %s: %w", path, err)
	}
	defer func() {
		_, detachErr := db.ExecContext(context.WithoutCancel(ctx), "DETACH "+convertCatalog)
		if err = errors.Join(err, detachErr); err != nil {
			os.Remove(path)
			os.Remove(path + ".wal")
		}
	}()
	var next int64
	if err := db.QueryRowContext(ctx, "SELECT coalesce(last_value + increment_by, start_value) FROM duckdb_sequences() WHERE database_name = current_database() AND sequence_name = $1",
		LoadIDSequence).Scan(&next); err != nil {
		return fmt.Errorf("reading the load id sequence of %s: %w", db.Path, err)
	}
	// DDL takes no parameters; next is a number read just above.
	statements := []string{fmt.Sprintf("CREATE SEQUENCE %s.main.%s START WITH %d", convertCatalog, LoadIDSequence, next)}
	for _, t := range db.Schema {
		var stored []string
		for _, c := range t.Columns {
			if c.Generated == "" {
				stored = append(stored, `"`+c.Name+`"`)
			}
		}
		statements = append(statements,
			t.ddl(convertCatalog+".main."+t.Name, StorageVersion),
			fmt.Sprintf("INSERT INTO %s.main.%s BY NAME SELECT %s FROM %s", convertCatalog, t.Name, strings.Join(stored, ", "), t.Name))
	}
	for _, stmt := range statements {
		if _, err := db.ExecContext(ctx, stmt); err != nil {
			return fmt.Errorf("converting %s into %s: %w", db.Path, path, err)
		}
	}
	for _, t := range db.Schema {
		var have, copied int64
		if err := db.QueryRowContext(ctx, fmt.Sprintf("SELECT (SELECT count(*) FROM %s), (SELECT count(*) FROM %s.main.%s)", t.Name, convertCatalog, t.Name)).Scan(&have, &copied); err != nil {
			return fmt.Errorf("counting the rows of %s converted: %w", t.Name, err)
		}
		if have != copied {
			return fmt.Errorf("converting %s: %s has %d rows, its conversion %d", db.Path, t.Name, have, copied)
		}
	}
	if _, err := db.ExecContext(ctx, "CHECKPOINT "+convertCatalog); err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	return nil
}

// foreignObjects names what the database holds besides the schema's tables and the load id
// sequence ("" for nothing): tables, views, sequences, macros, indexes, types or schemas, which a
// conversion would not carry over.
func (db *DB) foreignObjects(ctx context.Context) (string, error) {
	var names []string
	for _, t := range db.Schema {
		names = append(names, t.Name)
	}
	var foreign sql.NullString
	err := db.QueryRowContext(ctx, `SELECT string_agg(kind || ' ' || name, ', ' ORDER BY kind, name) FROM (
	    SELECT 'table' AS kind, table_name AS name FROM duckdb_tables() WHERE database_name = current_database() AND NOT list_contains($1, table_name)
	    UNION ALL SELECT 'view', view_name FROM duckdb_views() WHERE database_name = current_database() AND NOT internal
	    UNION ALL SELECT 'sequence', sequence_name FROM duckdb_sequences() WHERE database_name = current_database() AND sequence_name <> $2
	    UNION ALL SELECT 'macro', function_name FROM duckdb_functions() WHERE database_name = current_database() AND NOT internal
	    UNION ALL SELECT 'index', index_name FROM duckdb_indexes() WHERE database_name = current_database()
	    UNION ALL SELECT 'type', type_name FROM duckdb_types() WHERE database_name = current_database() AND NOT internal
	    UNION ALL SELECT 'schema', schema_name FROM duckdb_schemas() WHERE database_name = current_database() AND NOT internal AND schema_name <> 'main')`,
		names, LoadIDSequence).Scan(&foreign)
	if err != nil {
		return "", fmt.Errorf("listing what %s holds: %w", db.Path, err)
	}
	return foreign.String, nil
}
