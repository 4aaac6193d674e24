package k8sobj

import (
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"
)

type want struct {
	format      string
	docs, lists int
	watch       int
	objects     int
	kinds       map[string]int
	ignored     int
	rows        map[string]int
	bad         []int // lines of the Bad reports, in order
	badContains []string
}

var endpointRows = map[string]int{"endpoint_addresses": 9, "leader_locks": 1, "object_annotations": 3}
var endpointKinds = map[string]int{"Endpoints": 3, "EndpointSlice": 2}
var combinedRows = map[string]int{"endpoint_addresses": 9, "leader_locks": 3, "object_annotations": 5, "pod_probes": 5, "pods": 1, "services": 1}
var combinedKinds = map[string]int{"ConfigMap": 2, "Deployment": 1, "EndpointSlice": 2, "Endpoints": 3, "Lease": 1, "Namespace": 1, "Pod": 1, "Service": 1}

var cases = map[string]want{
	"list.good.json":         {format: "json", lists: 1, objects: 5, kinds: endpointKinds, rows: endpointRows},
	"list.good.yaml":         {format: "yaml", docs: 1, lists: 1, objects: 5, kinds: endpointKinds, rows: endpointRows},
	"combined.good.json":     {format: "json", lists: 1, objects: 12, kinds: combinedKinds, ignored: 2, rows: combinedRows},
	"combined.good.yaml":     {format: "yaml", docs: 1, lists: 1, objects: 12, kinds: combinedKinds, ignored: 2, rows: combinedRows},
	"multidoc.good.yaml":     {format: "yaml", docs: 12, objects: 12, kinds: combinedKinds, ignored: 2, rows: combinedRows},
	"single.good.json":       {format: "json", objects: 1, kinds: map[string]int{"Endpoints": 1}, rows: map[string]int{"endpoint_addresses": 3, "object_annotations": 1}},
	"single.good.yaml":       {format: "yaml", docs: 1, objects: 1, kinds: map[string]int{"EndpointSlice": 1}, rows: map[string]int{"endpoint_addresses": 3, "object_annotations": 1}},
	"typedlist.good.json":    {format: "json", lists: 1, objects: 2, kinds: map[string]int{"Endpoints": 2}, rows: map[string]int{"endpoint_addresses": 4, "object_annotations": 1}},
	"watch-w.good.json":      {format: "json", objects: 3, kinds: map[string]int{"Endpoints": 3}, rows: map[string]int{"endpoint_addresses": 9, "object_annotations": 3}},
	"watch-events.good.json": {format: "json", watch: 4, objects: 3, kinds: map[string]int{"EndpointSlice": 3}, rows: map[string]int{"endpoint_addresses": 5, "object_annotations": 1}},
	"v1beta1.good.json":      {format: "json", lists: 1, objects: 1, kinds: map[string]int{"EndpointSlice": 1}, rows: map[string]int{"endpoint_addresses": 2}},
	"truncated.bad.json": {format: "json", objects: 1, kinds: map[string]int{"Endpoints": 1}, rows: map[string]int{"endpoint_addresses": 3, "object_annotations": 1},
		bad: []int{89}, badContains: []string{"truncated JSON: input ends at line 89 inside the value that starts at line 60"}},
	"garbage.bad.json": {format: "json", objects: 2, kinds: map[string]int{"Endpoints": 2}, rows: map[string]int{"endpoint_addresses": 6, "object_annotations": 2},
		bad: []int{62}, badContains: []string{"invalid JSON at line 62 (value starts at line 60)"}},
	"types.bad.json": {format: "json", lists: 1, objects: 3, kinds: map[string]int{"Endpoints": 2, "Service": 1}, rows: map[string]int{"endpoint_addresses": 4, "object_annotations": 1},
		bad: []int{4}, badContains: []string{"decoding Service: json: cannot unmarshal string"}},
	"broken.bad.yaml": {format: "yaml", docs: 3, objects: 2, kinds: map[string]int{"Endpoints": 1, "Service": 1}, rows: map[string]int{"endpoint_addresses": 1, "object_annotations": 1, "services": 1},
		bad: []int{29}, badContains: []string{"invalid YAML in the document starting at line 28: yaml: line 29:"}},
	"badleader.bad.json": {format: "json", objects: 1, kinds: map[string]int{"Endpoints": 1}, rows: map[string]int{"endpoint_addresses": 1, "object_annotations": 1},
		bad: []int{1}, badContains: []string{"is not a leader-election record"}},
}

