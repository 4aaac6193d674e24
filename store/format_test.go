package store

import (
	"context"
	"database/sql"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// documentsTable is a table of the two compressions a Column may name, and a column an older
// file stores that the schema computes (so that Open rewrites the older table before it converts
// the file).
var documentsTable = Table{Name: "documents", Evidence: "test", Columns: []Column{
	{Name: "name", Type: "VARCHAR", Doc: "a few distinct names", Compression: Vocabulary},
	{Name: "body", Type: "JSON", Doc: "a document", Compression: Documents},
	{Name: "name_length", Type: "BIGINT", Doc: "computed now (an older table stores it: Open rewrites it)", Generated: "length(name)"},
	{Name: "load_id", Type: "BIGINT", Doc: "the load"},
}}

// olderFile makes a database file in DuckDB's storage format named format, holding 5,000
// documents of load 7 (in ingest_files) and whatever stmts make, and returns its path.
func olderFile(t *testing.T, format string, stmts ...string) string {
	t.Helper()
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), format+".duckdb")
	plain, err := sql.Open("duckdb", "")
	if err != nil {
		t.Fatal(err)
	}
	defer plain.Close()
	for _, stmt := range slices.Concat([]string{
		fmt.Sprintf("ATTACH %s AS older (STORAGE_VERSION %s)", quote(path), quote(format)),
		"USE older",
		"CREATE TABLE documents (name VARCHAR, body JSON, name_length BIGINT, load_id BIGINT)",
		"INSERT INTO documents SELECT 'name-' || (i % 3), '{\"i\": ' || i || '}', 6, 7 FROM range(5000) r(i)",
		"CREATE TABLE ingest_files (load_id BIGINT, source_file VARCHAR)",
		"INSERT INTO ingest_files VALUES (7, 'old.log')",
	}, stmts, []string{"USE memory", "DETACH older"}) {
		if _, err := plain.ExecContext(ctx, stmt); err != nil {
			t.Fatalf("%s: %v", stmt, err)
		}
	}
	return path
}

// formatAndCompressions returns the storage format of db's file and the compressions of the
// documents' name and body segments.
func formatAndCompressions(t *testing.T, db *DB) (format, name, body string) {
	t.Helper()
	err := db.QueryRowContext(context.Background(), `SELECT (SELECT tags['storage_version'] FROM duckdb_databases() WHERE database_name = current_database()),
	        string_agg(DISTINCT compression, ' ' ORDER BY compression) FILTER (WHERE column_name = 'name'),
	        string_agg(DISTINCT compression, ' ' ORDER BY compression) FILTER (WHERE column_name = 'body')
	    FROM pragma_storage_info('documents') WHERE segment_type IN ('VARCHAR', 'JSON')`).Scan(&format, &name, &body)
	if err != nil {
		t.Fatal(err)
	}
	return format, name, body
}

// TestOpenConvertsAnOlderStorageFormat: a write open of a file in an older storage format of DuckDB
// (every file an older kubesift made is in v1.0.0's) upgrades its tables in that format, with the
// compressions it has (in v1.0.0's, dict_fsst would fail the rewrite; in v1.3.0's a dictionary is
// refused), then rewrites the file in StorageVersion's format: the rows in their order, the
// schema's compressions, the load id sequence where it was, nothing left beside it. A new file is
// made in that format.
func TestOpenConvertsAnOlderStorageFormat(t *testing.T) {
	ctx := context.Background()
	schema := NewSchema(documentsTable)
	for _, path := range []string{
		olderFile(t, "v1.0.0", "CREATE SEQUENCE load_ids START WITH 12"),
		olderFile(t, "v1.3.0", "CREATE SEQUENCE load_ids START WITH 12"),
		filepath.Join(t.TempDir(), "new.duckdb"),
	} {
		name := filepath.Base(path)
		older := name != "new.duckdb"
		db, err := Open(ctx, path, schema, Options{})
		if err != nil {
			t.Fatalf("opening %s: %v", name, err)
		}
		if db.ConvertError != nil || (db.Converted.From > 0) != older || (db.Converted.To > 0) != older {
			t.Errorf("%s: converted %+v, conversion error %v", name, db.Converted, db.ConvertError)
		}
		var next int64
		for _, stmt := range []string{
			"SELECT nextval('load_ids')",
			"INSERT INTO documents BY NAME SELECT 'name-' || (i % 3) AS name, '{\"i\": ' || (5000 + i) || '}' AS body, 12 AS load_id FROM range(5000) r(i)",
			"CHECKPOINT",
		} {
			if strings.HasPrefix(stmt, "SELECT") {
				err = db.QueryRowContext(ctx, stmt).Scan(&next)
			} else {
				_, err = db.ExecContext(ctx, stmt)
			}
			if err != nil {
				t.Fatalf("%s: %s: %v", name, stmt, err)
			}
		}
		var rows, inOrder, computed int64
		first := map[bool]int64{true: 0, false: 5000}[older] // the first document's i
		if err := db.QueryRowContext(ctx, `SELECT count(*), count(*) FILTER (WHERE body->>'i' = ($1 + rn - 1)::VARCHAR), count(*) FILTER (WHERE name_length = 6)
		    FROM (SELECT *, row_number() OVER () AS rn FROM documents)`, first).Scan(&rows, &inOrder, &computed); err != nil {
			t.Fatal(err)
		}
		format, nameCompression, bodyCompression := formatAndCompressions(t, db)
		db.Close()
		wantRows := map[bool]int64{true: 10000, false: 5000}[older]
		if format != StorageVersion+"+" || nameCompression != "DICT_FSST" || bodyCompression != "ZSTD" || rows != wantRows || inOrder != wantRows || computed != wantRows {
			t.Errorf("%s: format %s, name stored with %s, body with %s; %d rows, %d in their order, %d computed (want %s+, DICT_FSST, ZSTD, %d)",
				name, format, nameCompression, bodyCompression, rows, inOrder, computed, StorageVersion, wantRows)
		}
		if wantNext := map[bool]int64{true: 12, false: 1}[older]; next != wantNext {
			t.Errorf("%s: the load id sequence gave %d, want %d", name, next, wantNext)
		}
		if leftovers, _ := filepath.Glob(path + convertSuffix + "*"); len(leftovers) > 0 {
			t.Errorf("%s: left %v", name, leftovers)
		}
	}
}

