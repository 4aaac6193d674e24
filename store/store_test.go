package store

import (
	"context"
	"os"
	"strings"
	"testing"
)

// An in-memory database spills into a private directory of its own, never into ".tmp" under the
// working directory (which may be read-only, or the user's checkout), and removes it on Close.
func TestInMemorySpillsIntoAPrivateDirectory(t *testing.T) {
	ctx := context.Background()
	cwd := t.TempDir()
	t.Chdir(cwd)
	db, err := Open(ctx, InMemory, testSchema, Options{MemoryLimit: "64MB"})
	if err != nil {
		t.Fatal(err)
	}
	spill := db.TempDir()
	var setting string
	if err := db.QueryRowContext(ctx, "SELECT current_setting('temp_directory')").Scan(&setting); err != nil {
		t.Fatal(err)
	}
	if setting != spill || spill == "" || strings.HasPrefix(spill, cwd) {
		t.Fatalf("temp_directory = %q, TempDir = %q: want a private directory outside %s", setting, spill, cwd)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(spill); !os.IsNotExist(err) {
		t.Errorf("spill directory %s still there after Close (%v)", spill, err)
	}
}
