package cli

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"
)

// TestMemoryLimitFitsTheContainer: without --memory-limit, a container that allows less than the
// default and what kubesift needs beside it gets DuckDB's limit lowered to fit, said once on
// stderr; a larger container, no container limit, and --memory-limit leave it as they say.
func TestMemoryLimitFitsTheContainer(t *testing.T) {
	db := loadedDB(t)
	const note = "kubesift: this container may use"
	for _, tc := range []struct {
		name      string
		container func() (uint64, error)
		args      []string
		want      string // DuckDB's memory_limit setting
		noted     bool
	}{
		{"a container of 1 GiB", func() (uint64, error) { return 1 << 30, nil }, nil, "384.0 MiB", true},
		{"a container of 512 MiB", func() (uint64, error) { return 512 << 20, nil }, nil, "200.0 MiB", true},
		{"a container of 2 GiB", func() (uint64, error) { return 2 << 30, nil }, nil, "810.6 MiB", false},
		{"a container just large enough", func() (uint64, error) { return 850_000_000 + 640<<20, nil }, nil, "810.6 MiB", false},
		{"no container limit", func() (uint64, error) { return 0, errors.New("no limit") }, nil, "810.6 MiB", false},
		{"--memory-limit in a container of 1 GiB", func() (uint64, error) { return 1 << 30, nil }, []string{"--memory-limit", "2GB"}, "1.8 GiB", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var out, errb bytes.Buffer
			e := &env{stdout: &out, stderr: &errb, stdin: strings.NewReader(""), getenv: func(string) string { return "" },
				isTerminal: func(uintptr) bool { return false }, containerMemory: tc.container}
			args := append([]string{"query", "--db", db, "-o", "csv"}, tc.args...)
			code := e.main(context.Background(), append(args, "SELECT current_setting('memory_limit') AS m"))
			if code != ExitOK || out.String() != "m\n"+tc.want+"\n" {
				t.Errorf("exit %d, %q; want memory_limit %s (stderr %q)", code, out.String(), tc.want, errb.String())
			}
			if got := strings.Count(errb.String(), note); got != map[bool]int{true: 1, false: 0}[tc.noted] {
				t.Errorf("said %d times that the limit was fitted: %q", got, errb.String())
			}
		})
	}
	// run opens a database for the load and again for the rules: said once
	var out, errb bytes.Buffer
	e := &env{stdout: &out, stderr: &errb, stdin: strings.NewReader(""), getenv: func(string) string { return "" },
		isTerminal: func(uintptr) bool { return false }, containerMemory: func() (uint64, error) { return 1 << 30, nil }}
	if code := e.main(context.Background(), []string{"run", "-q", "../samples/watch-rewind"}); code != ExitOK && code != ExitFindings {
		t.Fatalf("run: exit %d: %s", code, errb.String())
	}
	if got := strings.Count(errb.String(), note); got != 1 {
		t.Errorf("run said %d times that the limit was fitted: %q", got, errb.String())
	}
}

func TestFittedMemoryLimit(t *testing.T) {
	for _, tc := range []struct {
		container uint64
		want      string
		fitted    bool
	}{
		{8 << 30, "850MB", false},
		{1536 << 20, "850MB", false},
		{1 << 30, "384MiB", true},
		{1 << 20, "200MiB", true},
	} {
		if got, fitted := fittedMemoryLimit(tc.container); got != tc.want || fitted != tc.fitted {
			t.Errorf("a container of %d bytes: %s, %v; want %s, %v", tc.container, got, fitted, tc.want, tc.fitted)
		}
	}
}
