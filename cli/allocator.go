package cli

import (
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/kubesift/kubesift/internal/jemalloc"
)

// duckDBAllocatorEnv is the variable that DuckDB's allocator reads its options from when it starts:
// jemalloc, which DuckDB's Linux builds link in under the prefix duckdb_je_ (elsewhere DuckDB uses
// the system's malloc and the variable means nothing).
const duckDBAllocatorEnv = "DUCKDB_JE_MALLOC_CONF"

// duckDBAllocator is what SetDuckDBAllocator sets unless $DUCKDB_JE_MALLOC_CONF is set. DuckDB's
// own options keep the pages an operator frees for a second (dirty_decay_ms:1000) and then mark
// them "muzzy" (madvise MADV_FREE) for another second: the kernel takes those back only when short
// of memory, and all the while they count in the process's RSS, on top of a full 850MB pool. These
// return freed pages after that second, and at once, through jemalloc's background thread
// (store.Open and every sandbox turn it on), so that neither the threads that allocate next nor
// the arenas of idle threads keep them. From 2026-11-28 to 2026-12-01 the pages went back after a
// tenth of a second, with no background thread: the threads that allocated next returned pages
// and faulted them in again. All rules took 71.2-72.5 s that way and 50.1-58.6 s this way over 10M
// events of the recordings, 92.5-109.9 s and 80.6-84.6 s over 30M of the independent mix, at the
// same highest peaks (1,110-1,459 and 1,126-1,131 MiB; 1,205-1,206 and 1,185-1,205 MiB); a
// second without the background thread took 55.3-71.5 s at 10M (BENCHMARKS.md).
var duckDBAllocator = jemalloc.Options{DirtyDecayMs: 1000, MuzzyDecayMs: 0}

// SetDuckDBAllocator sets DuckDB's allocator to duckDBAllocator unless $DUCKDB_JE_MALLOC_CONF is
// set (even to nothing: the user's choice, which jemalloc read when it started). It sets the
// options while the process runs (jemalloc reads the variable before main, when DuckDB's C++
// static constructors first allocate, so setting the variable from main would come too late). main
// calls it first, and so does kubesift-bench, whose measured loads run as kubesift does. Without
// jemalloc (DuckDB's builds for other systems) there is nothing to set.
func SetDuckDBAllocator() error {
	if _, set := os.LookupEnv(duckDBAllocatorEnv); set {
		return nil
	}
	if err := jemalloc.Configure(duckDBAllocator); err != nil && !errors.Is(err, jemalloc.ErrNotLinked) {
		return fmt.Errorf("setting DuckDB's allocator (it keeps its own options): %w", err)
	}
	return nil
}

// settlingAllocator is what DuckDB's allocator is set to while ingest checks a file's rows and
// commits them (ingest.Options.Settling): freed pages go back to the system at once, those of
// arenas whose threads have gone idle included. In those queries (rejected rows, duplicates,
// the endpoint states held back) the pages DuckDB frees stayed in idle arenas, 130-514 MiB over a
// full pool in traces of 30M events in one file: with it that load peaked at 1,303-1,344 MiB
// instead of 1,493-1,606 MiB, its settling 8-10 s slower (30.5-32.7 against 22.7-23.2 s, of
// 320-420 s); 10M events at 1,148-1,155 instead of 1,294-1,319 MiB. The load itself keeps
// duckDBAllocator: returning every page at once there cost 12% (BENCHMARKS.md).
var settlingAllocator = jemalloc.Options{DirtyDecayMs: 0, MuzzyDecayMs: 0}

// settlingMinBytes is the smallest file (bytes read, decompressed) whose settling sets
// settlingAllocator. Below it the peak stays far under 1.5 GiB and settling barely lowered it (one
// file of 1M events, 891 MB: 458-461 against 461-468 MiB; ten files of 85 MB: 498 against 517-544
// MiB), while over many small files it cost time: samples/ (361 files) loaded in 17.2-19.8 s
// instead of 14.4-17.6 s, with 4.2-4.8 s of system time instead of 2.5-2.9 (BENCHMARKS.md).
const settlingMinBytes = 1 << 30

// allocatorSettling returns ingest's Settling, which for a file of settlingMinBytes or more sets
// settlingAllocator and then duckDBAllocator again, printing a warning to w when it cannot; nil
// when $DUCKDB_JE_MALLOC_CONF is set (the user's options stay) or DuckDB's build has no jemalloc.
func allocatorSettling(w io.Writer) func(readBytes int64) (done func()) {
	if _, set := os.LookupEnv(duckDBAllocatorEnv); set {
		return nil
	}
	if _, err := jemalloc.Read(); errors.Is(err, jemalloc.ErrNotLinked) {
		return nil
	}
	set := func(opt jemalloc.Options) {
		if err := jemalloc.Configure(opt); err != nil {
			fmt.Fprintf(w, "warning: setting DuckDB's allocator: %v\n", err)
		}
	}
	return func(readBytes int64) func() {
		if readBytes < settlingMinBytes {
			return nil
		}
		set(settlingAllocator)
		return func() { set(duckDBAllocator) }
	}
}
