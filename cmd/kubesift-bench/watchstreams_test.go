package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/kubesift/kubesift/analyze"
	"github.com/kubesift/kubesift/ingest"
	"github.com/kubesift/kubesift/internal/testdb"
	"github.com/kubesift/kubesift/rules"
)

type streamEvent struct {
	AuditID    string `json:"auditID"`
	Stage      string `json:"stage"`
	Verb       string `json:"verb"`
	RequestURI string `json:"requestURI"`
	SourceIPs  []string
	ObjectRef  struct {
		Namespace string `json:"namespace"`
	} `json:"objectRef"`
	RequestReceivedTimestamp time.Time `json:"requestReceivedTimestamp"`
	StageTimestamp           time.Time `json:"stageTimestamp"`
}

// TestWatchStreams generates the watch-streams mix for four clients of 1,000 watches, checks that
// its events come in time order and that each watch is logged when it starts and when it ends,
// counts from the log itself which watches go back or repeat their version, and checks that
// watch-rewind reports exactly the rewinding and the repeating operator with those counts, and
// neither healthy client.
func TestWatchStreams(t *testing.T) {
	const chain = 1000
	var out bytes.Buffer
	events, written, err := writeWatchStreams(&out, watchStreamKinds, chain)
	if err != nil {
		t.Fatal(err)
	}
	if written != int64(out.Len()) {
		t.Fatalf("wrote %d bytes, buffer holds %d", written, out.Len())
	}
	stages := map[string]int{}      // audit ID -> stages logged
	watches := map[string][]int64{} // namespace of the operator (or the kube-proxy's address) -> versions asked for
	var last time.Time
	sc := bufio.NewScanner(bytes.NewReader(out.Bytes()))
	var n int64
	for sc.Scan() {
		n++
		var ev streamEvent
		if err := json.Unmarshal(sc.Bytes(), &ev); err != nil {
			t.Fatalf("line %d: %v", n, err)
		}
		if ev.StageTimestamp.Before(last) || ev.StageTimestamp.Before(ev.RequestReceivedTimestamp) {
			t.Fatalf("line %d: stage %s after %s, received %s", n, ev.StageTimestamp, last, ev.RequestReceivedTimestamp)
		}
		last = ev.StageTimestamp
		stages[ev.AuditID]++
		if ev.Verb != "watch" || ev.Stage != "ResponseStarted" {
			continue
		}
		u, err := url.Parse(ev.RequestURI)
		if err != nil {
			t.Fatal(err)
		}
		q := u.Query()
		rv, err := strconv.ParseInt(q.Get("resourceVersion"), 10, 64)
		if err != nil || q.Get("watch") != "true" || q.Get("allowWatchBookmarks") != "true" || q.Get("timeoutSeconds") == "" {
			t.Fatalf("line %d: watch URI %s", n, ev.RequestURI)
		}
		key := ev.ObjectRef.Namespace
		if key == "" {
			key = ev.SourceIPs[0]
		}
		watches[key] = append(watches[key], rv)
	}
	if n != events {
		t.Fatalf("%d lines, generator counted %d events", n, events)
	}
	for id, s := range stages {
		if !strings.HasPrefix(id, "ffffffff-") && !strings.HasSuffix(id, "-000000000000") && s != 2 {
			t.Fatalf("watch %s logged in %d stages, want 2", id, s)
		}
	}
	if len(watches) != watchStreamKinds {
		t.Fatalf("%d streams, want %d", len(watches), watchStreamKinds)
	}
	backwards, repeats := map[string]int{}, map[string]int{}
	for key, rvs := range watches {
		if len(rvs) != chain {
			t.Fatalf("stream %s has %d watches, want %d", key, len(rvs), chain)
		}
		highest := rvs[0]
		for i, rv := range rvs[1:] {
			switch {
			case rv < highest:
				backwards[key]++
			case rv == rvs[i]:
				repeats[key]++
			}
			highest = max(highest, rv)
		}
	}
	if backwards["team-2"] < 2 || repeats["team-3"] < 2 || len(backwards) != 1 || len(repeats) != 1 {
		t.Fatalf("backwards %v, repeats %v: want rewinds in team-2 and repeats in team-3 only", backwards, repeats)
	}

	dir := t.TempDir()
	input := filepath.Join(dir, "audit.log")
	if err := os.WriteFile(input, out.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	db := testdb.Empty(t)
	inputs, err := ingest.ExpandPaths([]string{input})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ingest.New(db, ingest.Options{}).Ingest(ctx, inputs); err != nil {
		t.Fatal(err)
	}
	builtin, err := rules.Builtin()
	if err != nil {
		t.Fatal(err)
	}
	var rule []rules.Rule
	for _, r := range builtin {
		if r.ID == "watch-rewind" {
			rule = append(rule, r)
		}
	}
	rep, err := analyze.Run(ctx, db, rule, analyze.Options{})
	if err != nil {
		t.Fatal(err)
	}
	all, err := rep.AllFindings()
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]analyze.Finding{}
	for _, f := range all {
		got[f.Namespace] = f
	}
	if len(got) != 2 || len(all) != 2 {
		t.Fatalf("findings %+v, want team-2 and team-3", all)
	}
	if f := got["team-2"]; f.Count != int64(backwards["team-2"]) || !strings.Contains(f.Summary, "went backwards") {
		t.Errorf("team-2: count %d, summary %q; want %d backwards", f.Count, f.Summary, backwards["team-2"])
	}
	if f := got["team-3"]; f.Count != int64(repeats["team-3"]) || !strings.Contains(f.Summary, "repeated the last version although a write had advanced it") {
		t.Errorf("team-3: count %d, summary %q; want %d repeats after writes", f.Count, f.Summary, repeats["team-3"])
	}
}
