package jemalloc

import "errors"

// ErrNotLinked reports that DuckDB's build has no jemalloc (it then uses the system's malloc).
var ErrNotLinked = errors.New("DuckDB's build links no jemalloc")

// Options are the allocator options Configure sets and Read reports.
type Options struct {
	DirtyDecayMs int // how long freed pages stay in the process before they are returned
	MuzzyDecayMs int // how long returned pages stay marked MADV_FREE (0: returned with MADV_DONTNEED at once)
}
