package rules

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestChartsAreChecked(t *testing.T) {
	good := mustRead(t, "testdata/minimal.good.yaml")
	r, errs := Parse("testdata/minimal.yaml", append(good, []byte(`
charts:
  - {kind: swimlane, title: States, rows: sequence, time: at, lane: ip, label: pod, state: state}
  - {kind: series, title: Versions, time: at, values: [rv], mark: {code: "410"}}
`)...))
	if len(errs) != 0 {
		t.Fatalf("good charts: %v", errs)
	}
	if len(r.Charts) != 2 || r.Charts[0].Rows != "sequence" || r.Charts[1].Mark["code"] != "410" {
		t.Errorf("charts decoded as %+v", r.Charts)
	}

	_, errs = Parse("testdata/minimal.yaml", append(good, []byte(`
charts:
  - {kind: pie, title: Pie}
  - {kind: swimlane, time: at}
  - {kind: events, title: Events, time: at, lane: who, mark: {code: "410"}}
  - {kind: bars, title: Top, lane: dst, values: [a, b]}
`)...))
	all := joinErrs(errs)
	for _, want := range []string{
		`charts[0]: kind "pie": want one of swimlane, series, events, bars`, "charts[1]: missing title",
		"charts[1]: a swimlane chart needs lane", "charts[1]: a swimlane chart needs state",
		"charts[2]: mark is for series charts", "charts[3]: a bars chart takes one column of values",
	} {
		if !strings.Contains(all, want) {
			t.Errorf("no error %q in\n%s", want, all)
		}
	}
}

func TestUnknownChartFieldIsAnError(t *testing.T) {
	_, errs := Parse("testdata/minimal.yaml", append(mustRead(t, "testdata/minimal.good.yaml"), []byte(`
charts:
  - {kind: series, title: S, time: at, values: [v], colour: red}
`)...))
	if all := joinErrs(errs); !strings.Contains(all, `unknown field "colour"`) {
		t.Errorf("unknown chart field: %s", all)
	}
}

func TestBuiltinRulesDeclareCharts(t *testing.T) {
	rs, err := Builtin()
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range rs {
		if len(r.Charts) == 0 {
			t.Errorf("rule %s declares no chart", r.ID)
		}
	}
}

// TestChartQueriesOfAUserDirectory: a chart's query is read from charts/NAME.sql beside the
// rule, and may use only the chart parameters.
func TestChartQueriesOfAUserDirectory(t *testing.T) {
	dir := t.TempDir()
	rule := string(mustRead(t, "testdata/minimal.good.yaml"))
	write := func(name, text string) { t.Helper(); writeFile(t, dir, name, text) }
	write("minimal.yaml", rule+"\ncharts:\n  - {kind: events, title: E, query: minimal-events, time: at, lane: who}\n")
	write("minimal.sql", "SELECT $window_minutes, $since, $until")
	if _, err := LoadDir(dir); err == nil || !strings.Contains(err.Error(), "no query charts/minimal-events.sql") {
		t.Errorf("missing chart query: %v", err)
	}
	write("charts/minimal-events.sql", "SELECT stage_at AS at, username AS who FROM audit_events WHERE name = $name AND verb = $verb")
	if _, err := LoadDir(dir); err == nil || !strings.Contains(err.Error(), "$verb is not a chart parameter") {
		t.Errorf("chart query with an unknown parameter: %v", err)
	}
	write("charts/minimal-events.sql", "SELECT stage_at AS at, username AS who FROM audit_events WHERE name = $name AND stage_at <= $last_seen")
	rs, err := LoadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(rs[0].Charts[0].SQL, "$last_seen") {
		t.Errorf("chart SQL %q", rs[0].Charts[0].SQL)
	}
}

// writeFile writes text to dir/name, making its directory.
func writeFile(t *testing.T, dir, name, text string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(filepath.Join(dir, name)), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
}
