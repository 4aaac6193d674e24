package store

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"strings"
	"testing"
)

// hugePageRegions returns the sizes of the process's mappings of at least minBytes advised for
// transparent huge pages (VmFlags hg in /proc/self/smaps).
func hugePageRegions(t *testing.T, minBytes uint64) []uint64 {
	t.Helper()
	f, err := os.Open("/proc/self/smaps")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var sizes []uint64
	var size uint64
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		if fields := strings.Fields(line); len(fields) >= 5 && strings.Contains(fields[0], "-") && !strings.HasSuffix(fields[0], ":") {
			a, b, err := addressRange(fields[0])
			if err != nil {
				t.Fatalf("reading /proc/self/smaps: %v", err)
			}
			size = b - a
			continue
		}
		if flags, ok := strings.CutPrefix(line, "VmFlags:"); ok && size >= minBytes && strings.Contains(" "+flags+" ", " hg ") {
			sizes = append(sizes, size)
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return sizes
}

// TestSandboxPoolIsAdvisedHugePages: a sandbox with a block pool (blockPool) has its region
// advised for transparent huge pages while it is open, unless opened with SmallPages; one without
// a pool has none.
func TestSandboxPoolIsAdvisedHugePages(t *testing.T) {
	if _, err := os.Stat("/sys/kernel/mm/transparent_hugepage"); err != nil {
		t.Skipf("this kernel has no transparent huge pages: %v", err)
	}
	ctx := context.Background()
	path, size := emptyDatabaseFile(t)
	limit := 4 * size
	for _, readOnly := range []bool{true, false} {
		db, err := Open(ctx, path, testSchema, Options{MemoryLimit: fmt.Sprintf("%dKiB", limit>>10), ReadOnly: readOnly})
		if err != nil {
			t.Fatal(err)
		}
		sandbox, err := db.Sandboxed(ctx)
		if err != nil {
			t.Fatal(err)
		}
		advised := hugePageRegions(t, uint64(limit))
		if readOnly && len(advised) != 1 {
			t.Errorf("a sandbox with a block pool of %d bytes: mappings of that size or more advised huge pages: %v; want one, the pool's region", limit, advised)
		}
		if !readOnly && len(advised) != 0 {
			t.Errorf("a sandbox without a block pool: mappings advised huge pages: %v; want none", advised)
		}
		sandbox.Close()
		db.Close()
		if advised := hugePageRegions(t, uint64(limit)); len(advised) != 0 {
			t.Errorf("after the sandbox closed (read-only %v): mappings advised huge pages: %v; want none", readOnly, advised)
		}
	}
	// SmallPages (--huge-pages=false): the pool, but no advice
	inSandbox(t, path, Options{MemoryLimit: fmt.Sprintf("%dKiB", limit>>10), ReadOnly: true, SmallPages: true}, func(sandbox *Sandbox) {
		var pool string
		if err := sandbox.QueryRowContext(ctx, "SELECT current_setting('block_allocator_memory')").Scan(&pool); err != nil {
			t.Fatal(err)
		}
		if pool == "0 bytes" || pool == "" {
			t.Errorf("a sandbox in small pages: block_allocator_memory %q, want the pool all the same", pool)
		}
		if advised := hugePageRegions(t, uint64(limit)); len(advised) != 0 {
			t.Errorf("a sandbox with a block pool in small pages: mappings advised huge pages: %v; want none", advised)
		}
	})
}
