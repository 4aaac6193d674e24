package htmlreport

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"sort"
	"time"

	"github.com/kubesift/kubesift/rules"
)

// Limits that keep a chart readable; past them the chart says what it left out.
const (
	maxLanes  = 40   // swimlane and events lanes
	maxBars   = 25   // bars
	maxPoints = 4000 // points of one series, marks of an events chart
)

// row is one chart row: evidence columns decoded from JSON (numbers as json.Number).
type row map[string]any

// chartRows returns the rows chart c draws from data: a finding's evidence or its query's rows.
func chartRows(c rules.Chart, data json.RawMessage) []row {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var items []any
	if dec.Decode(&items) != nil {
		return nil
	}
	var out []row
	for _, it := range items {
		obj, ok := it.(map[string]any)
		if !ok || !matches(obj, c.Where) {
			continue
		}
		if c.Rows == "" {
			out = append(out, obj)
			continue
		}
		list, _ := obj[c.Rows].([]any)
		for _, child := range list {
			r := row{}
			for k, v := range obj {
				if k != c.Rows {
					r[k] = v
				}
			}
			if m, ok := child.(map[string]any); ok {
				for k, v := range m {
					r[k] = v
				}
			}
			out = append(out, r)
		}
	}
	return out
}

func matches(r row, where map[string]string) bool {
	for col, want := range where {
		if cell(r[col]) != want {
			return false
		}
	}
	return true
}

// cell is a value as text: "" for null or missing.
func cell(v any) string {
	switch x := v.(type) {
	case nil:
		return ""
	case string:
		return x
	case json.Number:
		return x.String()
	}
	return fmt.Sprint(v)
}

func timeOf(v any) (time.Time, bool) {
	s, ok := v.(string)
	if !ok {
		return time.Time{}, false
	}
	t, err := time.Parse(time.RFC3339Nano, s)
	return t.UTC(), err == nil
}

func number(v any) (float64, bool) {
	n, ok := v.(json.Number)
	if !ok {
		return 0, false
	}
	f, err := n.Float64()
	return f, err == nil
}

// lane is one lane of a swimlane or events chart.
type lane struct {
	Name  string `json:"name"`
	Marks int    `json:"marks"` // bands or events
	rows  []row
}

// lanes groups rows by column, in order of first appearance, rows sorted by time. Past maxLanes
// it keeps the lanes with the most rows (in their order) and, with mergeRest, adds one lane
// holding all the others; notes say what was done.
func lanes(rs []row, c rules.Chart, mergeRest bool) (out []*lane, notes []string) {
	byName := map[string]*lane{}
	for _, r := range rs {
		if _, ok := timeOf(r[c.Time]); !ok {
			continue
		}
		name := cell(r[c.Lane])
		if name == "" {
			name = "(none)"
		}
		if c.Label != "" && cell(r[c.Label]) != "" {
			name += " " + cell(r[c.Label])
		}
		l := byName[name]
		if l == nil {
			l = &lane{Name: name}
			byName[name] = l
			out = append(out, l)
		}
		l.rows = append(l.rows, r)
	}
	for _, l := range out {
		sort.SliceStable(l.rows, func(i, j int) bool {
			a, _ := timeOf(l.rows[i][c.Time])
			b, _ := timeOf(l.rows[j][c.Time])
			return a.Before(b)
		})
	}
	if len(out) <= maxLanes {
		return out, nil
	}
	busiest := slices.Clone(out)
	sort.SliceStable(busiest, func(i, j int) bool { return len(busiest[i].rows) > len(busiest[j].rows) })
	keep, rest := maxLanes, busiest[maxLanes:]
	if mergeRest {
		keep--
		rest = busiest[keep:]
	}
	kept := map[*lane]bool{}
	for _, l := range busiest[:keep] {
		kept[l] = true
	}
	out = slices.DeleteFunc(out, func(l *lane) bool { return !kept[l] })
	if mergeRest {
		other := &lane{Name: fmt.Sprintf("%d others", len(rest))}
		for _, l := range rest {
			other.rows = append(other.rows, l.rows...)
		}
		out = append(out, other)
		notes = append(notes, fmt.Sprintf("%d %s values: the %d with the most rows are drawn, the other %d share the last lane", len(busiest), c.Lane, keep, len(rest)))
	} else {
		notes = append(notes, fmt.Sprintf("%d %s values: the %d with the most rows are drawn, %d are left out (see the evidence)", len(busiest), c.Lane, keep, len(rest)))
	}
	return out, notes
}
