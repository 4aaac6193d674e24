package k8sobj

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func FuzzDecode(f *testing.F) {
	files, _ := filepath.Glob("testdata/*.*.*")
	for _, name := range files {
		b, err := os.ReadFile(name)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Add([]byte(`{"type":"DELETED","object":{"kind":"Pod","metadata":{"name":"p"}}}`))
	f.Add([]byte("items:\n- kind: Lease\n  spec: {holderIdentity: a, leaseTransitions: 2}\n"))
	widths := map[string]int{}
	for _, r := range []Record{EndpointAddress{}, Service{}, Pod{}, PodProbe{}, ObjectAnnotation{}, LeaderLock{}} {
		widths[r.Table()] = len(r.Values())
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		c := &collector{}
		st, err := Decode("fuzz", bytes.NewReader(in), c)
		if err != nil {
			t.Fatalf("Decode: %v", err)
		}
		lines := bytes.Count(in, []byte("\n")) + 1
		total := 0
		for _, n := range st.Rows {
			total += n
		}
		if total != len(c.rows) || st.Bad != len(c.bad) {
			t.Fatalf("accounting: stats %+v, %d rows, %d bad", st, len(c.rows), len(c.bad))
		}
		for _, r := range c.rows {
			v := r.Values()
			if len(v) != widths[r.Table()] {
				t.Fatalf("%s: %d values", r.Table(), len(v))
			}
			if l, _ := v[0].(int64); l < 0 || l > int64(lines) {
				t.Fatalf("%s: line %d of %d", r.Table(), l, lines)
			}
		}
		for _, b := range c.bad {
			if b.Line < 0 || b.Line > lines || b.Off < 0 || b.Off > int64(len(in)) || len(b.Excerpt) > 4*excerptLen {
				t.Fatalf("bad report %+v for %d lines, %d bytes", b, lines, len(in))
			}
		}
		Detect(in)
		if len(in) < 4096 {
			DecodeObject(in, ObjectOptions{Kind: "endpoints", Deleted: len(in)%2 == 0, Name: "x"}, &collector{})
		}
	})
}

// FuzzYAMLItems: the items of a YAML List, cut at their entries and decoded one at a time
// (yamlItems), give the rows that decoding the whole document at once gives (a quoted "items"
// key is not streamed). Inputs with bad items are only checked not to crash: a bad entry
// costs the streamer that entry and the whole decode the document. The seeds are short, one per
// kind of object: the fuzzer minimizes every input that finds new coverage, at a cost quadratic
// in its length, and the items of the corpus's Lists (kilobytes) left 3.6k executions in 3 minutes.
func FuzzYAMLItems(f *testing.F) {
	f.Add([]byte("- apiVersion: v1\n  kind: Endpoints\n  metadata: {name: web, namespace: shop, resourceVersion: \"3\"}\n  subsets:\n  - addresses: [{ip: 10.0.1.5, nodeName: n1, targetRef: {kind: Pod, name: web-1}}]\n    notReadyAddresses: [{ip: 10.0.1.6}]\n    ports: [{port: 8080, protocol: TCP}]\n"))
	f.Add([]byte("- kind: Service\n  metadata: {name: web, namespace: shop}\n  spec: {clusterIP: 10.96.0.5, selector: {app: web}, ports: [{port: 80}]}\n"))
	f.Add([]byte("- kind: Pod\n  metadata: {name: web-1, namespace: shop}\n  spec:\n    nodeName: n1\n    containers:\n    - name: c\n      livenessProbe: {httpGet: {port: 8080}, periodSeconds: 1}\n  status: {podIP: 10.0.1.5}\n"))
	f.Add([]byte("- kind: ConfigMap\n  metadata:\n    name: lock\n    annotations:\n      control-plane.alpha.kubernetes.io/leader: '{\"holderIdentity\":\"a\",\"leaseDurationSeconds\":15}'\n"))
	f.Add([]byte("- kind: Lease\n  metadata: {name: a, namespace: n}\n  spec: {holderIdentity: a, leaseTransitions: 2}\n\n  # c\n- kind: Service\n  metadata:\n    name: s\n"))
	f.Add([]byte("  - kind: Endpoints\n    metadata: {name: e}\n    subsets:\n    - addresses:\n      - ip: 10.0.0.1\n"))
	f.Fuzz(func(t *testing.T, items []byte) {
		const head = "apiVersion: v1\nkind: List\n"
		streamed, whole := &collector{}, &collector{}
		if _, err := Decode("fuzz.yaml", bytes.NewReader([]byte(head+"items:\n"+string(items))), streamed); err != nil {
			t.Fatalf("Decode: %v", err)
		}
		if _, err := Decode("fuzz.yaml", bytes.NewReader([]byte(head+"\"items\":\n"+string(items))), whole); err != nil {
			t.Fatalf("Decode: %v", err)
		}
		if len(streamed.bad) > 0 || len(whole.bad) > 0 {
			return
		}
		a, b := rowsText(streamed.rows), rowsText(whole.rows)
		if a != b {
			t.Fatalf("streamed items give\n%s\nthe whole document\n%s", a, b)
		}
	})
}

func rowsText(rows []Record) string {
	var b strings.Builder
	for _, r := range rows {
		fmt.Fprintln(&b, r.Table(), r.Values())
	}
	return b.String()
}
