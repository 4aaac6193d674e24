package cli

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
)

// allocatorChild is the KUBESIFT_TEST_MAIN mode in which the test binary calls SetDuckDBAllocator
// and prints $DUCKDB_JE_MALLOC_CONF as the process started with it (runAllocatorChild).
const allocatorChild = "allocator"

// runAllocatorChild calls SetDuckDBAllocator as main does, then prints the process's PID, its name
// (as ps shows it) and what
// its initial environment (/proc/self/environ: what jemalloc read when it started) holds for
// $DUCKDB_JE_MALLOC_CONF: "unset" or "=value". Setting the variable in the running process leaves
// that environment as it was; only a process that started with the variable has it there.
func runAllocatorChild() {
	if err := SetDuckDBAllocator(); err != nil {
		fmt.Println("error:", err)
		os.Exit(1)
	}
	initial, err := os.ReadFile("/proc/self/environ")
	if err != nil {
		fmt.Println("error:", err)
		os.Exit(1)
	}
	value := "unset"
	for _, kv := range bytes.Split(initial, []byte{0}) {
		if v, ok := bytes.CutPrefix(kv, []byte(duckDBAllocatorEnv+"=")); ok {
			value = "=" + string(v)
		}
	}
	comm, err := os.ReadFile("/proc/self/comm")
	if err != nil {
		fmt.Println("error:", err)
		os.Exit(1)
	}
	fmt.Println(os.Getpid(), strings.TrimSpace(string(comm)), value)
	os.Exit(0)
}

// TestSetDuckDBAllocator: a process started without $DUCKDB_JE_MALLOC_CONF runs on (same PID and
// name) with
// DuckDBAllocatorConf in the environment it started with, the one jemalloc reads; a process started
// with the variable set, even to nothing, keeps it.
func TestSetDuckDBAllocator(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("DuckDB links jemalloc into its Linux builds only")
	}
	for _, tt := range []struct {
		name, value string
		set         bool
		want        string
	}{
		{"unset", "", false, "=" + DuckDBAllocatorConf},
		{"set", "dirty_decay_ms:5000", true, "=dirty_decay_ms:5000"},
		{"set empty", "", true, "="},
	} {
		t.Run(tt.name, func(t *testing.T) {
			cmd := exec.Command(os.Args[0])
			cmd.Env = slices.DeleteFunc(os.Environ(), func(kv string) bool {
				return strings.HasPrefix(kv, duckDBAllocatorEnv+"=")
			})
			cmd.Env = append(cmd.Env, "KUBESIFT_TEST_MAIN="+allocatorChild)
			if tt.set {
				cmd.Env = append(cmd.Env, duckDBAllocatorEnv+"="+tt.value)
			}
			var stdout, stderr bytes.Buffer
			cmd.Stdout, cmd.Stderr = &stdout, &stderr
			if err := cmd.Run(); err != nil {
				t.Fatalf("%v: %s%s", err, stdout.Bytes(), stderr.Bytes())
			}
			var pid int
			var name, got string
			if _, err := fmt.Sscan(stdout.String(), &pid, &name, &got); err != nil {
				t.Fatalf("child printed %q: %v", stdout.Bytes(), err)
			}
			if got != tt.want {
				t.Errorf("the child's initial $%s: %s, want %s", duckDBAllocatorEnv, got, tt.want)
			}
			if pid != cmd.Process.Pid {
				t.Errorf("the child ran on as PID %d, started as %d: not the same process", pid, cmd.Process.Pid)
			}
			if want := filepath.Base(os.Args[0]); !strings.HasPrefix(want, name) { // the kernel keeps 15 bytes
				t.Errorf("the child ran on named %q (ps, top), started as %q", name, want)
			}
		})
	}
}

// TestDuckDBAllocatorConfApplies: DuckDB's jemalloc (Linux builds) takes every option of
// DuckDBAllocatorConf from the variable, over DuckDB's own options, and rejects none of them
// (jemalloc's confirm_conf prints each option as it is set, and each one it rejects). With
// TestSetDuckDBAllocator (a process started without the variable runs with it in its initial
// environment), kubesift runs with these options.
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