func TestDecodeFixtures(t *testing.T) {
	for name, w := range cases {
		t.Run(name, func(t *testing.T) {
			st, c := decodeFile(t, name)
			if st.Format != w.format || st.Documents != w.docs || st.Lists != w.lists || st.WatchEvents != w.watch ||
				st.Objects != w.objects || st.Ignored != w.ignored {
				t.Errorf("stats %+v, want %+v", st, w)
			}
			if !reflect.DeepEqual(st.Kinds, w.kinds) {
				t.Errorf("kinds %v, want %v", st.Kinds, w.kinds)
			}
			if !reflect.DeepEqual(st.Rows, w.rows) {
				t.Errorf("rows %v, want %v", st.Rows, w.rows)
			}
			// Exact accounting: every row counted once, every Bad counted once.
			total := 0
			for _, n := range st.Rows {
				total += n
			}
			if total != len(c.rows) {
				t.Errorf("Stats.Rows adds up to %d, handler got %d", total, len(c.rows))
			}
			if st.Bad != len(c.bad) || len(c.bad) != len(w.bad) {
				t.Fatalf("bad: stats %d, handler %v, want lines %v", st.Bad, c.bad, w.bad)
			}
			for i, b := range c.bad {
				if b.Line != w.bad[i] || !strings.Contains(b.Reason, w.badContains[i]) || b.Excerpt == "" {
					t.Errorf("bad[%d] = %+v, want line %d containing %q", i, b, w.bad[i], w.badContains[i])
				}
			}
			// Every row's values match its table's width and carry a line.
			for _, r := range c.rows {
				v := r.Values()
				if v[0] == nil {
					t.Errorf("%s row without source_line: %v", r.Table(), v)
				}
			}
		})
	}
}

func addr(t *testing.T, c *collector) []EndpointAddress {
	var out []EndpointAddress
	for _, r := range c.table(TableEndpointAddresses) {
		out = append(out, r.(EndpointAddress))
	}
	return out
}

func TestEndpointRows(t *testing.T) {
	_, c := decodeFile(t, "combined.good.json")
	rows := addr(t, c)
	type key struct{ kind, name, ip string }
	got := map[key]EndpointAddress{}
	for _, r := range rows {
		got[key{r.Kind, r.Name, r.IP}] = r
	}
	b := func(v *bool) string {
		if v == nil {
			return "null"
		}
		if *v {
			return "t"
		}
		return "f"
	}
	for _, tc := range []struct {
		k                           key
		ready, serving, terminating string
		pod, node, zone, svc, ports string
		line                        int64
	}{
		{key{"Endpoints", "web", "10.0.1.5"}, "t", "t", "null", "web-1", "n1", "", "web", "http:8080/TCP,metrics:9090/TCP", 4},
		{key{"Endpoints", "web", "10.0.3.9"}, "f", "f", "null", "web-3", "n3", "", "web", "http:8080/TCP,metrics:9090/TCP", 4},
		{key{"Endpoints", "empty", ""}, "null", "null", "null", "", "", "", "empty", "", 65},
		{key{"EndpointSlice", "web-abc12", "10.0.1.5"}, "t", "t", "f", "web-1", "n1", "us-east-1a", "web", "http:8080/TCP", 90},
		{key{"EndpointSlice", "web-abc12", "10.0.3.9"}, "f", "t", "t", "web-3", "n3", "us-east-1c", "web", "http:8080/TCP", 90},
		{key{"EndpointSlice", "web-abc12", "10.0.2.7"}, "t", "t", "f", "web-2", "n2", "us-east-1b", "web", "http:8080/TCP", 90}, // unset conditions
		{key{"EndpointSlice", "empty-zz9", ""}, "null", "null", "null", "", "", "", "empty", "", 165},
	} {
		r, ok := got[tc.k]
		if !ok {
			t.Errorf("no row %v", tc.k)
			continue
		}
		if b(r.Ready) != tc.ready || b(r.Serving) != tc.serving || b(r.Terminating) != tc.terminating ||
			r.Pod != tc.pod || r.Node != tc.node || r.Zone != tc.zone || r.Service != tc.svc || r.Ports != tc.ports || r.Line != tc.line || r.Deleted {
			t.Errorf("%v: got %+v", tc.k, r)
		}
	}
}

