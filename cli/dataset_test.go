package cli

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/kubesift/kubesift/internal/testutil"
)

// TestDatasetGivesTheDatabasesFindings exports every samples/ scenario into a dataset and checks
// that analyze --dataset reports exactly what analyze --db reports, for the whole recording and
// for each window of its expect.yaml (the days read are then only those the window and the
// rules' lookback need).
func TestDatasetGivesTheDatabasesFindings(t *testing.T) {
	for _, scenario := range testutil.Scenarios(t, "../samples") {
		t.Run(scenario, func(t *testing.T) {
			dir := filepath.Join("../samples", scenario)
			var exp expectations
			if b, err := os.ReadFile(filepath.Join(dir, "expect.yaml")); err == nil {
				if err := yaml.NewDecoder(bytes.NewReader(b)).Decode(&exp); err != nil {
					t.Fatal(err)
				}
			}
			db := filepath.Join(t.TempDir(), "k.duckdb")
			dataset := filepath.Join(t.TempDir(), "dataset")
			if r := runCLI(t, "ingest", "--quiet", "--db", db, dir); r.code != ExitOK {
				t.Fatalf("ingest %s: %+v", dir, r)
			}
			if r := runCLI(t, "export", "--quiet", "--db", db, "--dataset", dataset); r.code != ExitOK {
				t.Fatalf("export --dataset: %+v", r)
			}
			windows := [][]string{nil}
			for _, w := range exp.Windows {
				windows = append(windows, []string{"--since", w.Since.Format(time.RFC3339), "--until", w.Until.Format(time.RFC3339)})
			}
			for _, window := range windows {
				args := append([]string{"-o", "json"}, append(window, exp.Args...)...)
				want := reportFindings(t, runCLI(t, append([]string{"analyze", "--db", db}, args...)...))
				got := reportFindings(t, runCLI(t, append([]string{"analyze", "--dataset", dataset}, args...)...))
				if got != want {
					t.Errorf("analyze --dataset %v differs from analyze --db:\n%s\nwant\n%s", window, got, want)
				}
			}
		})
	}
}

// reportFindings returns the findings and the rules' outcomes of a -o json report.
func reportFindings(t *testing.T, r result) string {
	t.Helper()
	if r.code != ExitOK {
		t.Fatalf("analyze: %+v", r)
	}
	var rep struct {
		Findings json.RawMessage `json:"findings"`
		Rules    json.RawMessage `json:"rules"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &rep); err != nil {
		t.Fatal(err)
	}
	return string(rep.Findings) + "\n" + string(rep.Rules)
}

func TestDatasetFlags(t *testing.T) {
	dataset := t.TempDir()
	for _, args := range [][]string{
		{"export", "--dataset", dataset, "-o", "csv"},
		{"export", "--dataset", dataset, "--out", "x"},
		{"export", "--dataset", dataset, "--table", "runs"},
		{"analyze", "--cluster", "a"},
		{"analyze", "--dataset", dataset, "--db", "k.duckdb"},
		{"analyze", "--dataset", dataset, "--findings-dir", dataset},
		{"analyze", "--partition", "0"},
	} {
		if r := runCLI(t, args...); r.code != ExitUsage {
			t.Errorf("%s: exit %d (%s), want usage error", strings.Join(args, " "), r.code, r.stderr)
		}
	}
	if r := runCLI(t, "analyze", "--dataset", dataset); r.code == ExitOK || !strings.Contains(r.stderr, "holds no partitions") {
		t.Errorf("empty dataset: %+v", r)
	}
}

// TestDatasetPartition runs analyze --dataset --partition N --findings-dir as an Indexed Job's
// pod does: the partition's findings are those of the whole dataset (real-lab is one cluster and
// one day), written as Parquet under DIR/cluster=/date=2026-11-21/.
func TestDatasetPartition(t *testing.T) {
	db := filepath.Join(t.TempDir(), "k.duckdb")
	dataset := filepath.Join(t.TempDir(), "dataset")
	if r := runCLI(t, "ingest", "--quiet", "--db", db, "../samples/real-lab"); r.code != ExitOK {
		t.Fatalf("ingest: %+v", r)
	}
	if r := runCLI(t, "export", "--quiet", "--db", db, "--dataset", dataset); r.code != ExitOK {
		t.Fatalf("export --dataset: %+v", r)
	}
	findings := filepath.Join(dataset, "findings")
	want := reportFindings(t, runCLI(t, "analyze", "--dataset", dataset, "-o", "json"))
	got := reportFindings(t, runCLI(t, "analyze", "--quiet", "--dataset", dataset, "--partition", "0", "--findings-dir", findings, "-o", "json"))
	if got != want {
		t.Errorf("partition 0:\n%s\nwant\n%s", got, want)
	}
	if _, err := os.Stat(filepath.Join(findings, "cluster=", "date=2026-11-21", "findings.parquet")); err != nil {
		t.Error(err)
	}
	if r := runCLI(t, "analyze", "--dataset", dataset, "--partition", "1"); r.code != ExitUsage || !strings.Contains(r.stderr, "1 (cluster, day) partitions") {
		t.Errorf("--partition 1 of 1: %+v", r)
	}
}
