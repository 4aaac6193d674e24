package store

import (
	"bufio"
	"fmt"
	"os"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// anonRegion is a private anonymous read-write mapping of the process: [start, end).
type anonRegion struct{ start, end uintptr }

// anonRegions returns the process's private anonymous read-write mappings of at least minBytes.
func anonRegions(minBytes uint64) ([]anonRegion, error) {
	f, err := os.Open("/proc/self/maps")
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var out []anonRegion
	sc := bufio.NewScanner(f)
	for line := 1; sc.Scan(); line++ {
		// address perms offset dev inode [path]: an anonymous mapping has no path
		fields := strings.Fields(sc.Text())
		if len(fields) != 5 || fields[1] != "rw-p" || fields[4] != "0" {
			continue
		}
		a, b, err := addressRange(fields[0])
		if err != nil {
			return nil, fmt.Errorf("reading /proc/self/maps line %d: %w", line, err)
		}
		if b-a >= minBytes {
			out = append(out, anonRegion{uintptr(a), uintptr(b)})
		}
	}
	return out, sc.Err()
}

// addressRange reads the start-end field of a line of /proc/self/maps (or smaps), in hexadecimal.
func addressRange(field string) (start, end uint64, err error) {
	a, b, ok := strings.Cut(field, "-")
	if !ok {
		return 0, 0, fmt.Errorf("address range %q has no '-'", field)
	}
	if start, err = strconv.ParseUint(a, 16, 64); err == nil {
		end, err = strconv.ParseUint(b, 16, 64)
	}
	if err != nil {
		return 0, 0, fmt.Errorf("address range %q: %w", field, err)
	}
	return start, end, nil
}

// hugePagesForNewRegion notes the process's mappings of at least minBytes and returns a function
// that, called once an instance has opened, advises transparent huge pages (MADV_HUGEPAGE) on the
// largest mapping that appeared meanwhile: the virtual region DuckDB reserves for its block pool
// (block_allocator_memory; the region is as large as DuckDB's default memory limit, of which the
// pool uses the limit set). The pool hands out each block's memory faulted in page by page on its
// first use, on a virtual machine about 17 µs a 4 KiB page: an analysis of 10M events fills an
// 850 MB pool with 217,600 faults, where huge pages take 425. It is a hint, so a failure (no
// /proc, a kernel without transparent huge pages) only leaves the pool in small pages; where
// they are off, nothing changes.
func hugePagesForNewRegion(minBytes uint64) (advise func()) {
	before, err := anonRegions(minBytes)
	if err != nil {
		return func() {}
	}
	return func() {
		after, err := anonRegions(minBytes)
		if err != nil {
			return
		}
		seen := make(map[anonRegion]bool, len(before))
		for _, r := range before {
			seen[r] = true
		}
		var region anonRegion
		for _, r := range after {
			if !seen[r] && r.end-r.start > region.end-region.start {
				region = r
			}
		}
		if region.end != 0 {
			// unix.Madvise takes a []byte, which memory Go does not own cannot be made into
			unix.Syscall(unix.SYS_MADVISE, region.start, region.end-region.start, unix.MADV_HUGEPAGE)
		}
	}
}
