package cli

import (
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/kubesift/kubesift/internal/jemalloc"
)

// TestSetDuckDBAllocator: with $DUCKDB_JE_MALLOC_CONF set (even to nothing) the allocator keeps the
// options it has (DuckDB's own, set first); unset, it runs with duckDBAllocator, arena 0 (made when
// it started) included. Run in this process, whose DuckDB allocator is the one it sets.
func TestSetDuckDBAllocator(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("DuckDB links jemalloc into its Linux builds only")
	}
	before := jemalloc.Options{DirtyDecayMs: 1000, MuzzyDecayMs: 1000} // DuckDB's own
	if err := jemalloc.Configure(before); err != nil {
		t.Fatal(err)
	}
	for _, value := range []string{"dirty_decay_ms:5000", ""} {
		t.Setenv(duckDBAllocatorEnv, value) // restored after the test
		if err := SetDuckDBAllocator(); err != nil {
			t.Fatal(err)
		}
		if got, err := jemalloc.Read(); err != nil || got != before {
			t.Errorf("$%s=%q: the allocator runs with %+v (%v), want it left at %+v", duckDBAllocatorEnv, value, got, err, before)
		}
	}
	os.Unsetenv(duckDBAllocatorEnv)
	if err := SetDuckDBAllocator(); err != nil {
		t.Fatal(err)
	}
	if got, err := jemalloc.Read(); err != nil || got != duckDBAllocator {
		t.Errorf("the allocator runs with %+v (%v), want %+v", got, err, duckDBAllocator)
	}
	if dirty, muzzy, err := jemalloc.ArenaDecayMs(0); err != nil || dirty != duckDBAllocator.DirtyDecayMs || muzzy != duckDBAllocator.MuzzyDecayMs {
		t.Errorf("arena 0 decays after %d and %d ms (%v), want %d and %d", dirty, muzzy, err, duckDBAllocator.DirtyDecayMs, duckDBAllocator.MuzzyDecayMs)
	}
}

// TestDuckDBAllocatorEnv: a user's $DUCKDB_JE_MALLOC_CONF (README: the lowest peak, returning
// every page at once) reaches DuckDB's jemalloc, over DuckDB's own options, and none of it is
// rejected (jemalloc's confirm_conf prints each option as it is set, and each one it rejects).
func TestDuckDBAllocatorEnv(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("DuckDB links jemalloc into its Linux builds only")
	}
	const conf = "dirty_decay_ms:0,muzzy_decay_ms:0"
	cmd := kubesift("ingest", "-q", "--db", filepath.Join(t.TempDir(), "x.duckdb"), "../samples/healthy/audit.log")
	cmd.Env = append(cmd.Env, duckDBAllocatorEnv+"="+conf+",confirm_conf:true")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	confirmed := string(out)
	if strings.Contains(confirmed, "Invalid conf") {
		t.Fatalf("jemalloc rejected an option:\n%s", confirmed)
	}
	fromEnv := strings.Index(confirmed, "environment variable")
	if fromEnv < 0 {
		t.Fatalf("jemalloc did not read $%s (is it still linked into DuckDB?):\n%s", duckDBAllocatorEnv, confirmed)
	}
	for _, option := range strings.Split(conf, ",") {
		if !strings.Contains(confirmed[fromEnv:], "Set conf value: "+option+"\n") {
			t.Errorf("option %s not set from $%s:\n%s", option, duckDBAllocatorEnv, confirmed)
		}
	}
}

// TestAllocatorSettling: ingest's Settling sets settlingAllocator for a file of settlingMinBytes,
// arena 0 included, and what it returns sets duckDBAllocator again; a smaller file is left alone;
// with $DUCKDB_JE_MALLOC_CONF set there is none (the user's options stay while files are settled too).
func TestAllocatorSettling(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("DuckDB links jemalloc into its Linux builds only")
	}
	t.Setenv(duckDBAllocatorEnv, "") // restored after the test
	if allocatorSettling(io.Discard) != nil {
		t.Errorf("with $%s set: a Settling, want none", duckDBAllocatorEnv)
	}
	os.Unsetenv(duckDBAllocatorEnv)
	if err := jemalloc.Configure(duckDBAllocator); err != nil {
		t.Fatal(err)
	}
	runsWith := func(when string, want jemalloc.Options) {
		t.Helper()
		if got, err := jemalloc.Read(); err != nil || got != want {
			t.Errorf("%s: the allocator runs with %+v (%v), want %+v", when, got, err, want)
		}
		if dirty, muzzy, err := jemalloc.ArenaDecayMs(0); err != nil || dirty != want.DirtyDecayMs || muzzy != want.MuzzyDecayMs {
			t.Errorf("%s: arena 0 decays after %d and %d ms (%v), want %d and %d", when, dirty, muzzy, err, want.DirtyDecayMs, want.MuzzyDecayMs)
		}
	}
	var warnings strings.Builder
	settling := allocatorSettling(&warnings)
	if settling == nil {
		t.Fatalf("without $%s: no Settling", duckDBAllocatorEnv)
	}
	if done := settling(settlingMinBytes - 1); done != nil {
		t.Errorf("a file of %d bytes settled, want it left alone", settlingMinBytes-1)
	}
	runsWith("a smaller file settling", duckDBAllocator)
	done := settling(settlingMinBytes)
	if done == nil {
		t.Fatalf("a file of %d bytes not settled", settlingMinBytes)
	}
	runsWith("settling", settlingAllocator)
	done()
	runsWith("settled", duckDBAllocator)
	if warnings.Len() > 0 {
		t.Errorf("warnings: %s", warnings.String())
	}
}
