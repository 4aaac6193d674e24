package cli

import (
	"fmt"

	"github.com/dustin/go-humanize"

	"github.com/kubesift/kubesift/store"
)

// containerReserveBytes is the memory kubesift takes beside DuckDB's memory limit at most: the Go
// heap (held to 160 MiB while files load), DuckDB's memory outside its buffer pool, the block
// pool's pages. All rules over the recordings at 10M events peaked at 707, 891 and 1,296 MiB under
// --memory-limit 300MB, 500MB and 850MB, and 14.3 GB of them loaded at 1,248 MiB under 850MB: 410
// to 490 MiB beside the limit; the reserve leaves room over that (BENCHMARKS.md, "A container's
// memory limit").
const containerReserveBytes = 640 << 20

// minFittedMemoryLimitBytes is the least memory limit kubesift gives DuckDB to fit a container:
// every rule finishes under 200MB over 30M events (BENCHMARKS.md).
const minFittedMemoryLimitBytes = 200 << 20

// fittedMemoryLimit returns DuckDB's memory limit for a process whose container (its memory
// cgroup) allows it containerBytes, when --memory-limit is not given: the default when it fits
// beside containerReserveBytes, else the container's limit less that reserve, at least
// minFittedMemoryLimitBytes; fitted reports the second. A container that allowed 1 GiB killed
// an analysis of 10M events under the default (its peak is 1.3 GiB).
func fittedMemoryLimit(containerBytes uint64) (limit string, fitted bool) {
	def, err := store.ParseMemoryLimit(store.DefaultMemoryLimit)
	if err != nil {
		panic(err)
	}
	if containerBytes >= def+containerReserveBytes {
		return store.DefaultMemoryLimit, false
	}
	n := uint64(minFittedMemoryLimitBytes)
	if containerBytes > n+containerReserveBytes {
		n = containerBytes - containerReserveBytes
	}
	return fmt.Sprintf("%dMiB", n>>20), true
}

// duckDBMemoryLimit returns the memory limit to open DuckDB with: --memory-limit when given, else
// the default fitted to the container's memory limit (fittedMemoryLimit), which it says once on
// stderr when it is lower.
func (c *commonFlags) duckDBMemoryLimit() string {
	if c.flags.Changed("memory-limit") || c.containerMemory == nil || c.containerChecked {
		return c.memoryLimit
	}
	c.containerChecked = true
	container, err := c.containerMemory()
	if err != nil { // no limit, or no cgroup to read one from: nothing to fit
		return c.memoryLimit
	}
	if limit, fitted := fittedMemoryLimit(container); fitted {
		c.memoryLimit = limit
		fmt.Fprintf(c.stderr, "kubesift: this container may use %s of memory: DuckDB's memory limit is %s instead of %s, to leave kubesift the %s it needs beside it (--memory-limit sets it)\n",
			humanize.IBytes(container), limit, store.DefaultMemoryLimit, humanize.IBytes(containerReserveBytes))
	}
	return c.memoryLimit
}
