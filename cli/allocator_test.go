package cli

import (
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// TestSetDuckDBAllocator: DuckDBAllocatorConf unless $DUCKDB_JE_MALLOC_CONF is set, even to
// nothing, which is left to the user.
func TestSetDuckDBAllocator(t *testing.T) {
	for _, tt := range []struct {
		name, value string
		set         bool
		want        string
	}{
		{"unset", "", false, DuckDBAllocatorConf},
		{"set", "dirty_decay_ms:5000", true, "dirty_decay_ms:5000"},
		{"set empty", "", true, ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Setenv(duckDBAllocatorEnv, tt.value) // restores the variable after the test
			if !tt.set {
				os.Unsetenv(duckDBAllocatorEnv)
			}
			SetDuckDBAllocator()
			if got := os.Getenv(duckDBAllocatorEnv); got != tt.want {
				t.Errorf("$%s = %q, want %q", duckDBAllocatorEnv, got, tt.want)
			}
		})
	}
}

// TestDuckDBAllocatorConfApplies: DuckDB's jemalloc (Linux builds) takes every option of
// DuckDBAllocatorConf from the variable, over DuckDB's own options, and rejects none of them
// (jemalloc's confirm_conf prints each option as it is set, and each one it rejects).
func TestDuckDBAllocatorConfApplies(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("DuckDB links jemalloc into its Linux builds only")
	}
	cmd := kubesift("ingest", "-q", "--db", filepath.Join(t.TempDir(), "x.duckdb"), "../samples/healthy/audit.log")
	cmd.Env = append(cmd.Env, duckDBAllocatorEnv+"="+DuckDBAllocatorConf+",confirm_conf:true")
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
	for _, option := range strings.Split(DuckDBAllocatorConf, ",") {
		if !strings.Contains(confirmed[fromEnv:], "Set conf value: "+option+"\n") {
			t.Errorf("option %s not set from $%s:\n%s", option, duckDBAllocatorEnv, confirmed)
		}
	}
}
