package htmlreport

import (
	"bytes"
	"encoding/json"
	"fmt"
	"html/template"
	"image/color"
	"math"
	"slices"
	"sort"
	"strings"
	"time"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/text"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgsvg"

	"github.com/kubesift/kubesift/analyze"
	"github.com/kubesift/kubesift/rules"
)

// Chart is one drawn chart: what it shows (the report's data, kept in goldens) and its SVG.
type Chart struct {
	Kind   string        `json:"kind"`
	Title  string        `json:"title"`
	Rows   int           `json:"rows"`  // evidence rows the chart was given
	Marks  int           `json:"marks"` // bands, points, events or bars drawn
	Lanes  []string      `json:"lanes,omitempty"`
	Legend []LegendEntry `json:"legend,omitempty"`
	Notes  []string      `json:"notes,omitempty"`
	SVG    template.HTML `json:"-"`
}

// LegendEntry is a colour and what it means.
type LegendEntry struct {
	Label string `json:"label"`
	Color string `json:"color"`
}

const chartWidth = 960 // points; the page scales the SVG to its width

// palette is Tableau 10; known states keep their meaning across charts.
var palette = []string{"#4e79a7", "#f28e2b", "#e15759", "#76b7b2", "#59a14f", "#edc948", "#b07aa1", "#ff9da7", "#9c755f", "#bab0ac"}

var stateColors = map[string]string{
	"ready": "#59a14f", "exists": "#59a14f", "notReady": "#f28e2b", "terminating": "#edc948", "absent": "#bab0ac", "deleted": "#bab0ac",
	"delete": "#e15759", "create": "#4e79a7", "acquire": "#e15759", "release": "#f28e2b", "renew": "#4e79a7", "write": "#b07aa1", "watch": "#76b7b2",
}

const spanColor = "#fcf5dc" // the finding's first_seen..last_seen

// colors hands out a colour per value: its known colour, else the next of the palette.
type colors struct {
	byValue map[string]string
	order   []string
}

func (c *colors) of(v string) color.Color {
	if c.byValue == nil {
		c.byValue = map[string]string{}
	}
	hex, ok := c.byValue[v]
	if !ok {
		if hex, ok = stateColors[v]; !ok {
			hex = c.unused()
		}
		c.byValue[v] = hex
		c.order = append(c.order, v)
	}
	return parseHex(hex)
}

// unused is the first palette colour that no value has and no known state means, else the first
// that no value has, else the palette again.
func (c *colors) unused() string {
	taken, meant := map[string]bool{}, map[string]bool{}
	for _, hex := range c.byValue {
		taken[hex] = true
	}
	for _, hex := range stateColors {
		meant[hex] = true
	}
	for _, skipMeant := range []bool{true, false} {
		for _, hex := range palette {
			if !taken[hex] && !(skipMeant && meant[hex]) {
				return hex
			}
		}
	}
	return palette[len(c.order)%len(palette)]
}

func (c *colors) legend() []LegendEntry {
	var out []LegendEntry
	for _, v := range c.order {
		out = append(out, LegendEntry{v, c.byValue[v]})
	}
	return out
}

func parseHex(hex string) color.Color {
	var r, g, b uint8
	fmt.Sscanf(hex, "#%02x%02x%02x", &r, &g, &b)
	return color.RGBA{r, g, b, 255}
}

// drawChart draws chart c of finding f from data, a JSON list of row objects (its evidence, or
// the rows of the chart's query).
func drawChart(c rules.Chart, f analyze.Finding, data json.RawMessage) Chart {
	rs := chartRows(c, data)
	out := Chart{Kind: c.Kind, Title: c.Title, Rows: len(rs)}
	if len(rs) == 0 {
		out.Notes = append(out.Notes, "no rows for this chart")
		return out
	}
	var p *plot.Plot
	var height vg.Length
	switch c.Kind {
	case "swimlane":
		p, height = swimlane(c, f, rs, &out)
	case "series":
		p, height = series(c, f, rs, &out)
	case "events":
		p, height = events(c, f, rs, &out)
	case "bars":
		p, height = bars(c, rs, &out)
	}
	if out.Marks == 0 {
		out.Notes = append(out.Notes, fmt.Sprintf("none of the %d rows has the columns this chart draws", len(rs)))
		return out
	}
	svg, err := render(p, height)
	if err != nil {
		out.Notes = append(out.Notes, "chart not drawn: "+err.Error())
		return out
	}
	out.SVG = svg
	return out
}

func newPlot() *plot.Plot {
	p := plot.New()
	for _, s := range []*text.Style{&p.X.Label.TextStyle, &p.Y.Label.TextStyle, &p.X.Tick.Label, &p.Y.Tick.Label} {
		s.Font.Variant = "Sans"
		s.Font.Size = vg.Points(10)
	}
	p.X.Padding, p.Y.Padding = 2, 2
	return p
}