// TestConversionKeepsTheLinkAndPermissions: a database opened through a symbolic link is converted
// where the link points, the link left a link, and the converted file keeps the file's permissions
// (audit logs are sensitive: 0600 stays 0600).
func TestConversionKeepsTheLinkAndPermissions(t *testing.T) {
	file := olderFile(t, "v1.0.0")
	if err := os.Chmod(file, 0o600); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(t.TempDir(), "link.duckdb")
	if err := os.Symlink(file, link); err != nil {
		t.Fatal(err)
	}
	db, err := Open(context.Background(), link, NewSchema(documentsTable), Options{})
	if err != nil {
		t.Fatal(err)
	}
	format, _, _ := formatAndCompressions(t, db)
	db.Close()
	linkInfo, err := os.Lstat(link)
	if err != nil {
		t.Fatal(err)
	}
	fileInfo, err := os.Stat(file)
	if err != nil {
		t.Fatal(err)
	}
	if format != StorageVersion+"+" || db.Converted.From == 0 || linkInfo.Mode()&os.ModeSymlink == 0 || fileInfo.Mode().Perm() != 0o600 {
		t.Errorf("format %s, converted %+v, link mode %v, file mode %v", format, db.Converted, linkInfo.Mode(), fileInfo.Mode())
	}
}

// TestOpenKeepsAnOlderFormatItCannotConvert: a file that holds what kubesift does not make (a table
// of the user's), or whose conversion fails (here, a directory where it would write), stays in its
// format, with the compressions that format has and the reason in ConvertError, and takes loads.
func TestOpenKeepsAnOlderFormatItCannotConvert(t *testing.T) {
	ctx := context.Background()
	schema := NewSchema(documentsTable)
	blocked := olderFile(t, "v1.0.0")
	if err := os.MkdirAll(filepath.Join(blocked+convertSuffix, "in-the-way"), 0o700); err != nil {
		t.Fatal(err)
	}
	for path, reason := range map[string]string{
		olderFile(t, "v1.0.0", "CREATE TABLE notes (note VARCHAR)"): "it holds table notes, which kubesift does not make",
		blocked: "left by a conversion that did not finish",
	} {
		for range 2 {
			db, err := Open(ctx, path, schema, Options{})
			if err != nil {
				t.Fatal(err)
			}
			if db.ConvertError == nil || !strings.Contains(db.ConvertError.Error(), reason) {
				t.Errorf("conversion error %v, want one saying %q", db.ConvertError, reason)
			}
			for _, stmt := range []string{"INSERT INTO documents BY NAME SELECT 'name-' || (i % 3) AS name FROM range(5000) r(i)", "CHECKPOINT"} {
				if _, err := db.ExecContext(ctx, stmt); err != nil {
					t.Fatalf("%s: %v", stmt, err)
				}
			}
			format, name, _ := formatAndCompressions(t, db)
			db.Close()
			if format != "v1.0.0+" || name != "Dictionary" {
				t.Errorf("format %s, name stored with %s (want v1.0.0+ and Dictionary)", format, name)
			}
		}
	}
}

// TestStorageVersionBefore reads DuckDB's names of storage formats; one it cannot read counts as
// older.
func TestStorageVersionBefore(t *testing.T) {
	for tag, want := range map[string]bool{"v1.0.0+": true, "v1.2.0+": true, "v1.4.3+": true, "v1.5.0+": false, "v1.5.2+": false, "v2.0.0+": false, "": true, "unknown": true} {
		if got := storageVersionBefore(tag, StorageVersion); got != want {
			t.Errorf("storageVersionBefore(%q, %q) = %v, want %v", tag, StorageVersion, got, want)
		}
	}
}
