package cli

import (
	"context"
	"math"
	"path/filepath"
	"runtime/debug"
	"slices"
	"testing"

	"github.com/kubesift/kubesift/ingest"
	"github.com/kubesift/kubesift/store"
)

// limitLog records the Go heap's soft limit each time a load writes its summary line.
type limitLog struct{ limits []int64 }

func (l *limitLog) Write(p []byte) (int, error) {
	l.limits = append(l.limits, debug.SetMemoryLimit(-1))
	return len(p), nil
}

// TestLoadHoldsTheGoHeap: while files load the Go heap's limit is loadingGoMemoryLimit, and the
// limit before is back after; a lower limit, or one $GOMEMLIMIT sets, is left as it is.
func TestLoadHoldsTheGoHeap(t *testing.T) {
	before := debug.SetMemoryLimit(-1)
	defer debug.SetMemoryLimit(before)
	inputs, err := ingest.ExpandPaths([]string{filepath.Join("..", "samples", "flapping", "audit.log")})
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		name       string
		gomemlimit string
		limit      int64
		want       int64 // while loading
	}{
		{"unset", "", math.MaxInt64, loadingGoMemoryLimit},
		{"main's default", "", GoMemoryLimit, loadingGoMemoryLimit},
		{"lower", "", 100 << 20, 100 << 20},
		{"GOMEMLIMIT", "1GiB", 1 << 30, 1 << 30},
	} {
		t.Run(tt.name, func(t *testing.T) {
			db, err := store.Open(context.Background(), filepath.Join(t.TempDir(), "k.duckdb"), ingest.Schema(), store.Options{})
			if err != nil {
				t.Fatal(err)
			}
			defer db.Close()
			e := &env{getenv: func(k string) string {
				if k == "GOMEMLIMIT" {
					return tt.gomemlimit
				}
				return ""
			}}
			debug.SetMemoryLimit(tt.limit)
			var log limitLog
			if _, err := e.ingestFiles(context.Background(), db, ingest.Options{Log: &log}, inputs); err != nil {
				t.Fatal(err)
			}
			if len(log.limits) == 0 || slices.ContainsFunc(log.limits, func(l int64) bool { return l != tt.want }) {
				t.Errorf("limit while loading %v, want %d", log.limits, tt.want)
			}
			if after := debug.SetMemoryLimit(-1); after != tt.limit {
				t.Errorf("limit after %d, want %d back", after, tt.limit)
			}
		})
	}
}

// TestSetGoMemoryLimit: GoMemoryLimit unless $GOMEMLIMIT is set, which is left to the runtime.
func TestSetGoMemoryLimit(t *testing.T) {
	before := debug.SetMemoryLimit(-1)
	defer debug.SetMemoryLimit(before)
	for _, tt := range []struct {
		gomemlimit string
		want       int64
	}{
		{"", GoMemoryLimit},
		{"1GiB", math.MaxInt64},
	} {
		t.Setenv("GOMEMLIMIT", tt.gomemlimit)
		debug.SetMemoryLimit(math.MaxInt64)
		SetGoMemoryLimit()
		if got := debug.SetMemoryLimit(-1); got != tt.want {
			t.Errorf("GOMEMLIMIT=%q: limit %d, want %d", tt.gomemlimit, got, tt.want)
		}
	}
}