func render(p *plot.Plot, height vg.Length) (template.HTML, error) {
	c := vgsvg.New(chartWidth, height)
	p.Draw(draw.New(c))
	var buf bytes.Buffer
	if _, err := c.WriteTo(&buf); err != nil {
		return "", err
	}
	s := buf.String()
	if i := strings.Index(s, "<svg"); i >= 0 { // inline: without the XML prolog
		s = s[i:]
	}
	s = strings.Replace(s, "<svg ", `<svg class="chart" role="img" `, 1)
	return template.HTML(s), nil
}

func seconds(t time.Time) float64 { return float64(t.UnixNano()) / 1e9 }

// timeRange is the x range: the rows' times and the finding's span (none for a zero finding: a
// timeline's chart), one second wide at least.
func timeRange(f analyze.Finding, times ...time.Time) (lo, hi time.Time) {
	lo, hi = f.FirstSeen, f.LastSeen
	for i, t := range times {
		if i == 0 && f.FirstSeen.IsZero() {
			lo, hi = t, t
		}
		if t.Before(lo) {
			lo = t
		}
		if t.After(hi) {
			hi = t
		}
	}
	if hi.Sub(lo) < time.Second {
		hi = lo.Add(time.Second)
	}
	return lo, hi
}

// timeAxis labels x as UTC time, ticks at round steps fitting the span.
func timeAxis(p *plot.Plot, lo, hi time.Time) {
	pad := hi.Sub(lo) / 50
	p.X.Min, p.X.Max = seconds(lo.Add(-pad)), seconds(hi.Add(pad))
	p.X.Tick.Marker = timeTicks{}
	p.X.Label.Text = "time (UTC)"
}

// timeTicks puts ticks on round clock times: the smallest step giving at most 8 labels.
type timeTicks struct{}

var timeSteps = []time.Duration{
	100 * time.Millisecond, 200 * time.Millisecond, 500 * time.Millisecond,
	time.Second, 2 * time.Second, 5 * time.Second, 10 * time.Second, 15 * time.Second, 30 * time.Second,
	time.Minute, 2 * time.Minute, 5 * time.Minute, 10 * time.Minute, 15 * time.Minute, 30 * time.Minute,
	time.Hour, 2 * time.Hour, 3 * time.Hour, 6 * time.Hour, 12 * time.Hour, 24 * time.Hour,
	2 * 24 * time.Hour, 7 * 24 * time.Hour, 14 * 24 * time.Hour, 28 * 24 * time.Hour,
}

func (timeTicks) Ticks(lo, hi float64) []plot.Tick {
	span := time.Duration((hi - lo) * 1e9)
	step := timeSteps[len(timeSteps)-1]
	for _, s := range timeSteps {
		if span/s <= 8 {
			step = s
			break
		}
	}
	format := "15:04:05"
	switch {
	case step < time.Second:
		format = "15:04:05.0"
	case step >= 24*time.Hour:
		format = "Jan 2"
	case span >= 24*time.Hour:
		format = "Jan 2 15:04"
	case step >= time.Minute:
		format = "15:04"
	}
	start := time.Unix(0, int64(lo*1e9)).UTC().Truncate(step)
	var ticks []plot.Tick
	for t := start; seconds(t) <= hi; t = t.Add(step) {
		if seconds(t) >= lo {
			ticks = append(ticks, plot.Tick{Value: seconds(t), Label: t.Format(format)})
		}
		minor := t.Add(step / 2)
		if seconds(minor) >= lo && seconds(minor) <= hi {
			ticks = append(ticks, plot.Tick{Value: seconds(minor)})
		}
	}
	return ticks
}

// findingSpan shades the finding's first_seen..last_seen behind the marks.
type findingSpan struct{ from, to float64 }

func (s findingSpan) Plot(c draw.Canvas, p *plot.Plot) {
	trX, _ := p.Transforms(&c)
	x0, x1 := trX(s.from), max(trX(s.to), trX(s.from)+1)
	c.FillPolygon(parseHex(spanColor), c.ClipPolygonX([]vg.Point{{X: x0, Y: c.Min.Y}, {X: x1, Y: c.Min.Y}, {X: x1, Y: c.Max.Y}, {X: x0, Y: c.Max.Y}}))
}

func addSpan(p *plot.Plot, f analyze.Finding, out *Chart) {
	if f.FirstSeen.IsZero() {
		return
	}
	p.Add(findingSpan{seconds(f.FirstSeen), seconds(f.LastSeen)})
	out.Legend = append(out.Legend, LegendEntry{"the finding's span", spanColor})
}

