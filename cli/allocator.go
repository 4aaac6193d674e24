package cli

import (
	"errors"
	"fmt"
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
// return freed pages after a tenth of a second, and at once. Over 30M events the highest peaks
// measured in analyze were 1,716 MiB with DuckDB's options and 1,475 MiB with these, in about the
// same time; ingest's were about the same either way (1,535-1,722 against 1,506-1,673 MiB), its
// highest in phases where an arena's threads go idle and keep their freed pages (BENCHMARKS.md).
var duckDBAllocator = jemalloc.Options{DirtyDecayMs: 100, MuzzyDecayMs: 0}

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
