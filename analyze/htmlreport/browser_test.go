package htmlreport

import (
	"bytes"
	"context"
	"fmt"
	"image/png"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/cdproto/log"
	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"

	"github.com/kubesift/kubesift/internal/testutil"
)

// chromium finds a Chromium to drive: skipped with a message when there is none, failed under
// CI=true (.ci/run installs Debian's chromium).
func chromium(t *testing.T) string {
	t.Helper()
	return testutil.NeedProgram(t, "apt-get install chromium", "chromium", "chromium-browser", "google-chrome", "google-chrome-stable")
}

// pageCheck is what the browser measures on a report page.
type pageCheck struct {
	Findings int     `json:"findings"`
	Rows     int     `json:"rows"`     // lines of the overview
	Listed   int     `json:"listed"`   // lines of the table of findings without charts
	Charts   [][]int `json:"charts"`   // per finding, per chart: SVG shapes in it
	Overflow float64 `json:"overflow"` // page wider than the window (px)
	Overview float64 `json:"overview"` // overview table wider than its box (px)
}

const measureJS = `(() => {
  const sections = [...document.querySelectorAll("section.finding")];
  const overview = document.getElementById("overview");
  return {
    findings: sections.length,
    rows: overview ? overview.tBodies[0].rows.length : 0,
    listed: document.querySelectorAll("table.listed tbody tr").length,
    charts: sections.map(s => [...s.querySelectorAll("figure.chart")].map(f => f.querySelectorAll("svg.chart path, svg.chart text").length)),
    overflow: document.documentElement.scrollWidth - document.documentElement.clientWidth,
    overview: overview ? overview.scrollWidth - overview.parentElement.clientWidth : 0,
  };
})()`

// TestReportsInChromium opens the report of every scenario in headless Chromium with JavaScript
// on (at 1280 and 1920 px) and off (1280 px): no console errors, no network request but the page itself,
// every finding's charts drawn (SVG with marks), no horizontal scrolling, and with JavaScript the
// overview sorts. It takes a PNG screenshot of each page at 1280 px and checks its size; with
// KUBESIFT_SCREENSHOTS=DIR it keeps them, and with JavaScript one of each finding too, in DIR
// (docs/img has one per rule). Without DIR the per-finding shots are skipped: nobody would see
// them, and encoding them was most of the browser's time.
func TestReportsInChromium(t *testing.T) {
	exe := chromium(t)
	shots := os.Getenv("KUBESIFT_SCREENSHOTS")
	if shots != "" {
		if err := os.MkdirAll(shots, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	docs := map[string]*Document{}
	pages := testutil.Scenarios(t, "samples")
	for _, sc := range pages { // before the browser starts: loading takes a while on a busy machine
		docs[sc] = scenarioDoc(t, sc)
	}
	const cut = "samples-2-charts-per-rule" // more findings of a rule than charts
	docs[cut] = samplesDoc(t, 2)
	pages = append(pages, cut)
	browser := startBrowser(t, exe)
	dir := t.TempDir()
	for _, sc := range pages {
		doc := docs[sc]
		path := filepath.Join(dir, sc+".html")
		f, err := os.Create(path)
		if err != nil {
			t.Fatal(err)
		}
		if err := Write(f, doc); err != nil {
			t.Fatal(err)
		}
		f.Close()
		for _, view := range []struct {
			js    bool
			width int64
		}{{true, 1280}, {true, 1920}, {false, 1280}} {
			name := fmt.Sprintf("%s-%d-js-%v", sc, view.width, view.js)
			shot := ""
			if shots != "" {
				shot = filepath.Join(shots, name)
			}
			t.Run(name, func(t *testing.T) {
				checkPage(t, browser, "file://"+path, doc, view.js, view.width, shot)
			})
		}
	}
}

// startBrowser starts headless Chromium exe for the test's duration.
func startBrowser(t *testing.T, exe string) context.Context {
	allocCtx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), append(slices.Clone(chromedp.DefaultExecAllocatorOptions[:]),
		chromedp.ExecPath(exe), chromedp.NoSandbox, chromedp.Headless, chromedp.DisableGPU)...)
	t.Cleanup(cancelAlloc)
	browser, cancelBrowser := chromedp.NewContext(allocCtx)
	t.Cleanup(cancelBrowser)
	if err := chromedp.Do(browser); err != nil {
		t.Fatalf("starting %s: %v", exe, err)
	}
	return browser
}

// TestTimelinesInChromium opens the timeline pages in headless Chromium (JavaScript off: the page
// has none) at 1280 px: no console errors, no network request, no horizontal scrolling.
func TestTimelinesInChromium(t *testing.T) {
	exe := chromium(t)
	var pages []*TimelineDocument
	for _, tt := range timelines {
		pages = append(pages, timelineDoc(t, tt.resource, tt.ns, tt.name))
	}
	browser := startBrowser(t, exe)
	dir := t.TempDir()
	for i, tt := range timelines {
		path := filepath.Join(dir, tt.golden+".html")
		f, err := os.Create(path)
		if err != nil {
			t.Fatal(err)
		}
		if err := WriteTimeline(f, pages[i]); err != nil {
			t.Fatal(err)
		}
		f.Close()
		t.Run(tt.golden, func(t *testing.T) {
			checkPage(t, browser, "file://"+path, &Document{}, false, 1280, "")
		})
	}
}