// laneAxis names the lanes on y, the first at the top.
func laneAxis(p *plot.Plot, ls []*lane, out *Chart) vg.Length {
	var ticks []plot.Tick
	for i, l := range ls {
		ticks = append(ticks, plot.Tick{Value: laneY(i, len(ls)), Label: cutLabel(l.Name)})
		out.Lanes = append(out.Lanes, l.Name)
	}
	p.Y.Tick.Marker = plot.ConstantTicks(ticks)
	p.Y.Min, p.Y.Max = -0.6, float64(len(ls))-0.4
	return vg.Points(float64(60 + 18*len(ls)))
}

func laneY(i, n int) float64 { return float64(n - 1 - i) }

func cutLabel(s string) string {
	if r := []rune(s); len(r) > 48 {
		return string(r[:47]) + "…"
	}
	return s
}

// band is a lane coloured from x0 to x1.
type band struct {
	x0, x1, y float64
	color     color.Color
}

type bands []band

func (bs bands) Plot(c draw.Canvas, p *plot.Plot) {
	trX, trY := p.Transforms(&c)
	for _, b := range bs {
		x0, x1 := trX(b.x0), max(trX(b.x1), trX(b.x0)+1)
		y0, y1 := trY(b.y-0.35), trY(b.y+0.35)
		c.FillPolygon(b.color, c.ClipPolygonXY([]vg.Point{{X: x0, Y: y0}, {X: x1, Y: y0}, {X: x1, Y: y1}, {X: x0, Y: y1}}))
	}
}

func swimlane(c rules.Chart, f analyze.Finding, rs []row, out *Chart) (*plot.Plot, vg.Length) {
	ls, notes := lanes(rs, c, false)
	out.Notes = append(out.Notes, notes...)
	var times []time.Time
	for _, l := range ls {
		for _, r := range l.rows {
			t, _ := timeOf(r.get(c.Time))
			times = append(times, t)
		}
	}
	lo, hi := timeRange(f, times...)
	p := newPlot()
	addSpan(p, f, out)
	var pal colors
	var bs bands
	for i, l := range ls {
		for j, r := range l.rows {
			from, _ := timeOf(r.get(c.Time))
			to := hi
			if j+1 < len(l.rows) {
				to, _ = timeOf(l.rows[j+1].get(c.Time))
			}
			bs = append(bs, band{seconds(from), seconds(to), laneY(i, len(ls)), pal.of(cell(r.get(c.State)))})
		}
	}
	p.Add(bs)
	out.Marks = len(bs)
	out.Legend = append(out.Legend, pal.legend()...)
	timeAxis(p, lo, hi)
	return p, laneAxis(p, ls, out)
}

// dots are marks at points.
type dots struct {
	pts   plotter.XYs
	style draw.GlyphStyle
}

func (d dots) Plot(c draw.Canvas, p *plot.Plot) {
	trX, trY := p.Transforms(&c)
	for _, pt := range d.pts {
		c.DrawGlyph(d.style, vg.Point{X: trX(pt.X), Y: trY(pt.Y)})
	}
}

func events(c rules.Chart, f analyze.Finding, rs []row, out *Chart) (*plot.Plot, vg.Length) {
	ls, notes := lanes(rs, c, true)
	out.Notes = append(out.Notes, notes...)
	var times []time.Time
	p := newPlot()
	addSpan(p, f, out)
	var pal colors
	byState := map[string]plotter.XYs{}
	var states []string
	for i, l := range ls {
		for _, r := range l.rows {
			t, _ := timeOf(r.get(c.Time))
			times = append(times, t)
			s := cell(r.get(c.State))
			if _, ok := byState[s]; !ok {
				states = append(states, s)
				pal.of(s)
			}
			byState[s] = append(byState[s], plotter.XY{X: seconds(t), Y: laneY(i, len(ls))})
		}
	}
	for _, s := range states {
		pts := thin(byState[s], out, "marks of "+s)
		p.Add(dots{pts, draw.GlyphStyle{Color: pal.of(s), Radius: vg.Points(3.5), Shape: draw.CircleGlyph{}}})
		out.Marks += len(pts)
	}
	if c.State != "" {
		out.Legend = append(out.Legend, pal.legend()...)
	}
	lo, hi := timeRange(f, times...)
	timeAxis(p, lo, hi)
	return p, laneAxis(p, ls, out)
}

// thin keeps every k-th point past maxPoints, and says so.
func thin(pts plotter.XYs, out *Chart, what string) plotter.XYs {
	if len(pts) <= maxPoints {
		return pts
	}
	k := (len(pts) + maxPoints - 1) / maxPoints
	var kept plotter.XYs
	for i := 0; i < len(pts); i += k {
		kept = append(kept, pts[i])
	}
	out.Notes = append(out.Notes, fmt.Sprintf("%d %s: every %d. drawn", len(pts), what, k))
	return kept
}

