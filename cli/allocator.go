package cli

import (
	"errors"
	"os"

	"github.com/kubesift/kubesift/internal/jemalloc"
)

// duckDBAllocatorEnv is the variable that DuckDB's allocator reads its options from when it starts:
// jemalloc, which DuckDB's Linux builds link in under the prefix duckdb_je_ (elsewhere DuckDB uses
// the system's malloc and the variable means nothing).
const duckDBAllocatorEnv = "DUCKDB_JE_MALLOC_CONF"

// DuckDBAllocator is what SetDuckDBAllocator sets unless $DUCKDB_JE_MALLOC_CONF is set. DuckDB's
// own options keep the pages an operator frees for a second (dirty_decay_ms:1000) and then mark
// them "muzzy" (madvise MADV_FREE) for another second: the kernel takes those back only when short
// of memory, and all the while they count in the process's RSS, on top of a full 850MB pool. These
// return freed pages after a tenth of a second, at once, and from jemalloc's background thread:
// without it an arena whose threads went idle keeps its freed pages (130-390 MiB for seconds at a
// time in traces of 30M events). At 30M events the highest peaks measured with DuckDB's own options
// were 1,716 MiB in analyze and 1,535-1,722 MiB in ingest; with these, 1,298 and 1,506 MiB, in about
// the same time (BENCHMARKS.md).
var DuckDBAllocator = jemalloc.Options{DirtyDecayMs: 100, MuzzyDecayMs: 0, BackgroundThread: true}

// SetDuckDBAllocator sets DuckDB's allocator to DuckDBAllocator unless $DUCKDB_JE_MALLOC_CONF is
// set (even to nothing: the user's choice, which jemalloc read when it started). It sets the
// options while the process runs (jemalloc reads the variable before main, when DuckDB's C++
// static constructors first allocate, so setting the variable from main would come too late). main
// calls it first, and so does kubesift-bench, whose measured loads run as kubesift does. Without
// jemalloc (DuckDB's builds for other systems) there is nothing to set.
func SetDuckDBAllocator() error {
	if _, set := os.LookupEnv(duckDBAllocatorEnv); set {
		return nil
	}
	if err := jemalloc.Configure(DuckDBAllocator); err != nil && !errors.Is(err, jemalloc.ErrNotLinked) {
		return err
	}
	return nil
}
