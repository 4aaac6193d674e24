package cli

import (
	"bytes"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// TestSignalEndsTheWaitForAFIFO: a FIFO named on the command line is opened as a stream, which
// waits for its writer; SIGTERM or SIGINT ends that wait, and kubesift exits with
// ExitInterrupted, keeping the file loaded before it.
func TestSignalEndsTheWaitForAFIFO(t *testing.T) {
	for _, sig := range []syscall.Signal{syscall.SIGTERM, syscall.SIGINT} {
		dir := t.TempDir()
		fifo := filepath.Join(dir, "audit.pipe")
		if err := syscall.Mkfifo(fifo, 0o644); err != nil {
			t.Fatal(err)
		}
		db := filepath.Join(dir, "k.duckdb")
		cmd := kubesift("ingest", "--db", db, realAuditLog, fifo)
		var stderr syncBuffer
		cmd.Stderr = &stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		done := make(chan error, 1)
		go func() { done <- cmd.Wait() }()
		// The first file's line on stderr says the process has moved on to the FIFO.
		for deadline := time.Now().Add(30 * time.Second); !strings.Contains(stderr.String(), "rows loaded"); time.Sleep(20 * time.Millisecond) {
			if time.Now().After(deadline) {
				cmd.Process.Kill()
				t.Fatalf("the first file did not load: %q", stderr.String())
			}
		}
		time.Sleep(200 * time.Millisecond) // into the open of the FIFO
		cmd.Process.Signal(sig)
		select {
		case <-done:
		case <-time.After(20 * time.Second):
			cmd.Process.Kill()
			t.Fatalf("%v did not end the wait for the FIFO's writer", sig)
		}
		if code := cmd.ProcessState.ExitCode(); code != ExitInterrupted || !strings.Contains(stderr.String(), "interrupted") {
			t.Errorf("%v: exit %d, stderr %q; want %d", sig, code, stderr.String(), ExitInterrupted)
		}
		r := runCLI(t, "query", "--db", db, "-o", "csv", "SELECT count(*) AS n FROM audit_events")
		if r.stdout != "n\n1204\n" {
			t.Errorf("%v: %q %q, want the first file's 1204 events kept", sig, r.stdout, r.stderr)
		}
	}
}

// syncBuffer is a bytes.Buffer that a child process writes while the test reads it.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}
