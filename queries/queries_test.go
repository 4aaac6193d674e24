package queries

import (
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestEveryQueryHasItsRule: queries/<id>.sql is the SQL of rules/<id>.yaml; a query without
// its rule is never run.
func TestEveryQueryHasItsRule(t *testing.T) {
	names, err := fs.Glob(files, "*.sql")
	if err != nil || len(names) == 0 {
		t.Fatalf("no embedded queries: %v", err)
	}
	for _, name := range names {
		if name == macrosFile {
			continue
		}
		id := strings.TrimSuffix(name, ".sql")
		if _, err := os.Stat(filepath.Join("..", "rules", id+".yaml")); err != nil {
			t.Errorf("queries/%s has no rule: %v", name, err)
		}
		if sql, ok := SQL(id); !ok || sql == "" {
			t.Errorf("SQL(%q) = %q, %v", id, sql, ok)
		}
	}
}
