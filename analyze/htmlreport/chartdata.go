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

// row is one chart row: the values of the columns the chart draws (decoded from JSON, numbers as
// json.Number), in the order of cols, which a chart's rows share. A map for each row took 203 MB
// for the 70 MB of a lock's writes over ten days of the recordings at 10M events.
type row struct {
	cols []string
	vals []any
}

// get returns the value of column col, nil when the row has none.
func (r row) get(col string) any {
	for i, c := range r.cols {
		if c == col {
			return r.vals[i]
		}
	}
	return nil
}

// chartRows returns the rows chart c draws from data (a finding's evidence or its query's rows),
// each with only the columns the chart reads (drawn). The list is decoded an item at a time:
// decoded whole, the 70 MB of a lock's writes over ten days of the recordings at 10M events held a
// copy of themselves in the decoder (128 MiB) and every column of every write in maps (about 270
// MiB) while the chart was drawn.
func chartRows(c rules.Chart, data json.RawMessage) []row {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	if t, err := dec.Token(); err != nil || t != json.Delim('[') {
		return nil
	}
	keep := drawn(c)
	var out []row
	for dec.More() {
		var it any
		if dec.Decode(&it) != nil {
			return nil
		}
		obj, ok := it.(map[string]any)
		if !ok || !matches(func(col string) any { return obj[col] }, c.Where) {
			continue
		}
		if c.Rows == "" {
			out = append(out, only(keep, obj))
			continue
		}
		list, _ := obj[c.Rows].([]any)
		for _, child := range list {
			r := map[string]any{}
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
			out = append(out, only(keep, r))
		}
	}
	return out
}

// drawn returns the columns chart c reads of a row once its rows are chosen (Where has chosen them).
func drawn(c rules.Chart) []string {
	cols := append([]string{c.Time, c.Lane, c.Label, c.State}, c.Values...)
	for col := range c.Mark {
		cols = append(cols, col)
	}
	return cols
}

// only returns the row of the columns keep of the item m.
func only(keep []string, m map[string]any) row {
	r := row{cols: keep, vals: make([]any, len(keep))}
	for i, col := range keep {
		r.vals[i] = m[col]
	}
	return r
}

// matches reports whether the columns get reads hold the values where names.
func matches(get func(col string) any, where map[string]string) bool {
	for col, want := range where {
		if cell(get(col)) != want {
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
		if _, ok := timeOf(r.get(c.Time)); !ok {
			continue
		}
		name := cell(r.get(c.Lane))
		if name == "" {
			name = "(none)"
		}
		if c.Label != "" && cell(r.get(c.Label)) != "" {
			name += " " + cell(r.get(c.Label))
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
			a, _ := timeOf(l.rows[i].get(c.Time))
			b, _ := timeOf(l.rows[j].get(c.Time))
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