func TestWatchStreamsOrderAndDelete(t *testing.T) {
	_, c := decodeFile(t, "watch-w.good.json")
	var seq []string
	for _, r := range addr(t, c) {
		if r.IP == "10.0.3.9" {
			seq = append(seq, r.ResourceVersion+":"+map[bool]string{true: "ready", false: "notReady"}[*r.Ready])
		}
	}
	if want := []string{"300:ready", "301:notReady", "302:ready"}; !reflect.DeepEqual(seq, want) {
		t.Errorf("flap sequence %v, want %v", seq, want)
	}
	_, c = decodeFile(t, "watch-events.good.json")
	rows := addr(t, c)
	last := rows[len(rows)-1]
	if !last.Deleted || last.IP != "" || last.Event != "DELETED" || last.Seq != 3 || last.Line != 4 || last.Service != "empty" {
		t.Errorf("deleted marker %+v", last)
	}
	if rows[len(rows)-2].Deleted || rows[len(rows)-2].Event != "MODIFIED" {
		t.Errorf("empty marker %+v", rows[len(rows)-2])
	}
}

func TestV1beta1(t *testing.T) {
	_, c := decodeFile(t, "v1beta1.good.json")
	rows := addr(t, c)
	if len(rows) != 2 || rows[0].Zone != "eu-west-1a" || rows[0].Node != "node-a" || rows[1].Zone != "eu-west-1b" || rows[1].Node != "node-b" ||
		*rows[1].Ready || rows[0].Service != "api" || rows[0].Ports != "grpc:9000/TCP" {
		t.Errorf("v1beta1 rows %+v", rows)
	}
}

func TestPodsServicesLeases(t *testing.T) {
	_, c := decodeFile(t, "multidoc.good.yaml")
	p := c.table(TablePods)[0].(Pod)
	if p.Readiness != (ProbeSummary{"http", 8080, 5}) || p.Liveness != (ProbeSummary{"tcp", 8080, 20}) || p.Startup.Type != "" ||
		p.Probes != 5 || p.Containers != 2 || p.Restarts != 3 || p.OwnerKind != "ReplicaSet" || p.Ready == nil || !*p.Ready || p.Labels["app"] != "web" {
		t.Errorf("pod %+v", p)
	}
	var probes []string
	for _, r := range c.table(TablePodProbes) {
		pp := r.(PodProbe)
		probes = append(probes, strings.Join([]string{pp.Container, pp.ContainerType, pp.Probe, pp.Type, itoa(int(pp.Port)), itoa(int(pp.PeriodS))}, "/"))
	}
	want := []string{"app/container/readiness/http/8080/5", "app/container/liveness/tcp/8080/20", "exporter/container/readiness/grpc/9555/10",
		"exporter/container/liveness/exec/0/30", "mesh/sidecar/startup/http/15021/1"}
	if !reflect.DeepEqual(probes, want) {
		t.Errorf("probes %v, want %v", probes, want)
	}
	s := c.table(TableServices)[0].(Service)
	if s.Ports != "http:80->8080/TCP,metrics:9090->metrics/TCP" || s.Selector["app"] != "web" || s.Type != "ClusterIP" {
		t.Errorf("service %+v", s)
	}
	var locks []string
	for _, r := range c.table(TableLeaderLocks) {
		l := r.(LeaderLock)
		locks = append(locks, l.Kind+"/"+l.Name+"/"+l.LockType+"/"+l.Holder+"/"+itoa(int(*l.Transitions))+"/"+l.RenewTime.Format(time.RFC3339Nano))
	}
	wantLocks := []string{"Endpoints/kube-scheduler/annotation/master-1_abc/7/2026-11-21T04:28:18Z",
		"ConfigMap/kube-controller-manager/annotation/master-2_def/3/2026-11-21T04:28:18Z",
		"Lease/kube-controller-manager/lease/master-2_def/4/2026-11-21T04:28:18.123456Z"}
	if !reflect.DeepEqual(locks, wantLocks) {
		t.Errorf("locks %v, want %v", locks, wantLocks)
	}
}