// checkPage opens url in a new tab of browser and checks it against doc; shot, when not empty,
// is where its screenshots go (shot.png, shot-finding-N-RULE.png).
func checkPage(t *testing.T, browser context.Context, url string, doc *Document, js bool, width int64, shot string) {
	tab, cancel := chromedp.NewContext(browser)
	defer cancel()
	tab, cancelTimeout := context.WithTimeout(tab, 2*time.Minute) // per page: generous for a busy machine
	defer cancelTimeout()
	var mu sync.Mutex
	var problems []string
	if err := chromedp.Listen(tab, func(ev any) {
		mu.Lock()
		defer mu.Unlock()
		switch e := ev.(type) {
		case *runtime.EventConsoleAPICalled:
			if e.Type == runtime.ConsoleAPICalledTypeError || e.Type == runtime.ConsoleAPICalledTypeWarning || e.Type == runtime.ConsoleAPICalledTypeAssert {
				problems = append(problems, fmt.Sprintf("console %s", e.Type))
			}
		case *runtime.EventExceptionThrown:
			problems = append(problems, "exception: "+e.ExceptionDetails.Text)
		case *log.EventEntryAdded:
			if e.Entry.Level == log.EntryLevelError || e.Entry.Level == log.EntryLevelWarning {
				problems = append(problems, fmt.Sprintf("browser log %s: %s", e.Entry.Level, e.Entry.Text))
			}
		case *network.EventRequestWillBeSent:
			if e.Request.URL != url {
				problems = append(problems, "network request "+e.Request.URL)
			}
		}
	}); err != nil {
		t.Fatal(err)
	}
	err := chromedp.Do(tab,
		chromedp.Func(func(ctx context.Context, tg *chromedp.Target) error {
			for _, enable := range []func() error{
				func() error { _, err := chromedp.Call(ctx, network.Enable, network.EnableParams{}); return err },
				func() error { _, err := chromedp.Call(ctx, log.Enable, cdp.Empty{}); return err },
				func() error {
					_, err := chromedp.Call(ctx, emulation.SetScriptExecutionDisabled, emulation.SetScriptExecutionDisabledParams{Value: !js})
					return err
				},
			} {
				if err := enable(); err != nil {
					return err
				}
			}
			return nil
		}),
		chromedp.EmulateViewport(width, 1000),
		chromedp.Navigate(url),
	)
	if err != nil {
		t.Fatal(err)
	}
	got, err := chromedp.Run(tab, chromedp.Evaluate[pageCheck](measureJS))
	if err != nil {
		t.Fatal(err)
	}
	if got.Findings != len(doc.Findings) || got.Listed != len(doc.Listed) || got.Rows != len(doc.Findings)+len(doc.Listed) {
		t.Errorf("%d finding sections, %d findings listed without charts, %d in the overview; want %d, %d and all",
			got.Findings, got.Listed, got.Rows, len(doc.Findings), len(doc.Listed))
	}
	for i, f := range doc.Findings {
		if i >= len(got.Charts) {
			break
		}
		if len(got.Charts[i]) != len(f.Charts) {
			t.Errorf("finding %d (%s): %d charts on the page, want %d", f.Number, f.Rule, len(got.Charts[i]), len(f.Charts))
		}
		for j, shapes := range got.Charts[i] {
			if shapes < 10 {
				t.Errorf("finding %d (%s) chart %d: %d SVG shapes, want a drawn chart", f.Number, f.Rule, j+1, shapes)
			}
		}
	}
	if got.Overflow > 0 || got.Overview > 0 {
		t.Errorf("at %d px the page scrolls sideways: page %.0f px, overview %.0f px too wide", width, got.Overflow, got.Overview)
	}
	if width == 1280 {
		// The page as a PNG, whether or not it is kept: the picture an SRE pastes into a review.
		shotPNG, err := chromedp.Run(tab, chromedp.FullScreenshot(100))
		if err != nil {
			t.Fatal(err)
		}
		if cfg, err := png.DecodeConfig(bytes.NewReader(shotPNG)); err != nil || cfg.Width != int(width) || cfg.Height < 200 {
			t.Errorf("the page's screenshot is not a %d px wide PNG of the page: %+v, %v", width, cfg, err)
		}
		if shot != "" {
			if err := os.WriteFile(shot+".png", shotPNG, 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	if js && width == 1280 && len(doc.Findings) > 0 {
		// The script sorts the overview: by count, ascending.
		if err := chromedp.Do(tab, chromedp.Click("#overview th:nth-child(7)")); err != nil {
			t.Fatal(err)
		}
		order, err := chromedp.Run(tab, chromedp.Evaluate[[]float64](`[...document.querySelectorAll("#overview tbody tr td:nth-child(7)")].map(td => Number(td.textContent))`))
		if err != nil {
			t.Fatal(err)
		}
		if !slices.IsSorted(order) {
			t.Errorf("overview sorted by count: %v", order)
		}
		for _, f := range doc.Findings {
			if shot == "" {
				break // no screenshots wanted
			}
			png, err := sectionScreenshot(tab, fmt.Sprintf("finding-%d", f.Number))
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(fmt.Sprintf("%s-finding-%d-%s.png", shot, f.Number, f.Rule), png, 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	mu.Lock()
	defer mu.Unlock()
	if len(problems) > 0 {
		t.Errorf("the page %s:\n%s", url, strings.Join(problems, "\n"))
	}
}

// sectionScreenshot takes a PNG of the element with id: its box in the page, beyond the window.
func sectionScreenshot(tab context.Context, id string) ([]byte, error) {
	box, err := chromedp.Run(tab, chromedp.Evaluate[page.Viewport](fmt.Sprintf(`(() => {
  const r = document.getElementById(%q).getBoundingClientRect();
  return {x: r.left + window.scrollX, y: r.top + window.scrollY, width: r.width, height: r.height, scale: 1};
})()`, id)))
	if err != nil {
		return nil, err
	}
	beyond := true
	shot, err := chromedp.Call(tab, page.CaptureScreenshot, page.CaptureScreenshotParams{Format: page.CaptureScreenshotFormatPng, Clip: &box, CaptureBeyondViewport: &beyond})
	return shot.Data, err
}
