package htmlreport

import (
	"context"
	"strings"
	"sync"
	"testing"

	"github.com/kubesift/kubesift/analyze"
)

// timelines are the objects whose timeline pages are checked: a flapping Endpoints (swimlanes of
// its Service's addresses) and a ConfigMap (who did what).
var timelines = []struct{ golden, resource, ns, name string }{
	{"timeline-endpoints-shop-cart", "endpoints", "shop", "cart"},
	{"timeline-configmap", "configmaps", "kube-system", "kube-apiserver-legacy-service-account-token-tracking"},
}

// timelineDocs caches timelineDoc: the goldens and the browser test share them.
var timelineDocs sync.Map

// timelineDoc loads samples/flapping and builds the timeline page of one object.
func timelineDoc(t testing.TB, resource, ns, name string) *TimelineDocument {
	t.Helper()
	key := resource + "/" + ns + "/" + name
	if doc, ok := timelineDocs.Load(key); ok {
		return doc.(*TimelineDocument)
	}
	db := scenarioDB(t, "flapping")
	defer db.Close()
	tl, err := analyze.RunTimeline(context.Background(), db, resource, "", ns, name, analyze.Options{})
	if err != nil {
		t.Fatal(err)
	}
	doc := BuildTimeline(tl)
	timelineDocs.Store(key, doc)
	return doc
}

// TestTimelineGoldens compares the timeline pages' data (not their bytes) with
// testdata/timeline-*.golden.json (UPDATE_GOLDENS=1 rewrites them) and checks that their chart
// is drawn.
func TestTimelineGoldens(t *testing.T) {
	for _, tt := range timelines {
		t.Run(tt.golden, func(t *testing.T) {
			doc := timelineDoc(t, tt.resource, tt.ns, tt.name)
			if c := doc.Chart; c.Marks == 0 || !strings.HasPrefix(string(c.SVG), "<svg") {
				t.Errorf("chart %q not drawn (%d marks, notes %v)", c.Title, c.Marks, c.Notes)
			}
			checkGolden(t, tt.golden, doc)
		})
	}
}
