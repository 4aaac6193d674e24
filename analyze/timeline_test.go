package analyze

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/kubesift/kubesift/ingest"
)

// TestTimelineReadsFlappingsObservations: the address states of the timeline of endpoints/shop/cart
// are the ones endpoint-flapping follows. The timeline has only their changes (no row of an address
// but its last repeats the state of the one before) and their last observation, and every address
// of the finding has, in its stream, the same sequence of states (time, state, file:line) in the
// timeline's rows, once a leading absence is dropped and repeated states merged as the rule does.
func TestTimelineReadsFlappingsObservations(t *testing.T) {
	ctx := context.Background()
	db := scenarioDB(t, "samples/flapping", ingest.Options{})
	tl, err := RunTimeline(ctx, db, "endpoints", "", "shop", "cart", Options{})
	if err != nil {
		t.Fatal(err)
	}
	var states []struct{ At, Stream, IP, State, Evidence string }
	if err := json.Unmarshal(tl.Addresses, &states); err != nil {
		t.Fatal(err)
	}
	for i, s := range states {
		lane := s.Stream + " " + s.IP
		last := i+1 == len(states) || states[i+1].Stream+" "+states[i+1].IP != lane
		if i > 0 && !last && states[i-1].Stream+" "+states[i-1].IP == lane && states[i-1].State == s.State {
			t.Errorf("%s at %s: %s again", lane, s.At, s.State)
		}
	}
	// the chart ends at the last observation (the last snapshot), not at the last change (06:00:05)
	if end := slices.MaxFunc(states, func(a, b struct{ At, Stream, IP, State, Evidence string }) int {
		return strings.Compare(a.At, b.At)
	}).At; end != "2026-11-21T06:00:11.000Z" {
		t.Errorf("the last address state is at %s, want the last observation, 2026-11-21T06:00:11.000Z", end)
	}
	rep, err := Run(ctx, db, builtin(t), Options{})
	if err != nil {
		t.Fatal(err)
	}
	i := slices.IndexFunc(rep.findings, func(f Finding) bool {
		return f.Rule == "endpoint-flapping" && f.Namespace == "shop" && f.Name == "cart"
	})
	if i < 0 {
		t.Fatalf("no endpoint-flapping finding on shop/cart: %+v", rep.findings)
	}
	var addresses []struct {
		IP, Source string
		Sequence   []struct {
			At, State, File string
			Line            int
		}
	}
	evidence, err := rep.findings[i].Evidence()
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(evidence, &addresses); err != nil {
		t.Fatal(err)
	}
	if len(addresses) != 3 {
		t.Fatalf("the finding has %d addresses, want 3", len(addresses))
	}
	for _, a := range addresses {
		var want, got []string
		for _, s := range a.Sequence {
			want = append(want, fmt.Sprintf("%s %s %s:%d", s.At, s.State, s.File, s.Line))
		}
		last := ""
		for _, s := range states {
			if s.Stream != a.Source || s.IP != a.IP || (last == "" && s.State == "absent") || s.State == last {
				continue
			}
			got = append(got, fmt.Sprintf("%s %s %s", s.At, s.State, s.Evidence))
			last = s.State
		}
		if !slices.Equal(got, want) {
			t.Errorf("%s in stream %s:\ntimeline %q\nflapping %q", a.IP, a.Source, got, want)
		}
	}
}