type failingHandler struct{ collector }

func (f *failingHandler) Row(r Record) error { return errors.New("appender full") }

func TestHandlerErrorStops(t *testing.T) {
	for _, name := range []string{"combined.good.json", "multidoc.good.yaml", "watch-w.good.json"} {
		_, err := Decode(name, strings.NewReader(string(readFixture(t, name))), &failingHandler{})
		if err == nil || err.Error() != "appender full" {
			t.Errorf("%s: err %v", name, err)
		}
	}
}

type failingReader struct{ data string }

func (r *failingReader) Read(p []byte) (int, error) {
	if r.data == "" {
		return 0, errors.New("disk on fire")
	}
	n := copy(p, r.data)
	r.data = r.data[n:]
	return n, nil
}

func TestReadErrorIsReturned(t *testing.T) {
	for _, name := range []string{"combined.good.json", "multidoc.good.yaml"} {
		data := string(readFixture(t, name))
		_, err := Decode(name, &failingReader{data[:len(data)/2]}, &collector{})
		if err == nil || !strings.Contains(err.Error(), "disk on fire") || !strings.Contains(err.Error(), "reading "+name+" line ") {
			t.Errorf("%s: err %v", name, err)
		}
	}
}

func TestInlineInputs(t *testing.T) {
	for _, tc := range []struct {
		name, in     string
		objects, bad int
		rows         int
		firstBadLine int
	}{
		{"empty", "", 0, 0, 0, 0},
		{"blank yaml", "# nothing\n---\n", 0, 0, 0, 0},
		{"scalar json", "42\n", 0, 1, 0, 1},
		{"array of objects", `[{"kind":"Endpoints","apiVersion":"v1","metadata":{"name":"a","namespace":"n"}}]`, 1, 0, 1, 0},
		{"item not object", `{"kind":"List","items":[1,{"kind":"Endpoints","metadata":{"name":"a"}}]}`, 1, 1, 1, 1},
		{"watch error", `{"type":"ERROR","object":{"kind":"Status","code":410,"reason":"Expired","message":"too old resource version"}}`, 0, 1, 0, 1},
		{"crlf yaml", "apiVersion: v1\r\nkind: Endpoints\r\nmetadata:\r\n  name: a\r\n", 1, 0, 1, 0},
		{"bom json", "\xEF\xBB\xBF{\"kind\":\"Endpoints\",\"metadata\":{\"name\":\"a\"}}", 1, 0, 1, 0},
		{"unknown kind counted", `{"kind":"Node","apiVersion":"v1","metadata":{"name":"n1"}}`, 1, 0, 0, 0},
		{"garbage between lines", "{\"kind\":\"Endpoints\",\"metadata\":{\"name\":\"a\"}}\nnot json at all\n{\"kind\":\"Endpoints\",\"metadata\":{\"name\":\"b\"}}\n", 2, 1, 2, 2},
	} {
		c := &collector{}
		st, err := Decode(tc.name, strings.NewReader(tc.in), c)
		if err != nil {
			t.Errorf("%s: %v", tc.name, err)
			continue
		}
		if st.Objects != tc.objects || st.Bad != tc.bad || len(c.rows) != tc.rows {
			t.Errorf("%s: stats %+v rows %d bad %+v", tc.name, st, len(c.rows), c.bad)
		}
		if tc.bad > 0 && c.bad[0].Line != tc.firstBadLine {
			t.Errorf("%s: first bad %+v, want line %d", tc.name, c.bad[0], tc.firstBadLine)
		}
	}
}
