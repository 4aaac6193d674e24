package cli

import (
	"bytes"
	"encoding/json"
	"maps"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestRulesSurviveDamagedLogs runs every rule over the samples' audit logs damaged the way hand
// edits, broken shippers and corrupt disks damage them: values of the wrong type or out of range,
// members missing, leader records that are not JSON, addresses that are no list, resourceVersions
// at the ends of 64 bits or no number, times in year 1 or 9999. Each line stays one JSON object,
// so most events load (with warnings); no rule may fail on what loaded. Before their fixes, a
// leader record that is not JSON failed election-lock-churn, a slice's addresses that are no list
// endpoints-phantom-recreate, and a resourceVersion of -2^63 watch-rewind, each with these seeds
// (fixed, so that a failure repeats). The rule tests hold the one damage found that made a rule
// run away rather than fail (watch-rewind, a watch logged as received in year 1).
func TestRulesSurviveDamagedLogs(t *testing.T) {
	logs, err := filepath.Glob("../samples/*/audit.log")
	if err != nil || len(logs) == 0 {
		t.Fatalf("no sample audit logs: %v", err)
	}
	for _, seed := range []uint64{1, 2, 3, 4} {
		path := filepath.Join(t.TempDir(), "damaged.log")
		damageLogs(t, logs, path, rand.New(rand.NewPCG(seed, seed)))
		db := filepath.Join(t.TempDir(), "k.duckdb")
		out := filepath.Join(t.TempDir(), "findings.json")
		r := runCLI(t, "run", "--db", db, "-q", "-o", "json", "--out", out, path)
		if r.code != ExitOK || strings.Contains(r.stderr, "failed") {
			t.Errorf("seed %d: exit %d, stderr %q; want every rule to run over the damaged log", seed, r.code, r.stderr)
		}
	}
}

// damageLogs writes the events of logs to path, damaged by rng.
func damageLogs(t *testing.T, logs []string, path string, rng *rand.Rand) {
	t.Helper()
	var out bytes.Buffer
	for _, log := range logs {
		data, err := os.ReadFile(log)
		if err != nil {
			t.Fatal(err)
		}
		for line := range bytes.Lines(data) {
			var event map[string]any
			dec := json.NewDecoder(bytes.NewReader(line))
			dec.UseNumber()
			if dec.Decode(&event) != nil {
				continue
			}
			damageEvent(event, rng)
			b, err := json.Marshal(event)
			if err != nil {
				t.Fatal(err)
			}
			out.Write(append(b, '\n'))
		}
	}
	if err := os.WriteFile(path, out.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
}

// damagedStrings and damagedValues are what a damaged member holds instead of its value.
var (
	damagedStrings = []string{"", "not json", "{", "-1", "99999999999999999999999", "NaN", "1e400", "null", "[]", "{}",
		`{"holderIdentity":5}`, `{"holderIdentity":"x","leaderTransitions":"many"}`, strings.Repeat("a", 5000)}
	damagedValues = []any{nil, 0, -1, json.Number("9223372036854775808"), json.Number("-9223372036854775808"), 1.5, true,
		[]any{}, map[string]any{}, []any{1, "a"}, map[string]any{"a": nil}}
	damagedTimes = []string{"0001-01-01T00:00:00Z", "9999-12-31T23:59:59.999999Z", "1970-01-01T00:00:00Z", "yesterday"}
	damagedRVs   = []string{"-", "99999999999999999999", "1e5", "abc", "%zz", "-9223372036854775808"}
)

// damageEvent damages one event in place: a third of the events anywhere, and every event, less
// often, where the rules read it. Its kind, apiVersion, auditID and stage stay, so that it still
// loads as an event.
func damageEvent(event map[string]any, rng *rand.Rand) {
	if rng.Float64() < 0.35 {
		keep := map[string]any{}
		for _, k := range []string{"kind", "apiVersion", "auditID", "stage"} {
			if v, ok := event[k]; ok {
				keep[k] = v
			}
		}
		damageValue(event, rng)
		maps.Copy(event, keep)
	}
	for _, body := range []string{"requestObject", "responseObject"} {
		b, _ := event[body].(map[string]any)
		meta, _ := b["metadata"].(map[string]any)
		annotations, _ := meta["annotations"].(map[string]any)
		if _, ok := annotations["control-plane.alpha.kubernetes.io/leader"]; ok && rng.Float64() < 0.3 {
			annotations["control-plane.alpha.kubernetes.io/leader"] = damagedStrings[rng.IntN(len(damagedStrings))]
		}
		if _, ok := meta["resourceVersion"]; ok && rng.Float64() < 0.05 {
			meta["resourceVersion"] = damagedValues[rng.IntN(len(damagedValues))]
		}
		// an EndpointSlice's endpoints, an Endpoints' subsets: their addresses are what the rules read of bodies
		for _, list := range []string{"endpoints", "subsets"} {
			items, _ := b[list].([]any)
			for _, item := range items {
				if item, ok := item.(map[string]any); ok && rng.Float64() < 0.3 {
					item["addresses"] = damagedValues[rng.IntN(len(damagedValues))]
				}
			}
		}
	}
	if uri, ok := event["requestURI"].(string); ok && rng.Float64() < 0.3 {
		event["requestURI"] = strings.Replace(uri, "resourceVersion=", "resourceVersion="+damagedRVs[rng.IntN(len(damagedRVs))], 1)
	}
	for _, ts := range []string{"requestReceivedTimestamp", "stageTimestamp"} {
		if _, ok := event[ts]; ok && rng.Float64() < 0.05 {
			event[ts] = damagedTimes[rng.IntN(len(damagedTimes))]
		}
	}
}

// damageValue replaces, drops or recurses into the members and items of v.
func damageValue(v any, rng *rand.Rand) any {
	switch v := v.(type) {
	case map[string]any:
		for _, k := range slices.Sorted(maps.Keys(v)) { // in order: the same seed damages the same members
			member := v[k]
			switch r := rng.Float64(); {
			case r < 0.04:
				v[k] = damagedValues[rng.IntN(len(damagedValues))]
			case r < 0.06:
				delete(v, k)
			default:
				v[k] = damageValue(member, rng)
			}
		}
		return v
	case []any:
		for i := range v {
			v[i] = damageValue(v[i], rng)
		}
		return v
	case string:
		if rng.Float64() < 0.03 {
			return damagedStrings[rng.IntN(len(damagedStrings))]
		}
	}
	return v
}
