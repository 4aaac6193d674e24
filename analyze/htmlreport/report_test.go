package htmlreport

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"html/template"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/kubesift/kubesift/analyze"
	"github.com/kubesift/kubesift/ingest"
	"github.com/kubesift/kubesift/internal/testdb"
	"github.com/kubesift/kubesift/internal/testutil"
	"github.com/kubesift/kubesift/rules"
	"github.com/kubesift/kubesift/store"
)

// TestMain runs from the repository root, so that evidence names files as users see them.
func TestMain(m *testing.M) {
	if err := os.Chdir("../.."); err != nil {
		panic(err)
	}
	os.Exit(m.Run())
}

// docs caches scenarioDoc: the goldens and the browser test share them.
var docs sync.Map

// scenarioDoc loads samples/<sc>, runs the built-in rules over it and builds the report.
func scenarioDoc(t testing.TB, sc string) *Document {
	t.Helper()
	if doc, ok := docs.Load(sc); ok {
		return doc.(*Document)
	}
	ctx := context.Background()
	db := scenarioDB(t, sc)
	defer db.Close()
	rs, err := rules.Builtin()
	if err != nil {
		t.Fatal(err)
	}
	rep, err := analyze.Run(ctx, db, rs, analyze.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer rep.Close()
	rep.Version = "test"
	doc := buildDoc(t, ctx, db, rep, ChartsPerRule)
	docs.Store(sc, doc)
	return doc
}

// samplesReport analyses all of samples/, a cluster per directory, with the built-in rules.
func samplesReport(t testing.TB) (*store.DB, *analyze.Report) {
	t.Helper()
	db := testdb.Ingest(t, ingest.Options{ClusterPerDir: true}, "samples")
	rs, err := rules.Builtin()
	if err != nil {
		t.Fatal(err)
	}
	rep, err := analyze.Run(context.Background(), db, rs, analyze.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rep.Close() })
	rep.Version = "test"
	return db, rep
}

// samplesDoc is the page of all of samples/ with charts for the first perRule findings of each
// rule.
func samplesDoc(t testing.TB, perRule int) *Document {
	t.Helper()
	db, rep := samplesReport(t)
	return buildDoc(t, context.Background(), db, rep, perRule)
}

// scenarioDB returns a database of the test's own with samples/<sc> loaded, taken from the test
// database cache that analyze's tests share (internal/testdb).
func scenarioDB(t testing.TB, sc string) *store.DB {
	t.Helper()
	return testdb.Ingest(t, ingest.Options{}, filepath.Join("samples", sc))
}

