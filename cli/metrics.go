package cli

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/kubesift/kubesift/analyze"
	"github.com/kubesift/kubesift/rules"
	"github.com/kubesift/kubesift/store"
)

// writeMetrics writes Prometheus text-format metrics for node_exporter's textfile collector,
// atomically (the collector must never read a half-written file).
func writeMetrics(path string, s *runSummary, rep *analyze.Report, counts []store.TableRows, lastSuccess *time.Time) error {
	var b strings.Builder
	gauge := func(name, help string) {
		fmt.Fprintf(&b, "# HELP %s %s\n# TYPE %s gauge\n", name, help, name)
	}
	gauge("kubesift_findings", "Findings of the last run by cluster, rule and severity.")
	// Every rule and severity has a series (0 without findings) in every cluster the findings name,
	// or in cluster "" when none does.
	found := map[[3]string]int{}
	err := rep.EachFinding(func(_ int, f analyze.Finding) error {
		found[[3]string{f.Cluster, f.Rule, string(f.Severity)}]++
		return nil
	})
	if err != nil {
		return fmt.Errorf("writing metrics: %w", err)
	}
	clusters := map[string]bool{}
	for k := range found {
		clusters[k[0]] = true
	}
	if len(clusters) == 0 {
		clusters[""] = true
	}
	byRule := map[[3]string]int{}
	for c := range clusters {
		for _, o := range rep.Outcomes {
			for _, sev := range []string{"info", "warning", "critical"} {
				byRule[[3]string{c, o.Rule.ID, sev}] += 0
			}
		}
	}
	for k, n := range found {
		byRule[k] += n
	}
	keys := make([][3]string, 0, len(byRule))
	for k := range byRule {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool { return strings.Join(keys[i][:], "\x00") < strings.Join(keys[j][:], "\x00") })
	for _, k := range keys {
		fmt.Fprintf(&b, "kubesift_findings{cluster=%q,rule=%q,severity=%q} %d\n", k[0], k[1], k[2], byRule[k])
	}
	gauge("kubesift_rule_evaluated", "1 when the rule had data to evaluate in the last run.")
	for _, o := range rep.Outcomes {
		v := 0
		if o.Evaluated {
			v = 1
		}
		fmt.Fprintf(&b, "kubesift_rule_evaluated{rule=%q} %d\n", o.Rule.ID, v)
	}
	gauge("kubesift_rule_coverage", "1 for the coverage (evaluated, partial, blind, not evaluated) of each rule in each cluster in the last run, 0 for the others.")
	for _, o := range rep.Outcomes {
		for _, c := range o.Coverage {
			for _, status := range []string{rules.Evaluated, rules.Partial, rules.Blind, rules.NotEvaluated} {
				v := 0
				if c.Status == status {
					v = 1
				}
				fmt.Fprintf(&b, "kubesift_rule_coverage{rule=%q,cluster=%q,coverage=%q} %d\n", o.Rule.ID, c.Cluster, status, v)
			}
		}
	}
	gauge("kubesift_rows_ingested", "Rows added by the last run.")
	fmt.Fprintf(&b, "kubesift_rows_ingested %d\n", s.Rows)
	gauge("kubesift_lines_rejected", "Input lines rejected into ingest_errors by the last run.")
	fmt.Fprintf(&b, "kubesift_lines_rejected %d\n", s.Rejected)
	gauge("kubesift_table_rows", "Rows per table in the database after the last run.")
	for _, tc := range counts {
		fmt.Fprintf(&b, "kubesift_table_rows{table=%q} %d\n", tc.Table, tc.Rows)
	}
	gauge("kubesift_run_duration_seconds", "Duration of the last run's phases.")
	fmt.Fprintf(&b, "kubesift_run_duration_seconds{phase=\"ingest\"} %.3f\n", float64(s.IngestMs)/1000)
	fmt.Fprintf(&b, "kubesift_run_duration_seconds{phase=\"analyze\"} %.3f\n", float64(s.AnalyzeMs)/1000)
	gauge("kubesift_last_run_exit_code", "Exit code of the last run.")
	fmt.Fprintf(&b, "kubesift_last_run_exit_code %d\n", s.ExitCode)
	if lastSuccess != nil {
		gauge("kubesift_last_success_timestamp_seconds", "When the last run that did not fail finished (Unix time).")
		fmt.Fprintf(&b, "kubesift_last_success_timestamp_seconds %d\n", lastSuccess.Unix())
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return fmt.Errorf("writing metrics: %w", err)
	}
	tmp, err := createTempBeside(path)
	if err != nil {
		return fmt.Errorf("writing metrics: %w", err)
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.WriteString(b.String()); err != nil {
		tmp.Close()
		return fmt.Errorf("writing metrics to %s: %w", tmp.Name(), err)
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	// Readable by node_exporter, which often runs as another user; never wider than the umask allows.
	mask, err := umask()
	if err != nil {
		return fmt.Errorf("writing metrics: %w", err)
	}
	if err := os.Chmod(tmp.Name(), 0o644&^mask); err != nil {
		return err
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return fmt.Errorf("writing metrics: %w", err)
	}
	return nil
}
