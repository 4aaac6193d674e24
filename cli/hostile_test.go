package cli

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// TestHostileDirectoryIsPartial: a directory holding a FIFO and a dangling symlink beside a
// good audit log loads the log, skips the FIFO (without hanging on it) and exits partial,
// naming the entry it could not read.
func TestHostileDirectoryIsPartial(t *testing.T) {
	dir := t.TempDir()
	data, err := os.ReadFile("../ingest/testdata/audit-v1.good.log")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "audit.log"), data, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mkfifo(filepath.Join(dir, "pipe"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("gone", filepath.Join(dir, "dangling")); err != nil {
		t.Fatal(err)
	}
	db := filepath.Join(t.TempDir(), "k.duckdb")
	r := runCLI(t, "ingest", "--db", db, dir)
	if r.code != ExitPartial || !strings.Contains(r.stderr, filepath.Join(dir, "dangling")) {
		t.Fatalf("exit %d, stderr %q; want %d naming the dangling symlink", r.code, r.stderr, ExitPartial)
	}
	if !strings.Contains(r.stderr, "pipe: skipped: not a regular file") || !strings.Contains(r.stderr, "audit.log: audit, 6 rows loaded") {
		t.Errorf("stderr %q does not show the log loaded and the FIFO skipped", r.stderr)
	}
}
