package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/kubesift/kubesift/ingest"
	"github.com/kubesift/kubesift/store"
)

func TestParseSize(t *testing.T) {
	for in, want := range map[string]int64{"1GB": 1e9, "512MB": 512e6, "2GiB": 2 << 30, "1.5 kb": 1500, "4096": 4096} {
		if got, err := parseSize(in); err != nil || got != want {
			t.Errorf("parseSize(%q) = %d, %v; want %d", in, got, err, want)
		}
	}
	for _, in := range []string{"", "GB", "-1MB", "0", "ten"} {
		if _, err := parseSize(in); err == nil {
			t.Errorf("parseSize(%q) accepted", in)
		}
	}
}

func TestBadFlagsAreUsageErrors(t *testing.T) {
	for _, args := range [][]string{{"--kind", "pcap"}, {"--runs", "0"}, {"--generate-only"}, {"extra"}, {"--no-such-flag"}} {
		if _, err := parseFlags(args, io.Discard); !errors.As(err, new(usageError)) {
			t.Errorf("%v: %v, want a usage error", args, err)
		}
	}
	if o, err := parseFlags([]string{"--kind", "conntrack", "--entries", "10"}, io.Discard); err != nil || o.kind != "conntrack" || o.entries != 10 {
		t.Errorf("good flags: %+v, %v", o, err)
	}
}

// TestBaselineSettings loads a two-event audit log with both baseline settings and checks the
// rows landed; an unknown setting is an error.
func TestBaselineSettings(t *testing.T) {
	dir := t.TempDir()
	input := filepath.Join(dir, "audit.log")
	line := `{"kind":"Event","apiVersion":"audit.k8s.io/v1","auditID":"%d","stage":"ResponseComplete","verb":"get","requestReceivedTimestamp":"2026-11-21T00:00:00Z","stageTimestamp":"2026-11-21T00:00:01Z"}` + "\n"
	if err := os.WriteFile(input, []byte(fmt.Sprintf(line, 1)+fmt.Sprintf(line, 2)), 0o644); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	for _, settings := range []string{settingsDefaults, settingsProduct} {
		db := filepath.Join(dir, settings+".duckdb")
		if err := runBaseline(ctx, settings, "256MB", auditBaseline, db, input); err != nil {
			t.Fatalf("%s: %v", settings, err)
		}
		sdb, err := store.Open(ctx, db, ingest.Schema(), store.Options{ReadOnly: true})
		if err != nil {
			t.Fatal(err)
		}
		var n int
		err = sdb.QueryRowContext(ctx, "SELECT count(*) FROM baseline").Scan(&n)
		sdb.Close()
		if err != nil || n != 2 {
			t.Errorf("%s: %d rows, %v; want 2", settings, n, err)
		}
	}
	if err := runBaseline(ctx, "fast", "256MB", auditBaseline, filepath.Join(dir, "x.duckdb"), input); err == nil {
		t.Error("unknown settings accepted")
	}
}
