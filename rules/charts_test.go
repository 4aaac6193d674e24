package rules

import (
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
