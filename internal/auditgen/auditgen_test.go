package auditgen

import (
	"bufio"
	"bytes"
	"encoding/json"
	"io"
	"strconv"
	"strings"
	"testing"
	"time"

	coordv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	auditv1 "k8s.io/apiserver/pkg/apis/audit/v1"
)

func generate(t testing.TB, opt Options) ([]byte, Stats) {
	t.Helper()
	var buf bytes.Buffer
	st, err := Generate(&buf, opt)
	if err != nil {
		t.Fatal(err)
	}
	return buf.Bytes(), st
}

func lines(b []byte) [][]byte {
	ls := bytes.Split(b, []byte("\n"))
	if len(ls) > 0 && len(ls[len(ls)-1]) == 0 {
		ls = ls[:len(ls)-1]
	}
	return ls
}

func decodeStrict(b []byte, v any) error {
	d := json.NewDecoder(bytes.NewReader(b))
	d.DisallowUnknownFields()
	if err := d.Decode(v); err != nil {
		return err
	}
	if d.More() {
		return io.ErrUnexpectedEOF
	}
	return nil
}

// body decodes a request/response body into its typed k8s object (strictly)
// and checks that re-encoding gives the same bytes.
func checkBody(t *testing.T, n int, raw []byte) (kind string) {
	t.Helper()
	var tm metav1.TypeMeta
	if err := json.Unmarshal(raw, &tm); err != nil {
		t.Fatalf("line %d: body: %v", n, err)
	}
	var v any
	switch tm.Kind {
	case "Pod":
		v = &corev1.Pod{}
	case "PodList":
		v = &corev1.PodList{}
	case "Endpoints":
		v = &corev1.Endpoints{}
	case "EndpointsList":
		v = &corev1.EndpointsList{}
	case "EndpointSlice":
		v = &discoveryv1.EndpointSlice{}
	case "ConfigMap":
		v = &corev1.ConfigMap{}
	case "ConfigMapList":
		v = &corev1.ConfigMapList{}
	case "Service":
		v = &corev1.Service{}
	case "ServiceList":
		v = &corev1.ServiceList{}
	case "Lease":
		v = &coordv1.Lease{}
	case "LeaseList":
		v = &coordv1.LeaseList{}
	case "Status":
		v = &metav1.Status{}
	case "DeleteOptions":
		v = &metav1.DeleteOptions{}
	case "":
		// A patch: any JSON object.
		var m map[string]any
		if err := decodeStrict(raw, &m); err != nil {
			t.Fatalf("line %d: patch body: %v", n, err)
		}
		return "patch"
	default:
		t.Fatalf("line %d: unexpected body kind %q", n, tm.Kind)
	}
	if err := decodeStrict(raw, v); err != nil {
		t.Fatalf("line %d: %s body: %v\n%.400s", n, tm.Kind, err, raw)
	}
	out, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(out, raw) {
		t.Fatalf("line %d: %s body does not round-trip:\n got %.600s\nwant %.600s", n, tm.Kind, out, raw)
	}
	return tm.Kind
}

func TestDecodeEveryLine(t *testing.T) {
	for _, tc := range []struct {
		name string
		opt  Options
	}{
		{"default", Options{Seed: 7, TargetBytes: 2 << 20}},
		// A slow clock so watches reach their ResponseComplete.
		{"slow-watches", Options{Seed: 8, TargetBytes: 2 << 20, EventsPerSecond: 0.5, LargeBodyFraction: -1}},
		{"more-stages", Options{Seed: 9, TargetBytes: 2 << 20, RequestReceivedFraction: 0.5, LargeBodyFraction: 0.05}},
	} {
		t.Run(tc.name, func(t *testing.T) { checkStream(t, tc.opt) })
	}
}

