package cli

import "os"

// duckDBAllocatorEnv is the variable that DuckDB's allocator reads its options from: jemalloc,
// which DuckDB's Linux builds link in under the prefix duckdb_je_ (elsewhere DuckDB uses the
// system's malloc and the variable means nothing).
const duckDBAllocatorEnv = "DUCKDB_JE_MALLOC_CONF"

// DuckDBAllocatorConf is what SetDuckDBAllocator puts in $DUCKDB_JE_MALLOC_CONF when it is
// unset. DuckDB's own options keep the pages an operator frees for a second (dirty_decay_ms:1000)
// and then mark them "muzzy" (madvise MADV_FREE) for another second: the kernel takes those back
// only when short of memory, and all the while they count in the process's RSS, on top of a full
// 850MB pool. Over 30M events, election-lock-churn peaked at 1,220-1,567 MiB (median 1,414) with
// DuckDB's options and at 1,097-1,502 MiB (median 1,203) with these, watch-rewind at 1,210-1,612
// against 1,170-1,172 MiB, in about the same time (0-10% slower, within the machine's spread);
// returning every page at once (dirty_decay_ms:0) peaked lowest (1,068-1,110 MiB) but ran 25%
// slower (BENCHMARKS.md).
const DuckDBAllocatorConf = "dirty_decay_ms:100,muzzy_decay_ms:0"

// SetDuckDBAllocator sets $DUCKDB_JE_MALLOC_CONF to DuckDBAllocatorConf unless it is set: main
// calls it before DuckDB allocates anything (jemalloc reads it once), and so does
// kubesift-bench, whose measured loads run as kubesift does.
func SetDuckDBAllocator() {
	if _, set := os.LookupEnv(duckDBAllocatorEnv); !set {
		os.Setenv(duckDBAllocatorEnv, DuckDBAllocatorConf)
	}
}
