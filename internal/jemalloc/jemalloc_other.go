//go:build !linux || !cgo

package jemalloc

// Configure has nothing to set: DuckDB links jemalloc into its Linux builds only.
func Configure(Options) error { return ErrNotLinked }

// Read has nothing to read: DuckDB links jemalloc into its Linux builds only.
func Read() (Options, error) { return Options{}, ErrNotLinked }

// ArenaDecayMs has nothing to read: DuckDB links jemalloc into its Linux builds only.
func ArenaDecayMs(int) (dirty, muzzy int, err error) { return 0, 0, ErrNotLinked }

// BackgroundThread has nothing to read: DuckDB links jemalloc into its Linux builds only.
func BackgroundThread() (bool, error) { return false, ErrNotLinked }
