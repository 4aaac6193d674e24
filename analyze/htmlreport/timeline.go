package htmlreport

import (
	_ "embed"
	"encoding/json"
	"html/template"
	"io"
	"slices"
	"time"

	"github.com/kubesift/kubesift/analyze"
	"github.com/kubesift/kubesift/rules"
	"github.com/kubesift/kubesift/tabular"
)

// TimelineDocument is what the timeline page of one object shows, before it is rendered: the
// goldens compare this.
type TimelineDocument struct {
	Object string   `json:"object"`
	Window string   `json:"window"`
	Span   string   `json:"span,omitempty"`
	Chart  Chart    `json:"chart"`
	Rows   Evidence `json:"rows"`
}

// The timeline's charts: the address states of an Endpoints, EndpointSlice or Service (one lane
// per address and stream, as endpoint-flapping follows them), else who did what to the object.
var (
	addressChart = rules.Chart{Kind: "swimlane", Title: "State of each address of the Service over time, per stream",
		Time: "at", Lane: "ip", Label: "stream", State: "state"}
	actionsChart = rules.Chart{Kind: "events", Title: "Who did what to the object over time",
		Time: "at", Lane: "who", State: "what"}
)

// BuildTimeline turns a timeline into the page's data, drawing its chart with the report's
// charts (one lane per address, or per actor).
func BuildTimeline(tl *analyze.Timeline) *TimelineDocument {
	doc := &TimelineDocument{Object: tl.Resource + "/" + tl.Namespace + "/" + tl.Name, Window: tl.Window}
	doc.Rows = Evidence{Columns: tl.Rows.ColumnNames(), Total: len(tl.Rows.Rows)}
	var times []time.Time
	for i, row := range tl.Rows.Rows {
		if t, ok := row[0].(time.Time); ok {
			times = append(times, t)
		}
		if i < EvidenceRows {
			cells := make([]string, len(row))
			for j, v := range row {
				cells[j] = tabular.Text(v)
			}
			doc.Rows.Rows = append(doc.Rows.Rows, cells)
		}
	}
	if len(times) > 0 {
		doc.Span = stamp(slices.MinFunc(times, time.Time.Compare)) + " to " + stamp(slices.MaxFunc(times, time.Time.Compare))
	}
	if tl.Addresses != nil {
		doc.Chart = drawChart(addressChart, analyze.Finding{}, tl.Addresses)
	} else {
		doc.Chart = drawChart(actionsChart, analyze.Finding{}, actions(tl.Rows))
	}
	return doc
}

// actions are the audit rows of a timeline as chart rows: at, who, what.
func actions(t *tabular.Table) json.RawMessage {
	items := []map[string]any{}
	for _, row := range t.Rows {
		if row[1] == "audit" {
			items = append(items, map[string]any{"at": row[0], "who": row[6], "what": row[3]})
		}
	}
	b, _ := json.Marshal(items)
	return b
}

//go:embed timeline.html.tmpl
var timelineTemplate string

var timelinePage = template.Must(template.Must(template.New("timeline").Parse(timelineTemplate)).Parse(chartTemplate))

// WriteTimeline renders doc as one HTML page with its styles and chart inline.
func WriteTimeline(w io.Writer, doc *TimelineDocument) error {
	return timelinePage.Execute(w, struct {
		*TimelineDocument
		CSS template.CSS
	}{doc, template.CSS(pageCSS)})
}
