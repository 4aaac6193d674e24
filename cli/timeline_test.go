package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestTimeline(t *testing.T) {
	db := filepath.Join(t.TempDir(), "t.duckdb")
	if r := runCLI(t, "ingest", "--db", db, "../samples/flapping"); r.code != ExitOK {
		t.Fatal(r)
	}
	r := runCLI(t, "timeline", "--db", db, "-o", "csv", "endpoints/shop/cart")
	if r.code != ExitOK {
		t.Fatalf("timeline: %+v", r)
	}
	for _, want := range []string{
		"at,source,object,what,detail,evidence,who\n",
		",audit,endpoints/cart,update 200,", "no longer ready 192.0.2.31", "now ready 192.0.2.31",
		",snapshot,endpoints/cart,observed,", ",finding,endpoint-flapping,warning,",
		"samples/flapping/audit.log:",
	} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("timeline of endpoints/shop/cart lacks %q", want)
		}
	}
	if r := runCLI(t, "timeline", "--db", db, "-o", "csv", "service/shop/cart"); !strings.Contains(r.stdout, ",snapshot,service/cart,observed,\"type ClusterIP") ||
		!strings.Contains(r.stdout, "endpointslice/") {
		t.Errorf("timeline of service/shop/cart: %s", r.stdout)
	}
	html := filepath.Join(t.TempDir(), "cart.html")
	if r := runCLI(t, "timeline", "--db", db, "-o", "html", "--out", html, "endpoints/shop/cart"); r.code != ExitOK {
		t.Fatalf("timeline -o html: %+v", r)
	}
	page, err := os.ReadFile(html)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"<title>kubesift timeline: endpoints/shop/cart</title>", `<figure class="chart swimlane"`, "<svg", "192.0.2.31 audit", "no longer ready 192.0.2.31"} {
		if !strings.Contains(string(page), want) {
			t.Errorf("timeline -o html lacks %q", want)
		}
	}
	for _, tt := range []struct {
		arg  string
		code int
		msg  string
	}{
		{"endpoints/shop", ExitUsage, "want KIND/NAMESPACE/NAME"},
		{"deployment/shop/cart", ExitUsage, `unknown kind "deployment"`},
		{"endpoints/shop/nothing-here", ExitError, "nothing is known about endpoints/shop/nothing-here"},
	} {
		if r := runCLI(t, "timeline", "--db", db, tt.arg); r.code != tt.code || !strings.Contains(r.stderr, tt.msg) {
			t.Errorf("timeline %s: exit %d %q", tt.arg, r.code, r.stderr)
		}
	}
}

// TestTimelineOfAnUnknownObjectBesideACollectionFinding: a watch-rewind finding about a client's
// watch of lab's endpoints belongs on the timeline of lab/checkout, which the log knows, and not
// on one of a name it does not know, which is nothing known rather than that finding alone.
func TestTimelineOfAnUnknownObjectBesideACollectionFinding(t *testing.T) {
	db := filepath.Join(t.TempDir(), "k.duckdb")
	if r := runCLI(t, "ingest", "--quiet", "--db", db, "../samples/watch-rewind/audit.log"); r.code != ExitOK {
		t.Fatalf("ingest: %+v", r)
	}
	if r := runCLI(t, "timeline", "--db", db, "-o", "csv", "endpoints/lab/checkout"); r.code != ExitOK || !strings.Contains(r.stdout, ",finding,watch-rewind,") {
		t.Errorf("timeline of lab/checkout: %+v", r)
	}
	if r := runCLI(t, "timeline", "--db", db, "endpoints/lab/nothing-here"); r.code != ExitError || !strings.Contains(r.stderr, "nothing is known about endpoints/lab/nothing-here") {
		t.Errorf("timeline of lab/nothing-here: %+v", r)
	}
}
