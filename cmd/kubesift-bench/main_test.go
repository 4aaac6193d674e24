package main

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"testing"
	"time"
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
	for _, args := range [][]string{{"--kind", "pcap"}, {"--runs", "0"}, {"--generate-only"}, {"extra"}, {"--no-such-flag"},
		{"--mix", "random"}, {"--input", "x.log", "--mix", "samples"}, {"--chain-length", "10"}, {"--mix", "watchstreams", "--chain-length", "0"}, {"--copies", "2", "--input", "x.log"}, {"--generate-only", "--dir", "d", "--input", "x.log"}} {
		if _, err := parseFlags(args, io.Discard); !errors.As(err, new(usageError)) {
			t.Errorf("%v: %v, want a usage error", args, err)
		}
	}
	if o, err := parseFlags([]string{"--kind", "conntrack", "--entries", "10"}, io.Discard); err != nil || o.kind != "conntrack" || o.entries != 10 {
		t.Errorf("good flags: %+v, %v", o, err)
	}
}

// TestBaselines loads a two-event audit log with each audit baseline and both settings and
// checks the rows landed, the audit-table baseline's with kubesift's settings in audit_events; an
// unknown setting or baseline is an error.
func TestBaselines(t *testing.T) {
	dir := t.TempDir()
	input := filepath.Join(dir, "audit.log")
	line := `{"kind":"Event","apiVersion":"audit.k8s.io/v1","auditID":"%d","stage":"ResponseComplete","verb":"get","requestURI":"/api/v1/pods?watch=true","requestReceivedTimestamp":"2026-11-21T00:00:00Z","stageTimestamp":"2026-11-21T00:00:01Z"}` + "\n"
	if err := os.WriteFile(input, []byte(fmt.Sprintf(line, 1)+fmt.Sprintf(line, 2)), 0o644); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	for _, name := range []string{"audit-table", "audit-17"} {
		for _, settings := range []string{settingsDefaults, settingsProduct} {
			db := filepath.Join(dir, name+settings+".duckdb")
			if err := runBaseline(ctx, settings, "256MB", name, db, input); err != nil {
				t.Fatalf("%s %s: %v", name, settings, err)
			}
			sdb, err := openReadOnly(db)
			if err != nil {
				t.Fatal(err)
			}
			table := "baseline"
			if name == "audit-table" && settings == settingsProduct {
				table = "audit_events"
			}
			var n int
			err = sdb.QueryRowContext(ctx, "SELECT count(*) FROM "+table).Scan(&n)
			sdb.Close()
			if err != nil || n != 2 {
				t.Errorf("%s %s: %d rows, %v; want 2", name, settings, n, err)
			}
		}
	}
	if err := runBaseline(ctx, "fast", "256MB", "audit-table", filepath.Join(dir, "x.duckdb"), input); err == nil {
		t.Error("unknown settings accepted")
	}
	if err := runBaseline(ctx, settingsDefaults, "256MB", "audit-all", filepath.Join(dir, "y.duckdb"), input); err == nil {
		t.Error("unknown baseline accepted")
	}
}

// TestTableBaselineIsAuditEvents checks that the audit-table baseline with DuckDB's defaults builds
// audit_events' columns with audit_events' types, and that the columns it leaves out are the ones
// BENCHMARKS.md names. (With kubesift's settings it inserts them into audit_events by name.)
func TestTableBaselineIsAuditEvents(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	input := filepath.Join(dir, "audit.log")
	if err := os.WriteFile(input, []byte(`{"kind":"Event","apiVersion":"audit.k8s.io/v1","auditID":"1","stage":"ResponseComplete"}`+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	types := func(settings, table string) map[string]string {
		db := filepath.Join(dir, settings+".duckdb")
		if err := runBaseline(ctx, settings, "256MB", "audit-table", db, input); err != nil {
			t.Fatal(err)
		}
		sdb, err := openReadOnly(db)
		if err != nil {
			t.Fatal(err)
		}
		defer sdb.Close()
		rows, err := sdb.QueryContext(ctx, "SELECT column_name, data_type FROM information_schema.columns WHERE table_name = ?", table)
		if err != nil {
			t.Fatal(err)
		}
		defer rows.Close()
		m := map[string]string{}
		for rows.Next() {
			var name, typ string
			if err := rows.Scan(&name, &typ); err != nil {
				t.Fatal(err)
			}
			m[name] = typ
		}
		return m
	}
	product, baseline := types(settingsProduct, "audit_events"), types(settingsDefaults, "baseline")
	for name, typ := range baseline {
		if product[name] != typ {
			t.Errorf("baseline column %s is %s, audit_events has %q", name, typ, product[name])
		}
	}
	var missing []string
	for name := range product {
		if _, ok := baseline[name]; !ok {
			missing = append(missing, name)
		}
	}
	slices.Sort(missing)
	want := []string{"allow_watch_bookmarks", "field_selector", "label_selector", "latency_ms", "list_continue", "list_limit", "resource_version",
		"resource_version_match", "send_initial_events", "source_line", "source_offset", "timeout_seconds", "watch_rv"}
	if !slices.Equal(missing, want) {
		t.Errorf("columns left out: %v, want %v", missing, want)
	}
}

// openReadOnly opens a baseline's database file as it is: store.Open would take the rows of the
// audit-table baseline with kubesift's settings, which no finished load in ingest_files owns, for
// those of an interrupted load.
func openReadOnly(path string) (*sql.DB, error) {
	return sql.Open("duckdb", path+"?access_mode=read_only")
}

// TestTimeChildMeasuresCPU checks that a child's CPU time and peak RSS are measured: a shell
// that counts in a loop for a while uses CPU, and a failing child is an error.
func TestTimeChildMeasuresCPU(t *testing.T) {
	ctx := context.Background()
	r, err := timeChild(ctx, "/bin/sh", []string{"-c", "i=0; while [ $i -lt 300000 ]; do i=$((i+1)); done"})
	if err != nil {
		t.Fatal(err)
	}
	if r.cpu < 10*time.Millisecond || r.wall < r.cpu/time.Duration(runtime.NumCPU()) || r.peak <= 0 {
		t.Errorf("measured %+v: want some CPU time, a wall time that holds it, and a peak", r)
	}
	if _, err := timeChild(ctx, "/bin/sh", []string{"-c", "exit 3"}); err == nil {
		t.Error("a failing child is not an error")
	}
}
