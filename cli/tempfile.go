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
// files of path that processes which no longer run left behind (a SIGKILL skips the cleanup).
func createTempBeside(path string) (*os.File, error) {
	prefix := "." + filepath.Base(path) + ".tmp-"
	stale, _ := filepath.Glob(filepath.Join(filepath.Dir(path), globEscape(prefix)+"*"))
	for _, name := range stale {
		pidText, _, _ := strings.Cut(strings.TrimPrefix(filepath.Base(name), prefix), "-")
		if pid, err := strconv.Atoi(pidText); err == nil && !running(pid) {
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
