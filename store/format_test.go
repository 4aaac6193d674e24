package store

import (
	"context"
	"database/sql"
	"fmt"
	"path/filepath"
	"testing"
)

// TestOlderStorageFormatKeepsItsFormat: a file in an older storage format of DuckDB (every file an
// older kubesift made is in v1.0.0's) is not converted by a write open, and the tables Open creates
// or rewrites in it are declared with the compressions that format has: in v1.0.0's, dict_fsst
// would fail the open; in v1.3.0's, which has it, a dictionary would store new rows uncompressed.
// A new file is made in StorageVersion's format, with the schema's compressions.
func TestOlderStorageFormatKeepsItsFormat(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	olderFile := func(format string) string {
		path := filepath.Join(dir, format+".duckdb")
		plain, err := sql.Open("duckdb", "")
		if err != nil {
			t.Fatal(err)
		}
		defer plain.Close()
		for _, stmt := range []string{
			fmt.Sprintf("ATTACH %s AS older (STORAGE_VERSION %s)", quote(path), quote(format)),
			"CREATE TABLE older.documents (name VARCHAR, body JSON, name_length BIGINT)",
			"INSERT INTO older.documents SELECT 'name-' || (i % 3), '{\"i\": ' || i || '}', 6 FROM range(5000) r(i)",
			"DETACH older",
		} {
			if _, err := plain.ExecContext(ctx, stmt); err != nil {
				t.Fatalf("%s: %v", stmt, err)
			}
		}
		return path
	}
	documents := Table{Name: "documents", Evidence: "test", Columns: []Column{
		{Name: "name", Type: "VARCHAR", Doc: "a few distinct names", Compression: Vocabulary},
		{Name: "body", Type: "JSON", Doc: "a document", Compression: Documents},
		{Name: "name_length", Type: "BIGINT", Doc: "computed now (an older table stores it: Open rewrites it)", Generated: "length(name)"},
	}}
	schema := NewSchema(documents)
	for _, c := range []struct {
		path, format string
		name, body   string // the compressions of the columns' segments; "" for DuckDB's choice
	}{
		{olderFile("v1.0.0"), "v1.0.0+", "Dictionary", ""},
		{olderFile("v1.3.0"), "v1.3.0+", "DICT_FSST", "ZSTD"},
		{filepath.Join(dir, "new.duckdb"), StorageVersion + "+", "DICT_FSST", "ZSTD"},
	} {
		db, err := Open(ctx, c.path, schema, Options{})
		if err != nil {
			t.Fatalf("opening %s: %v", c.path, err)
		}
		for _, stmt := range []string{
			"INSERT INTO documents BY NAME SELECT 'name-' || (i % 3) AS name, '{\"i\": ' || i || '}' AS body FROM range(5000) r(i)",
			"CHECKPOINT",
		} {
			if _, err := db.ExecContext(ctx, stmt); err != nil {
				t.Fatalf("%s: %s: %v", c.path, stmt, err)
			}
		}
		var format, name, body string
		err = db.QueryRowContext(ctx, `SELECT (SELECT tags['storage_version'] FROM duckdb_databases() WHERE database_name = current_database()),
		        string_agg(DISTINCT compression, ' ' ORDER BY compression) FILTER (WHERE column_name = 'name'),
		        string_agg(DISTINCT compression, ' ' ORDER BY compression) FILTER (WHERE column_name = 'body')
		    FROM pragma_storage_info('documents') WHERE segment_type IN ('VARCHAR', 'JSON')`).Scan(&format, &name, &body)
		db.Close()
		if err != nil {
			t.Fatal(err)
		}
		if format != c.format || name != c.name || (c.body != "" && body != c.body) {
			t.Errorf("%s: format %s (want %s), name stored with %s (want %s), body with %s (want %s)",
				filepath.Base(c.path), format, c.format, name, c.name, body, c.body)
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
