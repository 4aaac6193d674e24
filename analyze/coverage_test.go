package analyze

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/kubesift/kubesift/ingest"
	"github.com/kubesift/kubesift/rules"
)

// auditCopy writes the audit log of a scenario through edit (which drops an event by returning
// nil) into a temporary directory, and returns the directory.
func auditCopy(t *testing.T, from string, edit func(ev map[string]any) map[string]any) string {
	t.Helper()
	in, err := os.Open(from)
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close()
	dir := t.TempDir()
	out, err := os.Create(filepath.Join(dir, "audit.log"))
	if err != nil {
		t.Fatal(err)
	}
	defer out.Close()
	sc := bufio.NewScanner(in)
	sc.Buffer(nil, 16<<20)
	enc := json.NewEncoder(out)
	for sc.Scan() {
		var ev map[string]any
		if err := json.Unmarshal(sc.Bytes(), &ev); err != nil {
			t.Fatalf("%s: %v", from, err)
		}
		if ev = edit(ev); ev != nil {
			if err := enc.Encode(ev); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return dir
}

// coverageOfRule returns the coverage of rule id in rep (one cluster: the recordings name none).
func coverageOfRule(t *testing.T, rep *Report, id string) Coverage {
	t.Helper()
	for _, o := range rep.Outcomes {
		if o.Rule.ID == id {
			if o.Err != nil || len(o.Coverage) != 1 {
				t.Fatalf("%s: error %v, coverage %+v", id, o.Err, o.Coverage)
			}
			return o.Coverage[0]
		}
	}
	t.Fatalf("no outcome of %s", id)
	return Coverage{}
}

func findingObjects(rep *Report, rule string) []string {
	var out []string
	for _, f := range rep.findings {
		if f.Rule == rule {
			out = append(out, object(f))
		}
	}
	return out
}

func analyzeDir(t *testing.T, dir string) *Report {
	t.Helper()
	rep, err := Run(context.Background(), loadDB(t, dir, ingest.Options{}), builtin(t), Options{})
	if err != nil {
		t.Fatal(err)
	}
	return rep
}

// TestMetadataCopyIsBlindAndTheLockFallbackFires: the election-lock-churn recording logged at
// Metadata level (bodies stripped): the rules that need bodies say they are blind and why, and
// probable-election-lock reports the locks without a Service that election-lock-churn found on
// the full recording, while on the full recording it stays silent.
func TestMetadataCopyIsBlindAndTheLockFallbackFires(t *testing.T) {
	const log = "samples/election-lock-churn/audit.log"
	meta := auditCopy(t, log, metadataOnly)
	rep := analyzeDir(t, meta)
	for id, reason := range map[string]string{
		"election-lock-churn": "Endpoints/ConfigMap writes in the audit log carry no bodies (level Metadata)",
		"endpoint-flapping":   "Endpoints/EndpointSlice writes in the audit log carry no bodies (level Metadata) and no snapshots were loaded",
	} {
		c := coverageOfRule(t, rep, id)
		if c.Status != rules.Blind || !strings.Contains(c.String(), reason) {
			t.Errorf("%s on the Metadata copy: %s; want blind: …%s…", id, c, reason)
		}
	}
	if got := findingObjects(rep, "election-lock-churn"); len(got) != 0 {
		t.Errorf("election-lock-churn reports %v without bodies", got)
	}
	got := strings.Join(findingObjects(rep, "probable-election-lock"), " ")
	for _, want := range []string{"lab/ingress-controller-leader", "lab/billing-operator-lock"} {
		if !strings.Contains(got, want) {
			t.Errorf("probable-election-lock on the Metadata copy reports %q; want %s among them", got, want)
		}
	}

	full := analyzeDir(t, log)
	if got := findingObjects(full, "probable-election-lock"); len(got) != 0 {
		t.Errorf("probable-election-lock reports %v where election-lock-churn confirmed the locks", got)
	}
	if c := coverageOfRule(t, full, "election-lock-churn"); c.Status == rules.Blind {
		t.Errorf("election-lock-churn on the full recording: %s", c)
	}
}

// TestPartialWithoutEndpointsWatches: lock writes with bodies but no endpoints watch in the log:
// election-lock-churn still reports the locks and says its fan-out is unknown (partial).
func TestPartialWithoutEndpointsWatches(t *testing.T) {
	dir := auditCopy(t, "samples/election-lock-churn/audit.log", withoutEndpointsWatches)
	rep := analyzeDir(t, dir)
	c := coverageOfRule(t, rep, "election-lock-churn")
	if c.Status != rules.Partial || !strings.Contains(c.String(), "no endpoints watches logged") {
		t.Errorf("election-lock-churn without endpoints watches: %s; want partial, no watches of endpoints", c)
	}
	if got := findingObjects(rep, "election-lock-churn"); len(got) == 0 {
		t.Error("election-lock-churn reports nothing with the lock writes' bodies in the log")
	}
}

// withoutEndpointsWatches drops the watches of endpoints and endpointslices (an auditCopy edit).
func withoutEndpointsWatches(ev map[string]any) map[string]any {
	ref, _ := ev["objectRef"].(map[string]any)
	if res, _ := ref["resource"].(string); ev["verb"] == "watch" && (res == "endpoints" || res == "endpointslices") {
		return nil
	}
	return ev
}

// TestNoPartialWithoutLocksWrittenOftenEnough: the coverage of the endpoints watches counts the
// locks the rule reports: with min_updates_per_min above every lock's rate there is none, so no
// fan-out is left uncounted and the rule is evaluated, with no finding.
func TestNoPartialWithoutLocksWrittenOftenEnough(t *testing.T) {
	dir := auditCopy(t, "samples/election-lock-churn/audit.log", withoutEndpointsWatches)
	db := loadDB(t, dir, ingest.Options{})
	set := map[string]map[string]any{"election-lock-churn": {"min_updates_per_min": 1000.0}}
	rep, err := Run(context.Background(), db, builtin(t), Options{Set: set})
	if err != nil {
		t.Fatal(err)
	}
	if c := coverageOfRule(t, rep, "election-lock-churn"); c.Status != rules.Evaluated {
		t.Errorf("election-lock-churn without locks written 1,000 times a minute: %s; want evaluated", c)
	}
	if got := findingObjects(rep, "election-lock-churn"); len(got) != 0 {
		t.Errorf("election-lock-churn reports %v with min_updates_per_min 1000", got)
	}
}

// TestGKEWatchesAreBlind: audit events from GKE's log entries have no request URI, so no
// resourceVersion parameter: watch-rewind says it is blind rather than reporting no findings.
func TestGKEWatchesAreBlind(t *testing.T) {
	db := scenarioDB(t, "samples/watch-rewind", ingest.Options{})
	if _, err := db.ExecContext(context.Background(), `UPDATE audit_events SET envelope = 'gke-logentry', request_uri = NULL,
		resource_version = NULL, resource_version_match = NULL, timeout_seconds = NULL`); err != nil {
		t.Fatal(err)
	}
	rep, err := Run(context.Background(), db, builtin(t), Options{})
	if err != nil {
		t.Fatal(err)
	}
	c := coverageOfRule(t, rep, "watch-rewind")
	if c.Status != rules.Blind || !strings.Contains(c.String(), "watch requests come from GKE log entries, which carry no request URI") {
		t.Errorf("watch-rewind on GKE entries: %s; want blind", c)
	}
	var gaps strings.Builder
	if err := writeTable(&gaps, rep, false); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(gaps.String(), "blind: watch-rewind (") {
		t.Errorf("the table does not say that watch-rewind is blind:\n%s", gaps.String())
	}
}

// TestCoverageOfClusters: a rule's gaps make it blind or partial in their own cluster only, the
// worst gap wins, and a rule without data is blind where a gap says why, else not evaluated.
func TestCoverageOfClusters(t *testing.T) {
	gs := []Gap{
		{Cluster: "prod", Status: rules.Partial, Reason: "no kube-proxy watches"},
		{Cluster: "prod", Status: rules.Blind, Reason: "no bodies"},
		{Cluster: "staging", Status: rules.Partial, Reason: "no kube-proxy watches"},
	}
	got := coverageOf([]string{"dev", "prod", "staging"}, nil, gs)
	want := []string{"evaluated", "blind: no kube-proxy watches; no bodies", "partial: no kube-proxy watches"}
	for i, c := range got {
		if c.String() != want[i] {
			t.Errorf("cluster %q: %s; want %s", c.Cluster, c, want[i])
		}
	}
	o := Outcome{Rule: rules.Rule{ID: "r"}, Evaluated: true, Coverage: got}
	if status, reason := o.CoverageSummary(); status != rules.Blind ||
		reason != "cluster prod: no kube-proxy watches; no bodies; cluster staging: no kube-proxy watches" {
		t.Errorf("summary %s (%s)", status, reason)
	}
	rep := &Report{Outcomes: []Outcome{o}}
	if lines := rep.CoverageGaps(rules.Blind); len(lines) != 1 || lines[0] != "blind: r [prod] (no kube-proxy watches; no bodies)" {
		t.Errorf("blind lines %q", lines)
	}
	none := coverageOf([]string{"prod", "staging"}, map[string]string{"prod": "no audit data", "staging": "no audit data"}, gs[1:2])
	if none[0].String() != "blind: no bodies" || none[1].String() != "not evaluated: no audit data" {
		t.Errorf("without data: %s, %s", none[0], none[1])
	}
	some := coverageOf([]string{"", "dev", "prod"}, map[string]string{"": "no conntrack data", "dev": "no conntrack data"}, nil)
	o = Outcome{Rule: rules.Rule{ID: "r"}, Evaluated: true, Coverage: some}
	rep = &Report{Outcomes: []Outcome{o}}
	if lines := rep.CoverageGaps(); len(lines) != 1 || lines[0] != "not evaluated: r [unnamed cluster, dev] (no conntrack data)" ||
		some[2].Status != rules.Evaluated {
		t.Errorf("evaluated in prod only: %q, %+v", lines, some)
	}
}

// metadataOnly strips an audit event's bodies, as a policy at Metadata level logs it.
func metadataOnly(ev map[string]any) map[string]any {
	delete(ev, "requestObject")
	delete(ev, "responseObject")
	ev["level"] = "Metadata"
	return ev
}

// TestCoverageIsPerCluster: two clusters whose Endpoints writes carry no bodies, one with
// Endpoints snapshots and one without, and a third with conntrack evidence only: the missing
// bodies make endpoint-flapping blind only where no snapshot of the same cluster makes up for
// them, and probe-conntrack-exhaustion is evaluated in the conntrack cluster only.
func TestCoverageIsPerCluster(t *testing.T) {
	dir := t.TempDir()
	for i, c := range []string{"with-snapshots", "without-snapshots"} {
		// the copies' audit IDs differ: events loaded once already would be skipped
		meta := auditCopy(t, "samples/flapping/audit.log", func(ev map[string]any) map[string]any {
			ev["auditID"] = fmt.Sprint(i, "-", ev["auditID"])
			return metadataOnly(ev)
		})
		if err := os.CopyFS(filepath.Join(dir, c), os.DirFS(meta)); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.CopyFS(filepath.Join(dir, "with-snapshots", "snapshots"), os.DirFS("samples/flapping/snapshots")); err != nil {
		t.Fatal(err)
	}
	if err := os.CopyFS(filepath.Join(dir, "nodes", "lab-node-1"), os.DirFS("samples/probe-conntrack/lab-node-1")); err != nil {
		t.Fatal(err)
	}
	db := loadDB(t, dir, ingest.Options{ClusterPerDir: true})
	rep, err := Run(context.Background(), db, builtin(t), Options{})
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, o := range rep.Outcomes {
		for _, c := range o.Coverage {
			got[o.Rule.ID+" "+c.Cluster] = c.String()
		}
	}
	for key, want := range map[string]string{
		"endpoint-flapping without-snapshots":          "blind: ",
		"endpoint-flapping with-snapshots":             "evaluated",
		"endpoint-flapping nodes":                      "not evaluated: no snapshot data",
		"probe-conntrack-exhaustion nodes":             "evaluated",
		"probe-conntrack-exhaustion with-snapshots":    "not evaluated: no conntrack data",
		"probe-conntrack-exhaustion without-snapshots": "not evaluated: no conntrack data",
	} {
		if !strings.HasPrefix(got[key], want) {
			t.Errorf("%s: %q; want %s…", key, got[key], want)
		}
	}
	if !strings.Contains(got["endpoint-flapping without-snapshots"], "no snapshots were loaded") {
		t.Errorf("endpoint-flapping without-snapshots: %s", got["endpoint-flapping without-snapshots"])
	}
}

// TestCoverageOfAWindow: a rule is evaluated in a cluster only when its inputs have rows in the
// window. samples/healthy's conntrack captures (06:01:30-06:01:50) lie before a window of its
// audit events (06:02-06:05), so probe-conntrack-exhaustion could not have seen that window's
// table: it was reported evaluated, as the database held captures of other times, where an
// analysis of the same window of a dataset (which reads only the window's days) said not evaluated.
func TestCoverageOfAWindow(t *testing.T) {
	db := scenarioDB(t, "samples", ingest.Options{ClusterPerDir: true})
	at := func(s string) *time.Time {
		tm, err := time.Parse(time.RFC3339, s)
		if err != nil {
			t.Fatal(err)
		}
		return &tm
	}
	for _, tc := range []struct {
		name         string
		since, until *time.Time
		healthy      string
	}{
		{"no window", nil, nil, "evaluated"},
		{"the captures' minute", at("2026-11-21T06:01:00Z"), at("2026-11-21T06:02:00Z"), "evaluated"},
		{"the audit events after them", at("2026-11-21T06:02:00Z"), at("2026-11-21T06:05:00Z"), "not evaluated: no conntrack data in the window"},
	} {
		rep, err := Run(context.Background(), db, []rules.Rule{builtinRule(t, "probe-conntrack-exhaustion")}, Options{Since: tc.since, Until: tc.until})
		if err != nil {
			t.Fatal(err)
		}
		var got string
		for _, c := range rep.Outcomes[0].Coverage {
			if c.Cluster == "healthy" {
				got = c.String()
			}
		}
		if got != tc.healthy {
			t.Errorf("%s: healthy %q; want %q", tc.name, got, tc.healthy)
		}
	}
	long := time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC)
	rep, err := Run(context.Background(), db, []rules.Rule{builtinRule(t, "probe-conntrack-exhaustion")}, Options{Until: &long})
	if err != nil {
		t.Fatal(err)
	}
	if o := rep.Outcomes[0]; o.Evaluated || o.Reason != "no conntrack data in the window" {
		t.Errorf("a window before every capture: evaluated %v, %q", o.Evaluated, o.Reason)
	}
	// without any capture at all, the window is not the reason
	none := scenarioDB(t, "samples/flapping", ingest.Options{})
	if rep, err = Run(context.Background(), none, []rules.Rule{builtinRule(t, "probe-conntrack-exhaustion")}, Options{Until: &long}); err != nil {
		t.Fatal(err)
	}
	if o := rep.Outcomes[0]; o.Evaluated || o.Reason != "no conntrack data" {
		t.Errorf("a window of a database without captures: evaluated %v, %q", o.Evaluated, o.Reason)
	}
}

// TestCoverageTakesTheRuleParams: lock-write-bodies leaves out the writes of the rule's
// endpoints_controller_usernames, so an override of that param changes the count of writes
// whose bodies are missing.
func TestCoverageTakesTheRuleParams(t *testing.T) {
	db := loadDB(t, auditCopy(t, "samples/election-lock-churn/audit.log", metadataOnly), ingest.Options{})
	reason := func(opt Options) string {
		rep, err := Run(context.Background(), db, builtin(t), opt)
		if err != nil {
			t.Fatal(err)
		}
		return coverageOfRule(t, rep, "election-lock-churn").String()
	}
	const without = "blind: 111 Endpoints/ConfigMap writes in the audit log carry no bodies"
	if got := reason(Options{}); !strings.HasPrefix(got, without) {
		t.Errorf("default endpoints controllers: %s; want %s…", got, without)
	}
	const with = "blind: 116 Endpoints/ConfigMap writes in the audit log carry no bodies"
	set := map[string]map[string]any{"election-lock-churn": {"endpoints_controller_usernames": ""}}
	if got := reason(Options{Set: set}); !strings.HasPrefix(got, with) {
		t.Errorf("no endpoints controllers: %s; want %s…", got, with)
	}
}