// checkGolden compares doc as indented JSON with analyze/htmlreport/testdata/<name>.golden.json, or
// with UPDATE_GOLDENS=1 writes it.
func checkGolden(t *testing.T, name string, doc any) {
	t.Helper()
	got, err := json.MarshalIndent(doc, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	got = append(got, '\n')
	path := filepath.Join("analyze", "htmlreport", "testdata", name+".golden.json")
	if testutil.Updating() {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (UPDATE_GOLDENS=1 go test -tags duckdb_arrow ./analyze/htmlreport writes it)", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("page data differs from %s (rerun with UPDATE_GOLDENS=1 if intended):\n%s", path, got)
	}
}

// TestScenarioGoldens compares the report's data (not its bytes) for every scenario with
// testdata/<scenario>.golden.json (UPDATE_GOLDENS=1 rewrites them), and checks that every
// finding has its rule's charts, drawn.
func TestScenarioGoldens(t *testing.T) {
	for _, sc := range testutil.Scenarios(t, "samples") {
		t.Run(sc, func(t *testing.T) {
			doc := scenarioDoc(t, sc)
			for _, f := range doc.Findings {
				if len(f.Charts) == 0 {
					t.Errorf("finding %d (%s) has no chart", f.Number, f.Rule)
				}
				for _, c := range f.Charts {
					if c.Marks == 0 || !strings.HasPrefix(string(c.SVG), "<svg") {
						t.Errorf("finding %d (%s): chart %q not drawn (%d marks, notes %v)", f.Number, f.Rule, c.Title, c.Marks, c.Notes)
					}
				}
			}
			checkGolden(t, sc, doc)
		})
	}
}

// finding makes a finding of rule with evidence items.
func finding(t testing.TB, rule string, items []map[string]any) analyze.Finding {
	t.Helper()
	ev, err := json.Marshal(items)
	if err != nil {
		t.Fatal(err)
	}
	start := time.Date(2026, 11, 21, 5, 0, 0, 0, time.UTC)
	return analyze.Finding{Rule: rule, Severity: rules.Warning, Namespace: "ns", Name: "obj",
		FirstSeen: start, LastSeen: start.Add(time.Hour), Count: int64(len(items)), Summary: "s"}.WithEvidence(ev)
}

func fromEvidence(c rules.Chart, f analyze.Finding) Chart {
	ev, err := f.Evidence()
	if err != nil {
		panic(err) // in memory: it cannot fail
	}
	return drawChart(c, f, ev)
}

func at(minutes int) string {
	return time.Date(2026, 11, 21, 5, minutes, 0, 0, time.UTC).Format(time.RFC3339Nano)
}

func TestSwimlaneOfManyAddressesSaysWhatItLeavesOut(t *testing.T) {
	var items []map[string]any
	for i := range 3000 {
		seq := []map[string]any{{"at": at(0), "state": "ready"}, {"at": at(10), "state": "notReady"}}
		if i%100 == 0 { // the busiest addresses are the ones drawn
			seq = append(seq, map[string]any{"at": at(20), "state": "ready"})
		}
		items = append(items, map[string]any{"ip": fmt.Sprintf("10.0.%d.%d", i/250, i%250), "pod": fmt.Sprintf("p-%d", i), "sequence": seq})
	}
	c := rules.Chart{Kind: "swimlane", Title: "t", Rows: "sequence", Time: "at", Lane: "ip", Label: "pod", State: "state"}
	got := fromEvidence(c, finding(t, "r", items))
	if len(got.Lanes) != maxLanes || got.Rows != 6030 {
		t.Fatalf("%d lanes of %d rows, want %d lanes of 6030 rows", len(got.Lanes), got.Rows, maxLanes)
	}
	for i := 0; i < 3000; i += 100 { // the busiest are drawn, then the first others, in evidence order
		if name := fmt.Sprintf("10.0.%d.%d p-%d", i/250, i%250, i); !slices.Contains(got.Lanes, name) {
			t.Errorf("lane %q, one of the busiest, is not drawn", name)
		}
	}
	if got.Lanes[0] != "10.0.0.0 p-0" || got.Lanes[1] != "10.0.0.1 p-1" {
		t.Errorf("lanes %v, want them in evidence order", got.Lanes[:3])
	}
	if len(got.Notes) != 1 || !strings.Contains(got.Notes[0], "3000 ip values: the 40 with the most rows are drawn, 2960 are left out") {
		t.Errorf("notes %q", got.Notes)
	}
	if got.Marks != 30*3+10*2 {
		t.Errorf("%d bands drawn, want %d", got.Marks, 30*3+10*2)
	}
}

func TestEventsMergeTheLanesPastTheLimit(t *testing.T) {
	var items []map[string]any
	for i := range 100 {
		items = append(items, map[string]any{"at": at(i % 60), "who": fmt.Sprintf("client-%02d", i), "verb": "delete"})
	}
	items = append(items, map[string]any{"at": "not a time", "who": "x", "verb": "delete"})
	got := fromEvidence(rules.Chart{Kind: "events", Title: "t", Time: "at", Lane: "who", State: "verb"}, finding(t, "r", items))
	if len(got.Lanes) != maxLanes || got.Lanes[maxLanes-1] != "61 others" || got.Marks != 100 {
		t.Errorf("lanes %d, last %q, marks %d; want %d, \"61 others\", 100", len(got.Lanes), got.Lanes[len(got.Lanes)-1], got.Marks, maxLanes)
	}
	if len(got.Notes) != 1 || !strings.Contains(got.Notes[0], "the other 61 share the last lane") {
		t.Errorf("notes %q", got.Notes)
	}
}

func TestSeriesMarksAndWhere(t *testing.T) {
	items := []map[string]any{
		{"type": "watch", "at": at(1), "rv": 10, "code": 200},
		{"type": "watch", "at": at(2), "rv": 5, "code": 410},
		{"type": "other", "at": at(3), "rv": 99, "code": 410},
		{"type": "watch", "at": at(4), "rv": nil, "code": 200},
	}
	c := rules.Chart{Kind: "series", Title: "t", Where: map[string]string{"type": "watch"}, Time: "at", Values: []string{"rv", "missing"}, Mark: map[string]string{"code": "410"}}
	got := fromEvidence(c, finding(t, "r", items))
	if got.Rows != 3 || got.Marks != 3 { // two values and one mark
		t.Errorf("rows %d marks %d, want 3 and 3", got.Rows, got.Marks)
	}
	if want := "code 410 (1, ringed on rv)"; got.Legend[len(got.Legend)-1].Label != want {
		t.Errorf("legend %v, want last %q", got.Legend, want)
	}
	if !strings.Contains(strings.Join(got.Notes, ";"), "no values of missing") {
		t.Errorf("notes %q", got.Notes)
	}
	none := fromEvidence(rules.Chart{Kind: "series", Title: "t", Where: map[string]string{"type": "none"}, Time: "at", Values: []string{"rv"}}, finding(t, "r", items))
	if none.SVG != "" || len(none.Notes) != 1 {
		t.Errorf("a chart without rows: svg %d bytes, notes %q", len(none.SVG), none.Notes)
	}
}

func TestBarsKeepTheLargest(t *testing.T) {
	var items []map[string]any
	for i := range 30 {
		items = append(items, map[string]any{"dst": fmt.Sprintf("d%d", i), "n": i})
	}
	got := fromEvidence(rules.Chart{Kind: "bars", Title: "t", Lane: "dst", Values: []string{"n"}}, finding(t, "r", items))
	if got.Marks != maxBars || got.Lanes[0] != "d29" || len(got.Notes) != 1 {
		t.Errorf("marks %d, first %q, notes %q", got.Marks, got.Lanes[0], got.Notes)
	}
}

func TestTimeTicksFitTheSpan(t *testing.T) {
	base := seconds(time.Date(2026, 11, 21, 5, 0, 0, 0, time.UTC))
	for _, tc := range []struct {
		span  time.Duration
		first string
	}{
		{3 * time.Second, "05:00:00.0"},
		{50 * time.Second, "05:00:00"},
		{90 * time.Minute, "05:00"},
		{3 * 24 * time.Hour, "Nov 21 12:00"},
		{20 * 24 * time.Hour, "Nov 23"},
	} {
		ticks := timeTicks{}.Ticks(base, base+tc.span.Seconds())
		var labels []string
		for _, tk := range ticks {
			if tk.Label != "" {
				labels = append(labels, tk.Label)
			}
		}
		if len(labels) < 3 || len(labels) > 9 || labels[0] != tc.first {
			t.Errorf("span %v: labels %q, want 3 to 9 starting %q", tc.span, labels, tc.first)
		}
	}
}

// TestWriteReportIsWriteOfBuild: the page written one finding at a time is, byte for byte, the
// page of the whole document, chart queries included (and the page of no findings).
func TestWriteReportIsWriteOfBuild(t *testing.T) {
	ctx := context.Background()
	rs, err := rules.Builtin()
	if err != nil {
		t.Fatal(err)
	}
	for _, sc := range []string{"election-lock-churn", "endpoints-phantom-recreate", "healthy"} {
		t.Run(sc, func(t *testing.T) {
			db := scenarioDB(t, sc)
			defer db.Close()
			rep, err := analyze.Run(ctx, db, rs, analyze.Options{})
			if err != nil {
				t.Fatal(err)
			}
			defer rep.Close()
			charts := analyze.NewCharts(ctx, db, rep)
			defer charts.Close()
			for _, perRule := range []int{ChartsPerRule, 1} {
				var whole, streamed bytes.Buffer
				if err := Write(&whole, buildDoc(t, ctx, db, rep, perRule)); err != nil {
					t.Fatal(err)
				}
				if err := WriteReport(&streamed, rep, charts.Rows, perRule); err != nil {
					t.Fatal(err)
				}
				if !bytes.Equal(whole.Bytes(), streamed.Bytes()) {
					t.Errorf("charts for %d per rule: WriteReport wrote %d bytes, Write(Build) %d; they differ", perRule, streamed.Len(), whole.Len())
				}
				if sc == "healthy" && (rep.NumFindings() != 0 || !strings.Contains(streamed.String(), "No findings.")) {
					t.Errorf("%d findings on healthy; want none, and the page saying so", rep.NumFindings())
				}
			}
		})
	}
}

// TestReportPastTheChartsPerRule: with more findings of a rule than charts per rule, the page
// draws the first of them (the most severe, then the earliest), runs the chart queries of
// those only, says how many of how many got charts, and still lists every finding: in the
// overview, and each past the cut in the table of findings without charts with its summary.
func TestReportPastTheChartsPerRule(t *testing.T) {
	ctx := context.Background()
	db, rep := samplesReport(t)
	perRule := map[string]int{}
	for _, f := range findingsOf(t, rep) {
		perRule[f.Rule]++
	}
	if perRule["election-lock-churn"] < 3 || perRule["watch-rewind"] < 3 {
		t.Fatalf("findings per rule %v: the test wants at least 3 of election-lock-churn and watch-rewind", perRule)
	}
	const limit = 2
	charts := analyze.NewCharts(ctx, db, rep)
	defer charts.Close()
	key := func(f analyze.Finding) string {
		return fmt.Sprint(f.Rule, f.Cluster, f.Namespace, f.Name, f.Subject, f.FirstSeen, f.LastSeen)
	}
	queried := map[string]bool{} // findings whose chart queries ran
	rows := func(f analyze.Finding) ([]json.RawMessage, error) {
		queried[key(f)] = true
		return charts.Rows(f)
	}
	var buf bytes.Buffer
	if err := WriteReport(&buf, rep, rows, limit); err != nil {
		t.Fatal(err)
	}
	page := buf.String()

	seen := map[string]int{}
	wantSections, wantListed := 0, 0
	for i, f := range findingsOf(t, rep) {
		n := i + 1
		seen[f.Rule]++
		section := fmt.Sprintf(`<section class="finding" id="finding-%d">`, n)
		listed := fmt.Sprintf(`<tr id="finding-%d"><td>%d</td><td><code>%s</code></td>`, n, n, f.Rule)
		if !strings.Contains(page, fmt.Sprintf(`<a href="#finding-%d">%d</a>`, n, n)) {
			t.Errorf("finding %d (%s) is not in the overview", n, f.Rule)
		}
		if seen[f.Rule] <= limit {
			wantSections++
			if !strings.Contains(page, section) || strings.Contains(page, listed) || !queried[key(f)] {
				t.Errorf("finding %d, %s's number %d: want a section with charts, not a line in the list (section %v, listed %v, queried %v)",
					n, f.Rule, seen[f.Rule], strings.Contains(page, section), strings.Contains(page, listed), queried[key(f)])
			}
			continue
		}
		wantListed++
		if strings.Contains(page, section) || queried[key(f)] {
			t.Errorf("finding %d, %s's number %d: has a section or ran its chart queries, past the limit of %d", n, f.Rule, seen[f.Rule], limit)
		}
		if i := strings.Index(page, listed); i < 0 || !strings.Contains(page[i:min(len(page), i+len(listed)+2000)], escapeHTML(t, f.Summary)) {
			t.Errorf("finding %d, %s's number %d: not listed with its summary", n, f.Rule, seen[f.Rule])
		}
	}
	if got := strings.Count(page, `<section class="finding"`); got != wantSections || len(queried) != wantSections {
		t.Errorf("%d sections and %d findings queried, want %d", got, len(queried), wantSections)
	}
	if got := strings.Count(page, `<tr id="finding-`); got != wantListed || wantListed == 0 {
		t.Errorf("%d findings listed without charts, want %d (and some)", got, wantListed)
	}
	for _, r := range []string{"election-lock-churn", "watch-rewind"} {
		if want := fmt.Sprintf("%d of %d <code>%s</code>", limit, perRule[r], r); strings.Count(page, want) != 2 {
			t.Errorf("the page does not say %q above the overview and above the list", want)
		}
	}
	for r, n := range perRule {
		if n <= limit && strings.Contains(page, fmt.Sprintf("of %d <code>%s</code>", n, r)) {
			t.Errorf("the page says %s's %d findings were cut at %d", r, n, limit)
		}
	}
}

// TestPageLoadsNothing: the page holds its styles, script and charts inline and refers to no
// other resource (links to references are the only URLs, and they are not fetched).
func TestPageLoadsNothing(t *testing.T) {
	var buf bytes.Buffer
	if err := Write(&buf, scenarioDoc(t, "flapping")); err != nil {
		t.Fatal(err)
	}
	page := buf.String()
	for _, re := range []string{`<link\b`, `\bsrc=`, `url\(`, `@import`, `<iframe`} {
		if regexp.MustCompile(re).MatchString(page) {
			t.Errorf("the page has %s", re)
		}
	}
	for _, want := range []string{"<style>", "<script>", `<svg class="chart"`, `id="finding-1"`, "Content-Security-Policy", "192.0.2.31 cart-1"} {
		if !strings.Contains(page, want) {
			t.Errorf("the page has no %q", want)
		}
	}
}

// escapeHTML is s as the page's template writes it in an element.
func escapeHTML(t *testing.T, s string) string {
	t.Helper()
	var buf strings.Builder
	if err := template.Must(template.New("").Parse("{{.}}")).Execute(&buf, s); err != nil {
		t.Fatal(err)
	}
	return buf.String()
}
