//go:build linux && cgo

package jemalloc

import (
	"testing"

	_ "github.com/duckdb/duckdb-go/v2" // links DuckDB, and with it its jemalloc
)

// TestConfigure: the options set are those read back, for arenas made later (the defaults) and for
// arena 0, made when jemalloc started; setting them again with other values changes them again.
func TestConfigure(t *testing.T) {
	for _, want := range []Options{
		{DirtyDecayMs: 100, MuzzyDecayMs: 0},
		{DirtyDecayMs: 1000, MuzzyDecayMs: 250},
	} {
		if err := Configure(want); err != nil {
			t.Fatal(err)
		}
		got, err := Read()
		if err != nil {
			t.Fatal(err)
		}
		if got != want {
			t.Errorf("Read() = %+v after Configure(%+v)", got, want)
		}
		dirty, muzzy, err := ArenaDecayMs(0)
		if err != nil {
			t.Fatal(err)
		}
		if dirty != want.DirtyDecayMs || muzzy != want.MuzzyDecayMs {
			t.Errorf("arena 0 decays after %d ms (dirty) and %d ms (muzzy), want %d and %d", dirty, muzzy, want.DirtyDecayMs, want.MuzzyDecayMs)
		}
	}
}
