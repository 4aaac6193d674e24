package cli

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/kubesift/kubesift/analyze"
	"github.com/kubesift/kubesift/rules"
)

// findingKeys analyzes db and returns each finding as one line (rule, severity, cluster, object,
// subject, count, span and, with summaries, the summary), sorted.
func findingKeys(t *testing.T, db string, summaries bool) []string {
	t.Helper()
	r := runCLI(t, "analyze", "--db", db, "-o", "json")
	if r.code != ExitOK {
		t.Fatalf("analyze %s: %+v", db, r)
	}
	var rep struct{ Findings []analyze.Finding }
	if err := json.Unmarshal([]byte(r.stdout), &rep); err != nil {
		t.Fatal(err)
	}
	var keys []string
	for _, f := range rep.Findings {
		k := fmt.Sprintf("%s %s cluster=%q %s/%s %q count=%d %s..%s", f.Rule, f.Severity, f.Cluster, f.Namespace, f.Name, f.Subject,
			f.Count, f.FirstSeen.Format("15:04:05.000000"), f.LastSeen.Format("15:04:05.000000"))
		if summaries {
			k += " " + f.Summary
		}
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

func ingestInto(t *testing.T, db string, args ...string) {
	t.Helper()
	if r := runCLI(t, append([]string{"ingest", "--quiet", "--db", db}, args...)...); r.code != ExitOK {
		t.Fatalf("ingest %v: %+v", args, r)
	}
}

var auditIDField = regexp.MustCompile(`"auditID":"([^"]+)"`)

// splitByRequest writes the audit log's requests alternately to two files (all the stages of
// one request, one audit ID, go to the same file), as two HA apiservers would log them.
func splitByRequest(t *testing.T, log, a, b string) {
	t.Helper()
	in, err := os.ReadFile(log)
	if err != nil {
		t.Fatal(err)
	}
	var out [2]bytes.Buffer
	which := map[string]int{}
	sc := bufio.NewScanner(bytes.NewReader(in))
	sc.Buffer(nil, 16<<20)
	for sc.Scan() {
		m := auditIDField.FindSubmatch(sc.Bytes())
		if m == nil {
			t.Fatalf("%s: a line without auditID: %.80s", log, sc.Text())
		}
		i, ok := which[string(m[1])]
		if !ok {
			i = len(which) % 2
			which[string(m[1])] = i
		}
		out[i].Write(sc.Bytes())
		out[i].WriteByte('\n')
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	for i, path := range []string{a, b} {
		if out[i].Len() == 0 {
			t.Fatalf("%s got no request", path)
		}
		if err := os.WriteFile(path, out[i].Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// TestTwoAPIServersOfOneCluster: a real recording whose requests are split between the logs of
// two apiservers (--apiserver a, --apiserver b) gives the same findings as the single log: rules
// follow a client across apiservers.
func TestTwoAPIServersOfOneCluster(t *testing.T) {
	const log = "../samples/watch-rewind/audit.log"
	dir := t.TempDir()
	a, b := filepath.Join(dir, "a.log"), filepath.Join(dir, "b.log")
	splitByRequest(t, log, a, b)

	whole := filepath.Join(dir, "whole.duckdb")
	ingestInto(t, whole, "--cluster", "lab", log)
	split := filepath.Join(dir, "split.duckdb")
	ingestInto(t, split, "--cluster", "lab", "--apiserver", "a", a)
	ingestInto(t, split, "--cluster", "lab", "--apiserver", "b", b)
	r := runCLI(t, "query", "--db", split, "-o", "csv", "SELECT apiserver, count(DISTINCT audit_id) AS n FROM audit_events GROUP BY ALL ORDER BY 1")
	if r.code != ExitOK || !strings.Contains(r.stdout, "\na,") || !strings.Contains(r.stdout, "\nb,") {
		t.Fatalf("the split logs are not two apiservers' logs: %+v", r)
	}

	want := findingKeys(t, whole, true)
	if !slices.ContainsFunc(want, func(k string) bool { return strings.HasPrefix(k, "watch-rewind ") }) {
		t.Fatalf("the whole recording has no watch-rewind finding:\n%s", strings.Join(want, "\n"))
	}
	if got := findingKeys(t, split, true); !slices.Equal(got, want) {
		t.Errorf("split between two apiservers:\n%s\nthe single log:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// TestHAApiserversNamed: the HA recordings (two real apiservers behind a load balancer, a rolling
// restart and a crash) loaded with each log under its apiserver's name: ha-apiservers, every
// client healthy, is as quiet as loaded unnamed (TestScenarioExpectations), and ha-rewind's buggy
// client, whose watches went to both apiservers, is followed across them and found; each
// apiserver's events keep its name.
func TestHAApiserversNamed(t *testing.T) {
	for _, tt := range []struct {
		sample   string
		cp1, cp2 int
		want     []string // what the findings' keys (findingKeys, with summaries) hold, in order
	}{
		{"ha-apiservers", 2683, 2376, nil},
		// one watch loop per collection over both apiservers: 105 watches, 47 and 46 of them on cp1
		{"ha-rewind", 2992, 2621, []string{
			`endpoints-phantom-recreate critical cluster="" shop/checkout "system:serviceaccount:shop:svc-cleanup-operator* count=21 `,
			`watch-rewind critical cluster="" shop/endpoints "system:serviceaccount:shop:svc-cleanup-operator* count=51 * 51 times (of 105 watches) `,
			`watch-rewind critical cluster="" shop/services "system:serviceaccount:shop:svc-cleanup-operator* count=51 * 51 times (of 105 watches) `,
		}},
	} {
		t.Run(tt.sample, func(t *testing.T) {
			sample := "../samples/" + tt.sample
			db := filepath.Join(t.TempDir(), "ha.duckdb")
			ingestInto(t, db, "--apiserver", "cp1", sample+"/cp1")
			ingestInto(t, db, "--apiserver", "cp2", sample+"/cp2")
			ingestInto(t, db, sample+"/snapshots")
			r := runCLI(t, "query", "--db", db, "-o", "csv", "SELECT apiserver, count(*) AS n FROM audit_events GROUP BY ALL ORDER BY 1")
			if want := fmt.Sprintf("apiserver,n\ncp1,%d\ncp2,%d\n", tt.cp1, tt.cp2); r.code != ExitOK || r.stdout != want {
				t.Fatalf("events by apiserver: %+v, want %q", r, want)
			}
			keys := findingKeys(t, db, true)
			ok := len(keys) == len(tt.want)
			for i := 0; ok && i < len(keys); i++ {
				ok = rules.GlobMatcher(tt.want[i] + "*")(keys[i])
			}
			if !ok {
				t.Errorf("its apiservers named:\n%s\nwant\n%s", strings.Join(keys, "\n"), strings.Join(tt.want, "\n"))
			}
		})
	}
}

// TestTwoClustersInOneDatabase: the same recording loaded as two clusters (audit IDs shifted,
// as two clusters' requests never share them) gives every finding once per cluster, never
// merged; and two lab clusters recorded at the same time, loaded together, give no finding
// that neither has alone.
func TestTwoClustersInOneDatabase(t *testing.T) {
	t.Run("the same recording as clusters x and y", func(t *testing.T) {
		const log = "../samples/watch-rewind/audit.log"
		dir := t.TempDir()
		in, err := os.ReadFile(log)
		if err != nil {
			t.Fatal(err)
		}
		shifted := filepath.Join(dir, "y.log")
		if err := os.WriteFile(shifted, auditIDField.ReplaceAll(in, []byte(`"auditID":"y-$1"`)), 0o644); err != nil {
			t.Fatal(err)
		}
		alone := filepath.Join(dir, "alone.duckdb")
		ingestInto(t, alone, "--cluster", "x", log)
		both := filepath.Join(dir, "both.duckdb")
		ingestInto(t, both, "--cluster", "x", log)
		ingestInto(t, both, "--cluster", "y", shifted)

		x := findingKeys(t, alone, false)
		if len(x) == 0 {
			t.Fatal("the recording alone has no finding")
		}
		var want []string
		for _, k := range x {
			want = append(want, k, strings.Replace(k, `cluster="x"`, `cluster="y"`, 1))
		}
		slices.Sort(want)
		if got := findingKeys(t, both, false); !slices.Equal(got, want) {
			t.Errorf("clusters x and y in one database:\n%s\nwant each finding of x once per cluster:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
		}
	})
	t.Run("tricky-healthy and slow-rewind together", func(t *testing.T) {
		dir := t.TempDir()
		together := filepath.Join(dir, "together.duckdb")
		var want []string
		for _, scenario := range []string{"tricky-healthy", "slow-rewind"} {
			path := "../samples/" + scenario
			alone := filepath.Join(dir, scenario+".duckdb")
			ingestInto(t, alone, "--cluster", scenario, path)
			want = append(want, findingKeys(t, alone, true)...)
			ingestInto(t, together, "--cluster", scenario, path)
		}
		slices.Sort(want)
		if got := findingKeys(t, together, true); !slices.Equal(got, want) {
			t.Errorf("loaded together:\n%s\neach alone:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
		}
	})
}