func checkStream(t *testing.T, opt Options) {
	data, st := generate(t, opt)
	if int64(len(data)) != st.Bytes || st.Bytes > opt.TargetBytes || st.Bytes < opt.TargetBytes-int64(st.MaxLineBytes) {
		t.Fatalf("bytes: wrote %d, stats %d, target %d", len(data), st.Bytes, opt.TargetBytes)
	}
	ls := lines(data)
	if int64(len(ls)) != st.Events {
		t.Fatalf("lines %d, stats.Events %d", len(ls), st.Events)
	}
	type reqKey struct {
		uri  string
		recv time.Time
	}
	stages := map[string]map[auditv1.Stage]bool{}
	reqOf := map[string]reqKey{}
	var prev time.Time
	var lastWriteRV int64
	kinds := map[string]int{}
	verbs := map[string]int{}
	codes := map[int32]int{}
	var stageCount = map[auditv1.Stage]int64{}
	var leaderAnn, lists, selectors, watchParams int
	for i, l := range ls {
		n := i + 1
		var e auditv1.Event
		if err := decodeStrict(l, &e); err != nil {
			t.Fatalf("line %d: %v\n%.300s", n, err, l)
		}
		// Byte-exact: the apiserver's encoding of the same Event.
		out, err := json.Marshal(&e)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(out, l) {
			t.Fatalf("line %d does not round-trip:\n got %.500s\nwant %.500s", n, out, l)
		}
		if e.Kind != "Event" || e.APIVersion != "audit.k8s.io/v1" || e.AuditID == "" || e.RequestURI == "" || e.Verb == "" ||
			e.User.Username == "" || len(e.SourceIPs) == 0 || e.UserAgent == "" ||
			e.RequestReceivedTimestamp.IsZero() || e.StageTimestamp.IsZero() {
			t.Fatalf("line %d: missing fields: %s", n, l[:300])
		}
		if e.Level != auditv1.LevelMetadata && e.Level != auditv1.LevelRequestResponse {
			t.Fatalf("line %d: level %q", n, e.Level)
		}
		stageCount[e.Stage]++
		switch e.Stage {
		case auditv1.StageRequestReceived:
			if e.ResponseStatus != nil || e.ResponseObject != nil || e.RequestObject != nil || e.Annotations != nil {
				t.Fatalf("line %d: RequestReceived with response data", n)
			}
		case auditv1.StageResponseStarted:
			if e.Verb != "watch" {
				t.Fatalf("line %d: ResponseStarted for %s", n, e.Verb)
			}
			fallthrough
		case auditv1.StageResponseComplete:
			if e.ResponseStatus == nil || e.ResponseStatus.Code == 0 || len(e.Annotations) == 0 {
				t.Fatalf("line %d: no responseStatus/annotations", n)
			}
			codes[e.ResponseStatus.Code]++
		default:
			t.Fatalf("line %d: stage %q", n, e.Stage)
		}
		if e.Level == auditv1.LevelMetadata && (e.RequestObject != nil || e.ResponseObject != nil) {
			t.Fatalf("line %d: Metadata event with bodies", n)
		}
		// auditIDs: one per request, shared only by that request's stages.
		if stages[string(e.AuditID)] == nil {
			stages[string(e.AuditID)] = map[auditv1.Stage]bool{}
			reqOf[string(e.AuditID)] = reqKey{e.RequestURI, e.RequestReceivedTimestamp.Time}
		} else if rk := reqOf[string(e.AuditID)]; rk.uri != e.RequestURI || (e.Stage != auditv1.StageRequestReceived && !rk.recv.Equal(e.RequestReceivedTimestamp.Time) && stages[string(e.AuditID)][auditv1.StageResponseStarted]) {
			t.Fatalf("line %d: auditID %s reused by another request", n, e.AuditID)
		}
		if stages[string(e.AuditID)][e.Stage] {
			t.Fatalf("line %d: duplicate (auditID, stage) %s %s", n, e.AuditID, e.Stage)
		}
		stages[string(e.AuditID)][e.Stage] = true
		// Time.
		st := e.StageTimestamp.Time
		if st.Before(prev) {
			t.Fatalf("line %d: stageTimestamp %v before previous %v", n, st, prev)
		}
		prev = st
		if e.RequestReceivedTimestamp.After(st) {
			t.Fatalf("line %d: received after stage", n)
		}
		if !strings.Contains(string(l), `"stageTimestamp":"`+st.Format("2006-01-02T15:04:05.000000Z")+`"`) {
			t.Fatalf("line %d: stageTimestamp not in microsecond form", n)
		}
		// URIs as encoding/json writes them.
		if strings.Contains(e.RequestURI, "&") && !bytes.Contains(l, []byte(`\u0026`)) {
			t.Fatalf("line %d: & not escaped", n)
		}
		if strings.Contains(e.RequestURI, "limit=500&resourceVersion=0") {
			lists++
		}
		if strings.Contains(e.RequestURI, "Selector=") {
			selectors++
		}
		if strings.Contains(e.RequestURI, "allowWatchBookmarks=true&") && strings.Contains(e.RequestURI, "timeoutSeconds=") && strings.HasSuffix(e.RequestURI, "watch=true") {
			watchParams++
		}
		verbs[e.Verb]++
		for _, u := range []*runtime.Unknown{e.RequestObject, e.ResponseObject} {
			if u != nil {
				kinds[checkBody(t, n, u.Raw)]++
			}
		}
		// resourceVersions handed out by writes increase.
		if e.Stage == auditv1.StageResponseComplete && e.ResponseObject != nil && e.ResponseStatus.Code < 300 &&
			(e.Verb == "update" || e.Verb == "create" || e.Verb == "patch" || e.Verb == "delete") {
			var m metav1.PartialObjectMetadata
			_ = json.Unmarshal(e.ResponseObject.Raw, &m)
			rv, _ := strconv.ParseInt(m.ResourceVersion, 10, 64)
			if rv <= lastWriteRV {
				t.Fatalf("line %d: write resourceVersion %d not above %d", n, rv, lastWriteRV)
			}
			lastWriteRV = rv
			if e.ObjectRef != nil && e.ObjectRef.ResourceVersion != "" {
				old, _ := strconv.ParseInt(e.ObjectRef.ResourceVersion, 10, 64)
				if old >= rv {
					t.Fatalf("line %d: update rv %d -> %d", n, old, rv)
				}
			}
		}
		if e.Verb == "update" && e.RequestObject != nil && bytes.Contains(e.RequestObject.Raw, []byte(`"control-plane.alpha.kubernetes.io/leader":"{\"holderIdentity\":`)) {
			leaderAnn++
		}
	}
	if stageCount[auditv1.StageRequestReceived] != st.RequestReceived || stageCount[auditv1.StageResponseStarted] != st.ResponseStarted ||
		stageCount[auditv1.StageResponseComplete] != st.ResponseComplete {
		t.Fatalf("stage stats %+v vs counted %v", st, stageCount)
	}
	t.Logf("%d events, %d bytes, stages %v, verbs %v, codes %v, bodies %v", st.Events, st.Bytes, stageCount, verbs, codes, kinds)
	for _, v := range []string{"get", "list", "watch", "create", "update", "patch"} {
		if verbs[v] == 0 {
			t.Errorf("no %s events", v)
		}
	}
	for _, k := range []string{"Pod", "Endpoints", "EndpointSlice", "ConfigMap", "Lease"} {
		if kinds[k] == 0 {
			t.Errorf("no %s bodies", k)
		}
	}
	if leaderAnn == 0 || lists == 0 || selectors == 0 || watchParams == 0 {
		t.Errorf("leader annotations %d, lists %d, selectors %d, watch params %d", leaderAnn, lists, selectors, watchParams)
	}
	if opt.EventsPerSecond > 0 && opt.EventsPerSecond < 1 && stageCount[auditv1.StageResponseStarted] > 0 {
		var completedWatches int
		for _, s := range stages {
			if s[auditv1.StageResponseStarted] && s[auditv1.StageResponseComplete] {
				completedWatches++
			}
		}
		if completedWatches == 0 {
			t.Errorf("no watch reached ResponseComplete")
		}
	}
}