func series(c rules.Chart, f analyze.Finding, rs []row, out *Chart) (*plot.Plot, vg.Length) {
	sort.SliceStable(rs, func(i, j int) bool {
		a, _ := timeOf(rs[i].get(c.Time))
		b, _ := timeOf(rs[j].get(c.Time))
		return a.Before(b)
	})
	p := newPlot()
	addSpan(p, f, out)
	var times []time.Time
	var marked plotter.XYs
	ylo, yhi := math.Inf(1), math.Inf(-1)
	for i, col := range c.Values {
		var pts plotter.XYs
		for _, r := range rs {
			t, okT := timeOf(r.get(c.Time))
			v, okV := number(r.get(col))
			if !okT || !okV {
				continue
			}
			times = append(times, t)
			pts = append(pts, plotter.XY{X: seconds(t), Y: v})
			ylo, yhi = min(ylo, v), max(yhi, v)
			if i == 0 && len(c.Mark) > 0 && matches(r.get, c.Mark) {
				marked = append(marked, plotter.XY{X: seconds(t), Y: v})
			}
		}
		if len(pts) == 0 {
			out.Notes = append(out.Notes, "no values of "+col)
			continue
		}
		pts = thin(pts, out, "values of "+col)
		hex := palette[i%len(palette)]
		line := plotter.Line{XYs: pts, LineStyle: draw.LineStyle{Color: parseHex(hex), Width: vg.Points(1.5), Dashes: dashes[i%len(dashes)]}}
		p.Add(&line, dots{pts, draw.GlyphStyle{Color: parseHex(hex), Radius: vg.Points(2), Shape: draw.CircleGlyph{}}})
		out.Marks += len(pts)
		out.Legend = append(out.Legend, LegendEntry{col, hex})
	}
	if len(marked) > 0 {
		p.Add(dots{marked, draw.GlyphStyle{Color: parseHex("#d62728"), Radius: vg.Points(5), Shape: draw.RingGlyph{}}})
		var conds []string
		for k, v := range c.Mark {
			conds = append(conds, k+" "+v)
		}
		slices.Sort(conds)
		out.Legend = append(out.Legend, LegendEntry{fmt.Sprintf("%s (%d, ringed on %s)", strings.Join(conds, ", "), len(marked), c.Values[0]), "#d62728"})
		out.Marks += len(marked)
	}
	lo, hi := timeRange(f, times...)
	timeAxis(p, lo, hi)
	if !math.IsInf(ylo, 0) { // y from the values only; counts from zero unless far from it
		pad := max((yhi-ylo)/20, 1)
		p.Y.Min, p.Y.Max = ylo-pad, yhi+pad
		if ylo >= 0 && ylo <= yhi/2 {
			p.Y.Min = 0
		}
	}
	return p, vg.Points(300)
}

// dashes tell lines apart where they overlap (entries and TIME_WAIT entries on a full table).
var dashes = [][]vg.Length{nil, {vg.Points(6), vg.Points(3)}, {vg.Points(2), vg.Points(2)}, {vg.Points(8), vg.Points(2), vg.Points(2), vg.Points(2)}}

func bars(c rules.Chart, rs []row, out *Chart) (*plot.Plot, vg.Length) {
	type bar struct {
		name  string
		value float64
	}
	var bs []bar
	for _, r := range rs {
		if v, ok := number(r.get(c.Values[0])); ok {
			bs = append(bs, bar{cell(r.get(c.Lane)), v})
		}
	}
	sort.SliceStable(bs, func(i, j int) bool { return bs[i].value > bs[j].value })
	if len(bs) > maxBars {
		out.Notes = append(out.Notes, fmt.Sprintf("%d %s values: the %d largest are drawn", len(bs), c.Lane, maxBars))
		bs = bs[:maxBars]
	}
	p := newPlot()
	if len(bs) == 0 {
		return p, 0
	}
	vals := make(plotter.Values, len(bs))
	names := make([]string, len(bs))
	for i, b := range bs { // the largest at the top
		vals[len(bs)-1-i] = b.value
		names[len(bs)-1-i] = cutLabel(b.name)
		out.Lanes = append(out.Lanes, b.name)
	}
	chart, err := plotter.NewBarChart(vals, vg.Points(10))
	if err != nil {
		out.Notes = append(out.Notes, err.Error())
		return p, 0
	}
	chart.Horizontal = true
	chart.Color = parseHex(palette[0])
	chart.LineStyle.Width = 0
	p.Add(chart)
	p.NominalY(names...)
	p.X.Label.Text = c.Values[0]
	p.X.Min = 0
	out.Marks = len(bs)
	out.Legend = append(out.Legend, LegendEntry{c.Values[0], palette[0]})
	return p, vg.Points(float64(60 + 16*len(bs)))
}
