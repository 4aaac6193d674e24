//go:build linux && cgo

package jemalloc

import (
	"database/sql"
	"os"
	"regexp"
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

// TestHugePages: after HugePages, the arenas it set map with its hook, and memory DuckDB allocates
// is mapped with MADV_HUGEPAGE, which the kernel shows as the flag "hg" of the mapping in
// /proc/self/smaps.
func TestHugePages(t *testing.T) {
	arenas, err := HugePages()
	if err != nil {
		t.Fatal(err)
	}
	if arenas == 0 {
		if mode, _ := os.ReadFile("/proc/sys/vm/overcommit_memory"); string(mode) == "2\n" {
			t.Skip("the kernel accounts memory strictly (vm.overcommit_memory 2): HugePages sets nothing")
		}
		t.Fatal("HugePages set no arena")
	}
	if n, err := HugePageArenas(); err != nil || n != arenas {
		t.Fatalf("%d arenas (%v) map with the advice; HugePages set %d", n, err, arenas)
	}
	db, err := sql.Open("duckdb", "")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	// a hash table of a million groups: hundreds of MiB, more than the arenas hold before
	var n int64
	if err := db.QueryRow(`SELECT count(*) FROM (SELECT i, count(*) FROM range(4000000) t(i) GROUP BY i)`).Scan(&n); err != nil {
		t.Fatal(err)
	}
	if HugePageBytes() == 0 {
		t.Fatal("no memory was mapped through the hook")
	}
	smaps, err := os.ReadFile("/proc/self/smaps")
	if err != nil {
		t.Fatal(err)
	}
	if !regexp.MustCompile(`(?m)^VmFlags:.* hg( |$)`).Match(smaps) {
		t.Errorf("no mapping of the process is advised for huge pages (%d bytes went through the hook)", HugePageBytes())
	}
}
