package auditgen

import (
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"time"
)

const (
	largeMin = 64 << 10
	largeMax = 512 << 10
	nLarge   = 8
)

// buildLarge pre-renders the few-hundred-KB bodies: cluster-wide PodLists
// and Grafana-dashboard ConfigMaps.
func (w *world) buildLarge(r *rand.Rand, opt *Options, created func() time.Time, oldRV func() int64) {
	ctx := &renderCtx{}
	ts := opt.Start.Add(-time.Hour)
	ctx.ts = []byte(ts.Format(time.RFC3339))
	ctx.tm = []byte(ts.Format("2006-01-02T15:04:05.000000Z07:00"))
	next := 0
	for i := 0; i < nLarge; i++ {
		target := int(math.Exp(math.Log(largeMin) + r.Float64()*(math.Log(largeMax)-math.Log(largeMin))))
		if i%2 == 0 {
			b := []byte(`{"kind":"PodList","apiVersion":"v1","metadata":{"resourceVersion":"` + sentRV + `"},"items":[`)
			for n := 0; len(b) < target; n++ {
				p := w.pods[next%len(w.pods)]
				next++
				if n > 0 {
					b = append(b, ',')
				}
				ctx.rv = p.rv
				b = p.item.render(b, ctx)
			}
			b = append(b, "]}"...)
			t := compileBytes(b)
			w.large = append(w.large, largeBody{kind: 0, body: t, size: t.size})
			continue
		}
		data := map[string]string{}
		for k := 0; sizeOf(data) < target; k++ {
			data[fmt.Sprintf("%s-%d.json", appNames[r.IntN(len(appNames))], k)] = dashboard(r, 8+r.IntN(24))
		}
		o := configMapObject(r, "observability", fmt.Sprintf("grafana-dashboards-%d", i/2), created(), oldRV(), data, false)
		w.large = append(w.large, largeBody{kind: 1, body: o.full[0], obj: o, size: o.size})
	}
}

func sizeOf(m map[string]string) int {
	n := 0
	for k, v := range m {
		n += len(k) + len(v) + 8
	}
	return n
}

// dashboard renders a Grafana dashboard JSON document; stored as a string
// in a ConfigMap it becomes heavily escaped JSON, as in real clusters.
func dashboard(r *rand.Rand, panels int) string {
	type target struct {
		Expr         string `json:"expr"`
		LegendFormat string `json:"legendFormat"`
		RefID        string `json:"refId"`
	}
	type panel struct {
		ID      int            `json:"id"`
		Title   string         `json:"title"`
		Type    string         `json:"type"`
		GridPos map[string]int `json:"gridPos"`
		Targets []target       `json:"targets"`
		Options map[string]any `json:"options"`
	}
	d := map[string]any{"title": "Service " + randSuffix(r, 8), "uid": randSuffix(r, 9), "schemaVersion": 39, "refresh": "30s",
		"time": map[string]string{"from": "now-6h", "to": "now"}, "tags": []string{"generated", "slo"}}
	var ps []panel
	for i := 0; i < panels; i++ {
		app := appNames[r.IntN(len(appNames))]
		ps = append(ps, panel{ID: i + 1, Title: fmt.Sprintf("%s p99 latency (%s)", app, randSuffix(r, 4)), Type: "timeseries",
			GridPos: map[string]int{"h": 8, "w": 12, "x": 12 * (i % 2), "y": 8 * (i / 2)},
			Targets: []target{{Expr: fmt.Sprintf(`histogram_quantile(0.99, sum by (le, route) (rate(http_request_duration_seconds_bucket{job="%s", namespace=~"$namespace"}[5m])))`, app), LegendFormat: "{{route}}", RefID: "A"},
				{Expr: fmt.Sprintf(`sum(rate(http_requests_total{job="%s", code=~"5.."}[5m])) / sum(rate(http_requests_total{job="%s"}[5m]))`, app, app), LegendFormat: "error ratio", RefID: "B"}},
			Options: map[string]any{"legend": map[string]any{"displayMode": "table", "placement": "bottom", "calcs": []string{"mean", "max", "lastNotNull"}}, "tooltip": map[string]string{"mode": "multi"}}})
	}
	d["panels"] = ps
	b, _ := json.MarshalIndent(d, "", "  ")
	return string(b)
}