func TestStatusCodesAndMix(t *testing.T) {
	// A larger sample without large bodies: every status class appears.
	data, st := generate(t, Options{Seed: 3, TargetBytes: 24 << 20, LargeBodyFraction: -1})
	codes := map[int]int{}
	res := map[string]int{}
	users := map[string]bool{}
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(nil, 1<<24)
	for sc.Scan() {
		var e struct {
			User struct {
				Username string `json:"username"`
			} `json:"user"`
			ObjectRef *struct {
				Resource string `json:"resource"`
			} `json:"objectRef"`
			ResponseStatus *struct {
				Code   int    `json:"code"`
				Reason string `json:"reason"`
			} `json:"responseStatus"`
		}
		if err := json.Unmarshal(sc.Bytes(), &e); err != nil {
			t.Fatal(err)
		}
		if e.ResponseStatus != nil {
			codes[e.ResponseStatus.Code]++
			if e.ResponseStatus.Code == 410 && e.ResponseStatus.Reason != "Expired" {
				t.Errorf("410 with reason %q", e.ResponseStatus.Reason)
			}
		}
		if e.ObjectRef != nil {
			res[e.ObjectRef.Resource]++
		}
		users[e.User.Username] = true
	}
	t.Logf("%d events: codes %v; %d users; resources %v", st.Events, codes, len(users), res)
	for _, c := range []int{200, 201, 404, 409, 410, 500} {
		if codes[c] == 0 {
			t.Errorf("no %d responses", c)
		}
	}
	if codes[500]*500 > int(st.Events) {
		t.Errorf("500s are not rare: %d of %d", codes[500], st.Events)
	}
	for _, r := range []string{"endpoints", "endpointslices", "configmaps", "leases", "pods", "services", "nodes", "secrets", "events"} {
		if res[r] == 0 {
			t.Errorf("no %s events", r)
		}
	}
}

func TestDeterministic(t *testing.T) {
	a, _ := generate(t, Options{Seed: 42, TargetBytes: 1 << 20})
	b, _ := generate(t, Options{Seed: 42, TargetBytes: 1 << 20})
	c, _ := generate(t, Options{Seed: 43, TargetBytes: 1 << 20})
	if !bytes.Equal(a, b) {
		t.Fatal("same seed, different output")
	}
	if bytes.Equal(a, c) {
		t.Fatal("different seeds, same output")
	}
	start := time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC)
	d, st := generate(t, Options{Seed: 1, MaxEvents: 100, Start: start})
	if st.Events != 100 || len(lines(d)) != 100 {
		t.Fatalf("MaxEvents: %d events", st.Events)
	}
	if st.FirstTimestamp.Before(start) || st.FirstTimestamp.After(start.Add(time.Second)) {
		t.Fatalf("first timestamp %v, start %v", st.FirstTimestamp, start)
	}
}

func BenchmarkGenerate(b *testing.B) {
	const size = 256 << 20
	b.SetBytes(size)
	b.ReportAllocs()
	var events int64
	for i := 0; i < b.N; i++ {
		st, err := Generate(io.Discard, Options{Seed: int64(i), TargetBytes: size})
		if err != nil {
			b.Fatal(err)
		}
		events += st.Events
	}
	b.ReportMetric(float64(events)/b.Elapsed().Seconds(), "events/s")
}
