package cli

import (
	"fmt"
	"os"
	"runtime"
	"syscall"
)

// duckDBAllocatorEnv is the variable that DuckDB's allocator reads its options from: jemalloc,
// which DuckDB's Linux builds link in under the prefix duckdb_je_ (elsewhere DuckDB uses the
// system's malloc and the variable means nothing).
const duckDBAllocatorEnv = "DUCKDB_JE_MALLOC_CONF"

// DuckDBAllocatorConf is what SetDuckDBAllocator puts in $DUCKDB_JE_MALLOC_CONF when it is
// unset. DuckDB's own options keep the pages an operator frees for a second (dirty_decay_ms:1000)
// and then mark them "muzzy" (madvise MADV_FREE) for another second: the kernel takes those back
// only when short of memory, and all the while they count in the process's RSS, on top of a full
// 850MB pool. With these options, freed pages go back to the system after a tenth of a second
// (BENCHMARKS.md has the peaks with either).
const DuckDBAllocatorConf = "dirty_decay_ms:100,muzzy_decay_ms:0"

// selfExe is the running executable, which still opens when its file was replaced or removed
// (an upgrade under a running CronJob).
const selfExe = "/proc/self/exe"

// SetDuckDBAllocator makes DuckDB's allocator run with DuckDBAllocatorConf unless
// $DUCKDB_JE_MALLOC_CONF is set (even to nothing: the user's choice). jemalloc reads the variable
// once, when it starts, and it starts before main: DuckDB's C++ static constructors allocate.
// Setting the variable in the running process comes too late, so on Linux, where DuckDB links
// jemalloc, the process executes itself again with the variable set: the same PID, arguments,
// open files and signal handling. main calls it before anything else, and so does kubesift-bench,
// whose measured loads run as kubesift does. It returns only when the process goes on as it is:
// nil when nothing was to be done, or why it could not execute itself (the process then runs with
// DuckDB's own options).
func SetDuckDBAllocator() error {
	if runtime.GOOS != "linux" {
		return nil
	}
	if _, set := os.LookupEnv(duckDBAllocatorEnv); set {
		return nil
	}
	env := append(os.Environ(), duckDBAllocatorEnv+"="+DuckDBAllocatorConf)
	err := syscall.Exec(selfExe, os.Args, env)
	return fmt.Errorf("executing %s again with $%s=%s: %w", selfExe, duckDBAllocatorEnv, DuckDBAllocatorConf, err)
}
