package rules

import (
	"fmt"
	"slices"
	"strings"
)

// ChartKinds are the kinds of chart a rule can declare.
var ChartKinds = []string{"swimlane", "series", "events", "bars"}

// Chart is a chart drawn for each finding of a rule from named columns of its evidence. The rows
// are the evidence items (those matching Where), or with Rows the objects of a list column of
// each item, which also carry the item's other columns.
//
//   - swimlane: a lane per value of Lane (Label beside its name); each row colours the lane by
//     State from its Time until the lane's next row (the last until the finding's end).
//   - series: a line per column of Values over Time; rows matching Mark are marked.
//   - events: a lane per value of Lane, a mark per row at its Time, coloured by State.
//   - bars: a bar per value of Lane, as long as the (first) column of Values, longest first.
//
// With Query, the rows come from the query charts/<Query>.sql (beside the rule's query) instead
// of the evidence, for data the evidence does not hold; it may use the finding's ChartParams.
type Chart struct {
	Kind   string            `yaml:"kind"`
	Title  string            `yaml:"title"`
	Where  map[string]string `yaml:"where"`
	Rows   string            `yaml:"rows"`
	Time   string            `yaml:"time"`
	Lane   string            `yaml:"lane"`
	Label  string            `yaml:"label"`
	State  string            `yaml:"state"`
	Values []string          `yaml:"values"`
	Mark   map[string]string `yaml:"mark"`
	Query  string            `yaml:"query"`

	SQL string `yaml:"-"` // the query named by Query
}

// ChartParams are the named parameters of a chart query: the finding's object, subject and
// span, and the analysis window.
var ChartParams = []string{"cluster", "namespace", "name", "subject", "first_seen", "last_seen", "since", "until"}

// loadChartSQL reads the queries of r's charts with sqlOf("charts/NAME") and checks their
// parameters.
func loadChartSQL(r *Rule, sqlOf func(string) (string, bool)) []error {
	var errs []error
	for i, c := range r.Charts {
		if c.Query == "" {
			continue
		}
		sql, ok := sqlOf("charts/" + c.Query)
		if !ok {
			errs = append(errs, fmt.Errorf("rule %s: charts[%d]: no query charts/%s.sql", r.ID, i, c.Query))
			continue
		}
		errs = append(errs, unknownParams("charts/"+c.Query+".sql", sql, "chart", ChartParams)...)
		r.Charts[i].SQL = sql
	}
	return errs
}

// checkCharts returns the problems of a rule's charts.
func checkCharts(charts []Chart) []string {
	var problems []string
	for i, c := range charts {
		bad := func(format string, args ...any) {
			problems = append(problems, fmt.Sprintf("charts[%d]: %s", i, fmt.Sprintf(format, args...)))
		}
		if !slices.Contains(ChartKinds, c.Kind) {
			bad("kind %q: want one of %s", c.Kind, strings.Join(ChartKinds, ", "))
			continue
		}
		if strings.TrimSpace(c.Title) == "" {
			bad("missing title")
		}
		need := map[string]string{"swimlane": "time lane state", "series": "time values", "events": "time lane", "bars": "lane values"}[c.Kind]
		have := map[string]bool{"time": c.Time != "", "lane": c.Lane != "", "state": c.State != "", "values": len(c.Values) > 0}
		for _, field := range strings.Fields(need) {
			if !have[field] {
				bad("a %s chart needs %s", c.Kind, field)
			}
		}
		if len(c.Mark) > 0 && c.Kind != "series" {
			bad("mark is for series charts")
		}
		if c.Query != "" && !idPattern.MatchString(c.Query) {
			bad("query %q: want the name of charts/NAME.sql, lowercase words joined by dashes", c.Query)
		}
		if len(c.Values) > 1 && c.Kind == "bars" {
			bad("a bars chart takes one column of values")
		}
	}
	return problems
}
