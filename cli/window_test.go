package cli

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"sigs.k8s.io/yaml"
)

// TestScheduledWindowIsWhatArrived: with a persistent --db and no --since/--until, a run analyses
// the time span of the evidence loaded since the previous successful run, not the wall clock: a
// log delivered late (its events older than what was analysed before) is analysed when it
// arrives, a run without new loads evaluates nothing, and two runs in a row each analyse their own
// new lines.
func TestScheduledWindowIsWhatArrived(t *testing.T) {
	dir := t.TempDir()
	logs := filepath.Join(dir, "audit")
	os.MkdirAll(logs, 0o755)
	db := filepath.Join(dir, "k.duckdb")
	split := func(path string) []string {
		lines := strings.SplitAfter(string(readAll(t, path)), "\n")
		return lines[:len(lines)-1]
	}
	lines := split("../samples/healthy/audit.log")          // 06:02 to 06:04
	lateLines := split("../samples/watch-rewind/audit.log") // 05:56 to 05:58, with rewinds
	span := func(part []string) (first, last time.Time) {
		t.Helper()
		var times []time.Time
		for _, l := range part {
			var ev struct {
				StageTimestamp time.Time `json:"stageTimestamp"`
			}
			if err := json.Unmarshal([]byte(l), &ev); err != nil {
				t.Fatal(err)
			}
			times = append(times, ev.StageTimestamp)
		}
		return slices.MinFunc(times, time.Time.Compare), slices.MaxFunc(times, time.Time.Compare)
	}
	type finding struct {
		Rule string `json:"rule"`
	}
	type report struct {
		Since    *time.Time `json:"since"`
		Until    *time.Time `json:"until"`
		Findings []finding  `json:"findings"`
		Rules    []struct {
			ID        string `json:"id"`
			Evaluated bool   `json:"evaluated"`
			Reason    string `json:"reason"`
		} `json:"rules"`
	}
	run := func() report {
		t.Helper()
		r := runCLI(t, "run", "--db", db, "--summary", "none", "-o", "json", logs)
		if r.code != ExitOK {
			t.Fatalf("run: %+v", r)
		}
		var rep report
		if err := json.Unmarshal([]byte(r.stdout), &rep); err != nil {
			t.Fatalf("%v: %.300s", err, r.stdout)
		}
		return rep
	}
	wantWindow := func(name string, rep report, part []string) {
		t.Helper()
		first, last := span(part)
		first, last = first.Truncate(time.Second), last.Truncate(time.Second) // as -o json prints them
		if rep.Since == nil || rep.Until == nil || !rep.Since.Equal(first) || !rep.Until.Equal(last) {
			t.Errorf("%s: window %v to %v, want the new lines' %v to %v", name, rep.Since, rep.Until, first, last)
		}
	}
	live := filepath.Join(logs, "audit.log")
	os.WriteFile(live, []byte(strings.Join(lines[600:900], "")), 0o644)
	if rep := run(); rep.Since != nil || rep.Until != nil {
		t.Errorf("first run: window %v to %v, want everything", rep.Since, rep.Until)
	}

	// nothing new: no rule is evaluated, nothing is reported
	rep := run()
	if len(rep.Findings) != 0 || len(rep.Rules) == 0 {
		t.Errorf("run without new loads: %+v", rep)
	}
	for _, r := range rep.Rules {
		if r.Evaluated || r.Reason != nothingNewReason {
			t.Errorf("run without new loads: rule %+v", r)
		}
	}

	// two runs in a row on a growing log: each analyses the span of its new lines
	os.WriteFile(live, []byte(strings.Join(lines[600:], "")), 0o644)
	wantWindow("grown log", run(), lines[900:])

	// a log delivered late, its events older than everything analysed so far
	os.WriteFile(filepath.Join(logs, "late-export.log"), []byte(strings.Join(lateLines, "")), 0o644)
	late := run()
	wantWindow("late log", late, lateLines)
	if first, _ := span(lines[600:900]); !late.Until.Before(first) {
		t.Errorf("the late log's window ends %v, after the first run's evidence (%v)", late.Until, first)
	}
	if !slices.ContainsFunc(late.Findings, func(f finding) bool { return f.Rule == "watch-rewind" }) {
		t.Errorf("the late log's rewinds were not reported: %+v", late.Findings)
	}
	if again := run(); len(again.Findings) != 0 {
		t.Errorf("the late log was reported twice: %+v", again.Findings)
	}
}

