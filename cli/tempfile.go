package cli

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
)

// createTempBeside creates the temporary file that becomes path once complete: hidden, beside
// it, named after it and this process (.NAME.tmp-PID-RANDOM). It first removes the temporary
// files of path that processes which no longer run left behind (a SIGKILL skips the cleanup),
// and those named after this process's pid, which it has not made yet: a container's process
// has the same pid each time it starts (a pod of an Indexed Job restarted after it was killed).
func createTempBeside(path string) (*os.File, error) {
	prefix := "." + filepath.Base(path) + ".tmp-"
	stale, _ := filepath.Glob(filepath.Join(filepath.Dir(path), globEscape(prefix)+"*"))
	for _, name := range stale {
		pidText, _, _ := strings.Cut(strings.TrimPrefix(filepath.Base(name), prefix), "-")
		if pid, err := strconv.Atoi(pidText); err == nil && (pid == os.Getpid() || !running(pid)) {
			if err := os.Remove(name); err != nil && !errors.Is(err, os.ErrNotExist) {
				return nil, fmt.Errorf("removing a stale temporary file: %w", err)
			}
		}
	}
	return os.CreateTemp(filepath.Dir(path), prefix+strconv.Itoa(os.Getpid())+"-*")
}

// running reports whether a process with this pid exists.
func running(pid int) bool {
	err := syscall.Kill(pid, 0)
	return err == nil || errors.Is(err, syscall.EPERM)
}

// globEscape escapes the characters filepath.Match treats specially.
func globEscape(s string) string {
	return strings.NewReplacer(`\`, `\\`, "*", `\*`, "?", `\?`, "[", `\[`).Replace(s)
}

// umask returns the process's file mode creation mask, from /proc/self/status (reading it
// with umask(2) means setting it, which races with files created meanwhile).
func umask() (os.FileMode, error) {
	status, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0, fmt.Errorf("reading the umask: %w", err)
	}
	for line := range strings.Lines(string(status)) {
		if value, ok := strings.CutPrefix(line, "Umask:"); ok {
			mask, err := strconv.ParseUint(strings.TrimSpace(value), 8, 32)
			if err != nil {
				return 0, fmt.Errorf("reading the umask from /proc/self/status: %w", err)
			}
			return os.FileMode(mask), nil
		}
	}
	return 0, errors.New("reading the umask: no Umask line in /proc/self/status")
}
