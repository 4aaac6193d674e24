package cli

import (
	"errors"
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
// 850MB pool. These options return freed pages after a tenth of a second, at once, and from
// jemalloc's background thread: without it an arena whose threads went idle keeps its freed pages
// (130-390 MiB for seconds at a time in traces of 30M events). At 30M events the highest peaks
// measured with DuckDB's own options were 1,645-1,716 MiB in analyze and 1,535-1,722 MiB in ingest;
// with these, 1,298 and 1,506 MiB, in about the same time (BENCHMARKS.md).
const DuckDBAllocatorConf = "dirty_decay_ms:100,muzzy_decay_ms:0,background_thread:true"

// selfExe is the running executable, which still opens when its file was replaced or removed
// (an upgrade under a running CronJob); a process executed through it is named "exe" in ps and
// top, so SetDuckDBAllocator uses it only when the executable's path no longer runs.
const selfExe = "/proc/self/exe"

// SetDuckDBAllocator makes DuckDB's allocator run with DuckDBAllocatorConf unless
// $DUCKDB_JE_MALLOC_CONF is set (even to nothing: the user's choice). jemalloc reads the variable
// once, when it starts, and it starts before main: DuckDB's C++ static constructors allocate.
// Setting the variable in the running process comes too late, so on Linux, where DuckDB links
// jemalloc, the process executes itself again with the variable set: the same PID, name,
// arguments, open files and signal handling. main calls it before anything else, and so does
// kubesift-bench, whose measured loads run as kubesift does. It returns only when the process goes
// on as it is: nil when nothing was to be done, or why it could not execute itself (the process
// then runs with DuckDB's own options).
func SetDuckDBAllocator() error {
	if runtime.GOOS != "linux" {
		return nil
	}
	if _, set := os.LookupEnv(duckDBAllocatorEnv); set {
		return nil
	}
	env := append(os.Environ(), duckDBAllocatorEnv+"="+DuckDBAllocatorConf)
	var errs []error
	if exe, err := os.Executable(); err == nil {
		errs = append(errs, syscall.Exec(exe, os.Args, env))
	}
	errs = append(errs, syscall.Exec(selfExe, os.Args, env))
	return fmt.Errorf("executing kubesift again with $%s=%s: %w", duckDBAllocatorEnv, DuckDBAllocatorConf, errors.Join(errs...))
}