// TestCronJobManifestAnalysesWhatArrived runs the command line of deploy/'s CronJob (its paths
// mapped into a temporary directory) as scheduled runs: it analyses what each run loaded, a log
// delivered late included, and a run with nothing new evaluates nothing.
func TestCronJobManifestAnalysesWhatArrived(t *testing.T) {
	var cronJob struct {
		Spec struct {
			JobTemplate struct {
				Spec struct {
					Template struct {
						Spec struct {
							Containers []struct {
								Name string   `json:"name"`
								Args []string `json:"args"`
							} `json:"containers"`
						} `json:"spec"`
					} `json:"template"`
				} `json:"spec"`
			} `json:"jobTemplate"`
		} `json:"spec"`
	}
	if err := yaml.Unmarshal(readAll(t, "../deploy/kubernetes/40-cronjob.yaml"), &cronJob); err != nil {
		t.Fatal(err)
	}
	var args []string
	for _, c := range cronJob.Spec.JobTemplate.Spec.Template.Spec.Containers {
		if c.Name == "kubesift" {
			args = c.Args
		}
	}
	if len(args) == 0 || args[0] != "run" || !slices.Contains(args, "--db") || slices.Contains(args, "--since") || slices.Contains(args, "--until") {
		t.Fatalf("the CronJob's kubesift container runs %q: want run --db without --since/--until", args)
	}
	dir := t.TempDir()
	mapped := strings.NewReplacer("/var/lib/kubesift", filepath.Join(dir, "data"), "/var/log/kubernetes/audit", filepath.Join(dir, "audit"))
	for i := range args {
		args[i] = mapped.Replace(args[i])
	}
	for _, d := range []string{"data/snapshots", "audit"} {
		os.MkdirAll(filepath.Join(dir, d), 0o755)
	}
	// The manifest keeps 7 days counted back from the wall clock, and the samples were recorded
	// days ago: their events are moved so that the latest of them is an hour before now, keeping
	// their order and gaps.
	healthy, late := readAll(t, "../samples/healthy/audit.log"), readAll(t, "../samples/watch-rewind/audit.log")
	shift := time.Now().Add(-time.Hour).Sub(latestEventTime(t, healthy, late))
	copyTo := func(log []byte, to string) {
		if err := os.WriteFile(filepath.Join(dir, "audit", to), shiftEventTimes(t, log, shift), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	copyTo(healthy, "audit.log")
	if r := runCLI(t, args...); r.code != ExitOK {
		t.Fatalf("first run: %+v", r)
	}
	copyTo(late, "audit-late-export.log") // older events
	if r := runCLI(t, args...); r.code != ExitFindings || !strings.Contains(r.stdout, "watch-rewind") {
		t.Errorf("the run after the late log arrived: exit %d\n%s", r.code, r.stdout)
	}
	if r := runCLI(t, args...); r.code != ExitOK || !strings.Contains(r.stdout, "not evaluated: watch-rewind ("+nothingNewReason+")") {
		t.Errorf("a run with nothing new: exit %d\n%s", r.code, r.stdout)
	}
}

// eventTimes matches an audit event's two timestamps.
var eventTimes = regexp.MustCompile(`"(requestReceivedTimestamp|stageTimestamp)":"([^"]+)"`)

// eventTime splits a match of eventTimes into its field name and its time.
func eventTime(t *testing.T, match []byte) (field []byte, at time.Time) {
	t.Helper()
	sub := eventTimes.FindSubmatch(match)
	at, err := time.Parse(time.RFC3339Nano, string(sub[2]))
	if err != nil {
		t.Fatalf("%s: %v", match, err)
	}
	return sub[1], at
}

// latestEventTime is the latest audit event time in logs of JSON lines.
func latestEventTime(t *testing.T, logs ...[]byte) time.Time {
	t.Helper()
	var latest time.Time
	for _, log := range logs {
		for _, match := range eventTimes.FindAll(log, -1) {
			if _, at := eventTime(t, match); at.After(latest) {
				latest = at
			}
		}
	}
	return latest
}

// shiftEventTimes moves every audit event in a log of JSON lines by d, leaving the rest of each
// line as it is.
func shiftEventTimes(t *testing.T, log []byte, d time.Duration) []byte {
	t.Helper()
	return eventTimes.ReplaceAllFunc(log, func(match []byte) []byte {
		field, at := eventTime(t, match)
		return fmt.Appendf(nil, "%q:%q", field, at.Add(d).Format(time.RFC3339Nano))
	})
}
