package snapshot

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	coordv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	discv1 "k8s.io/api/discovery/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/kubesift/kubesift/ingest"
	"github.com/kubesift/kubesift/internal/testdb"
	"github.com/kubesift/kubesift/store"
)

const secret = "hunter2-do-not-write-me"

var captured = time.Date(2026, 11, 21, 4, 28, 20, 0, time.UTC)

func fixedNow() time.Time { return captured.Add(700 * time.Millisecond) }

func ptr[T any](v T) *T { return &v }

// objects returns a small cluster: namespace shop with a Service, its Endpoints and EndpointSlice,
// two pods with probes (one not ready), a Lease, and a legacy ConfigMap lock with data; and one
// Service in namespace other.
func objects() []runtime.Object {
	leader := `{"holderIdentity":"op-1_abc","leaseDurationSeconds":15,"acquireTime":"2026-11-21T04:00:00Z","renewTime":"2026-11-21T04:28:10Z","leaderTransitions":3}`
	pod := func(name, ip string, ready corev1.ConditionStatus) *corev1.Pod {
		return &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "shop", UID: types.UID("uid-" + name), ResourceVersion: "10", Labels: map[string]string{"app": "web"},
				Annotations:   map[string]string{lastAppliedAnnotation: `{"env":"` + secret + `"}`},
				ManagedFields: []metav1.ManagedFieldsEntry{{Manager: "kubectl", Operation: metav1.ManagedFieldsOperationApply}}},
			Spec: corev1.PodSpec{NodeName: "node-1", Containers: []corev1.Container{{
				Name: "app", Image: "registry.invalid/web:1",
				Env:            []corev1.EnvVar{{Name: "DB_PASSWORD", Value: secret}},
				Ports:          []corev1.ContainerPort{{ContainerPort: 8080, Name: "http"}},
				ReadinessProbe: &corev1.Probe{ProbeHandler: corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: "/healthz", Port: intstr.FromInt32(8080)}}, PeriodSeconds: 5},
				LivenessProbe:  &corev1.Probe{ProbeHandler: corev1.ProbeHandler{TCPSocket: &corev1.TCPSocketAction{Port: intstr.FromInt32(8081)}}, PeriodSeconds: 10},
			}}},
			Status: corev1.PodStatus{Phase: corev1.PodRunning, PodIP: ip, Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: ready}}},
		}
	}
	return []runtime.Object{
		&corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "shop", UID: "uid-svc", ResourceVersion: "5"},
			Spec: corev1.ServiceSpec{ClusterIP: "10.96.0.10", Selector: map[string]string{"app": "web"}, Ports: []corev1.ServicePort{{Name: "http", Port: 80, TargetPort: intstr.FromInt32(8080)}}}},
		&corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "api", Namespace: "other", UID: "uid-api", ResourceVersion: "6"}},
		&corev1.Endpoints{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "shop", UID: "uid-ep", ResourceVersion: "11"},
			Subsets: []corev1.EndpointSubset{{
				Addresses:         []corev1.EndpointAddress{{IP: "192.0.2.1", NodeName: ptr("node-1"), TargetRef: &corev1.ObjectReference{Kind: "Pod", Name: "web-1"}}},
				NotReadyAddresses: []corev1.EndpointAddress{{IP: "192.0.2.2", NodeName: ptr("node-1"), TargetRef: &corev1.ObjectReference{Kind: "Pod", Name: "web-2"}}},
				Ports:             []corev1.EndpointPort{{Name: "http", Port: 8080}},
			}}},
		&discv1.EndpointSlice{ObjectMeta: metav1.ObjectMeta{Name: "web-abcde", Namespace: "shop", UID: "uid-eps", ResourceVersion: "12",
			Labels: map[string]string{"kubernetes.io/service-name": "web"}},
			AddressType: discv1.AddressTypeIPv4,
			Endpoints: []discv1.Endpoint{
				{Addresses: []string{"192.0.2.1"}, Conditions: discv1.EndpointConditions{Ready: ptr(true)}, TargetRef: &corev1.ObjectReference{Kind: "Pod", Name: "web-1"}},
				{Addresses: []string{"192.0.2.2"}, Conditions: discv1.EndpointConditions{Ready: ptr(false)}, TargetRef: &corev1.ObjectReference{Kind: "Pod", Name: "web-2"}},
			},
			Ports: []discv1.EndpointPort{{Name: ptr("http"), Port: ptr(int32(8080))}}},
		pod("web-1", "192.0.2.1", corev1.ConditionTrue),
		pod("web-2", "192.0.2.2", corev1.ConditionFalse),
		&coordv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: "shop-operator", Namespace: "shop", UID: "uid-lease", ResourceVersion: "13"},
			Spec: coordv1.LeaseSpec{HolderIdentity: ptr("op-2_def"), LeaseDurationSeconds: ptr(int32(15)),
				RenewTime: &metav1.MicroTime{Time: captured.Add(-time.Second)}}},
		&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "legacy-lock", Namespace: "shop", UID: "uid-cm", ResourceVersion: "14",
			Labels:      map[string]string{"team": "payments"},
			Annotations: map[string]string{LeaderAnnotation: leader, lastAppliedAnnotation: `{"data":{"password":"` + secret + `"}}`}},
			Data:       map[string]string{"password": secret},
			BinaryData: map[string][]byte{"key": []byte(secret)}},
	}
}

func visibleFiles(t *testing.T, dir string) []string {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range ents {
		names = append(names, e.Name())
	}
	sort.Strings(names)
	return names
}

func TestTakeWritesOneListPerKind(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "snaps")
	var log strings.Builder
	res, err := Take(context.Background(), fake.NewClientset(objects()...), dir, Options{Now: fixedNow, Log: &log})
	if err != nil {
		t.Fatal(err)
	}
	if !res.At.Equal(captured) {
		t.Errorf("At = %v, want %v", res.At, captured)
	}
	want := []string{
		"configmaps-2026-11-21T04:28:20Z.json", "endpoints-2026-11-21T04:28:20Z.json", "endpointslices-2026-11-21T04:28:20Z.json",
		"leases-2026-11-21T04:28:20Z.json", "pods-2026-11-21T04:28:20Z.json", "services-2026-11-21T04:28:20Z.json",
	}
	if got := visibleFiles(t, dir); strings.Join(got, " ") != strings.Join(want, " ") {
		t.Fatalf("files\n%v\nwant\n%v", got, want)
	}
	counts := map[string]int{"Endpoints": 1, "EndpointSlice": 1, "Service": 2, "Pod": 2, "Lease": 1, "ConfigMap": 1}
	for kind, n := range counts {
		if got := objectsOf(res, kind); got != n {
			t.Errorf("%s: %d objects, want %d", kind, got, n)
		}
	}
	apiVersions := map[string]string{"Endpoints": "v1", "EndpointSlice": "discovery.k8s.io/v1", "Service": "v1", "Pod": "v1",
		"Lease": "coordination.k8s.io/v1", "ConfigMap": "v1"}
	for _, f := range res.Files {
		b, err := os.ReadFile(f.Path)
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(string(b), secret) {
			t.Errorf("%s holds the secret:\n%s", f.Path, b)
		}
		if strings.Contains(string(b), "managedFields") || strings.Contains(string(b), lastAppliedAnnotation) {
			t.Errorf("%s holds managedFields or last-applied-configuration", f.Path)
		}
		var list struct {
			APIVersion string           `json:"apiVersion"`
			Kind       string           `json:"kind"`
			Items      []map[string]any `json:"items"`
		}
		if err := json.Unmarshal(b, &list); err != nil {
			t.Fatalf("%s: %v", f.Path, err)
		}
		if list.APIVersion != "v1" || list.Kind != "List" || len(list.Items) != f.Objects {
			t.Errorf("%s: %s %s with %d items, want v1 List with %d", f.Path, list.APIVersion, list.Kind, len(list.Items), f.Objects)
		}
		for _, it := range list.Items {
			if it["kind"] != f.Kind || it["apiVersion"] != apiVersions[f.Kind] {
				t.Errorf("%s: item %v %v, want %s %s", f.Path, it["apiVersion"], it["kind"], apiVersions[f.Kind], f.Kind)
			}
		}
		if f.Kind == "ConfigMap" {
			cm := list.Items[0]
			if _, ok := cm["data"]; ok {
				t.Errorf("ConfigMap data written: %s", b)
			}
			if _, ok := cm["binaryData"]; ok {
				t.Errorf("ConfigMap binaryData written: %s", b)
			}
			md := cm["metadata"].(map[string]any)
			if md["name"] != "legacy-lock" || md["uid"] != "uid-cm" || md["resourceVersion"] != "14" || md["labels"] != nil {
				t.Errorf("ConfigMap metadata %v", md)
			}
			if ann := md["annotations"].(map[string]any); ann[LeaderAnnotation] == nil || len(ann) != 1 {
				t.Errorf("ConfigMap annotations %v, want only the leader record", ann)
			}
		}
		if f.Kind == "Pod" && !strings.Contains(string(b), `"readinessProbe"`) {
			t.Errorf("pods lost their probes: %s", b)
		}
	}
	if !strings.Contains(log.String(), "pods-2026-11-21T04:28:20Z.json: 2 Pod (1 request)") {
		t.Errorf("log:\n%s", log.String())
	}
}

func TestSnapshotIngests(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	if _, err := Take(ctx, fake.NewClientset(objects()...), dir, Options{Now: fixedNow}); err != nil {
		t.Fatal(err)
	}
	db := ingested(t, dir, ingest.Options{})
	count := func(q string) int {
		t.Helper()
		var n int
		if err := db.QueryRow(q).Scan(&n); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
		return n
	}
	for q, want := range map[string]int{
		"SELECT count(*) FROM endpoint_addresses WHERE kind = 'Endpoints' AND service = 'web'":                2,
		"SELECT count(*) FROM endpoint_addresses WHERE kind = 'Endpoints' AND ip = '192.0.2.2' AND NOT ready": 1,
		"SELECT count(*) FROM endpoint_addresses WHERE kind = 'EndpointSlice' AND service = 'web'":            2,
		"SELECT count(*) FROM services":                                                                               2,
		"SELECT count(*) FROM pods WHERE namespace = 'shop'":                                                          2,
		"SELECT count(*) FROM pods WHERE name = 'web-2' AND NOT ready":                                                1,
		"SELECT count(*) FROM pod_probes":                                                                             4,
		"SELECT count(*) FROM pod_probes WHERE probe = 'readiness' AND period_s = 5":                                  2,
		"SELECT count(*) FROM leader_locks WHERE kind = 'ConfigMap' AND name = 'legacy-lock' AND holder = 'op-1_abc'": 1,
		"SELECT count(*) FROM leader_locks WHERE kind = 'Lease' AND name = 'shop-operator' AND holder = 'op-2_def'":   1,
		"SELECT count(*) FROM object_annotations WHERE kind = 'ConfigMap' AND key = '" + LeaderAnnotation + "'":       1,
		"SELECT count(*) FROM object_annotations WHERE value LIKE '%" + secret + "%'":                                 0,
		"SELECT count(DISTINCT captured_at) FROM (SELECT captured_at FROM endpoint_addresses UNION ALL SELECT captured_at FROM pods UNION ALL SELECT captured_at FROM leader_locks)": 1,
		"SELECT count(*) FROM ingest_errors": 0,
	} {
		if got := count(q); got != want {
			t.Errorf("%s = %d, want %d", q, got, want)
		}
	}
	var at time.Time
	if err := db.QueryRow("SELECT max(captured_at) FROM pods").Scan(&at); err != nil {
		t.Fatal(err)
	}
	if !at.Equal(captured) {
		t.Errorf("captured_at %v, want %v (the file name's time)", at, captured)
	}
}

func TestNamespace(t *testing.T) {
	dir := t.TempDir()
	res, err := Take(context.Background(), fake.NewClientset(objects()...), dir, Options{Namespace: "other", Now: fixedNow})
	if err != nil {
		t.Fatal(err)
	}
	if objectsOf(res, "Service") != 1 || objectsOf(res, "Pod") != 0 {
		t.Errorf("namespace other: %+v", res.Files)
	}
}

// pagedPods serves n pods in pages of the request's limit, with continue tokens "page-<offset>";
// a token listed in expire is answered once with 410 Gone.
type pagedPods struct {
	n        int
	limits   []int64
	tokens   []string
	expire   map[string]bool
	requests int
}

func (p *pagedPods) react(a k8stesting.Action) (bool, runtime.Object, error) {
	opts := a.(k8stesting.ListActionImpl).ListOptions
	p.requests++
	p.limits = append(p.limits, opts.Limit)
	p.tokens = append(p.tokens, opts.Continue)
	if p.expire[opts.Continue] {
		delete(p.expire, opts.Continue)
		return true, nil, apierrors.NewResourceExpired("the provided continue parameter is too old")
	}
	start := 0
	if opts.Continue != "" {
		start, _ = strconv.Atoi(strings.TrimPrefix(opts.Continue, "page-"))
	}
	end := start + int(opts.Limit)
	if opts.Limit == 0 || end > p.n {
		end = p.n
	}
	l := &corev1.PodList{}
	for i := start; i < end; i++ {
		l.Items = append(l.Items, corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("p-%03d", i), Namespace: "big", UID: "u"}})
	}
	if end < p.n {
		l.Continue = fmt.Sprintf("page-%d", end)
	}
	return true, l, nil
}

func podNames(t *testing.T, path string) []string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var list corev1.PodList
	if err := json.Unmarshal(b, &list); err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, p := range list.Items {
		names = append(names, p.Name)
	}
	return names
}

func TestPagination(t *testing.T) {
	c := fake.NewClientset()
	pp := &pagedPods{n: 5}
	c.PrependReactor("list", "pods", pp.react)
	dir := t.TempDir()
	res, err := Take(context.Background(), c, dir, Options{PageSize: 2, Now: fixedNow})
	if err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(pp.limits) != "[2 2 2]" || fmt.Sprint(pp.tokens) != "[ page-2 page-4]" {
		t.Errorf("limits %v, continue tokens %q", pp.limits, pp.tokens)
	}
	var f File
	for _, x := range res.Files {
		if x.Kind == "Pod" {
			f = x
		}
	}
	if f.Objects != 5 || f.Pages != 3 {
		t.Errorf("pods file: %+v", f)
	}
	if got := podNames(t, f.Path); fmt.Sprint(got) != "[p-000 p-001 p-002 p-003 p-004]" {
		t.Errorf("pods written: %v", got)
	}
}

func TestDefaultPageSize(t *testing.T) {
	c := fake.NewClientset()
	pp := &pagedPods{n: 3}
	c.PrependReactor("list", "pods", pp.react)
	if _, err := Take(context.Background(), c, t.TempDir(), Options{Now: fixedNow}); err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(pp.limits) != "[500]" {
		t.Errorf("limits %v, want [500]", pp.limits)
	}
}

func TestExpiredContinueStartsOver(t *testing.T) {
	c := fake.NewClientset()
	pp := &pagedPods{n: 5, expire: map[string]bool{"page-4": true}}
	c.PrependReactor("list", "pods", pp.react)
	res, err := Take(context.Background(), c, t.TempDir(), Options{PageSize: 2, Now: fixedNow})
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range res.Files {
		if f.Kind != "Pod" {
			continue
		}
		if got := podNames(t, f.Path); fmt.Sprint(got) != "[p-000 p-001 p-002 p-003 p-004]" {
			t.Errorf("pods written after a restart: %v", got)
		}
	}
	if fmt.Sprint(pp.tokens) != "[ page-2 page-4  page-2 page-4]" {
		t.Errorf("continue tokens %q", pp.tokens)
	}
}

func TestForbiddenWritesNothing(t *testing.T) {
	c := fake.NewClientset(objects()...)
	c.PrependReactor("list", "leases", func(a k8stesting.Action) (bool, runtime.Object, error) {
		return true, nil, apierrors.NewForbidden(schema.GroupResource{Group: "coordination.k8s.io", Resource: "leases"}, "",
			errors.New(`User "system:serviceaccount:kubesift:kubesift" cannot list resource "leases" in API group "coordination.k8s.io" at the cluster scope`))
	})
	dir := t.TempDir()
	_, err := Take(context.Background(), c, dir, Options{Now: fixedNow})
	if err == nil {
		t.Fatal("no error")
	}
	for _, s := range []string{"listing leases.coordination.k8s.io in all namespaces", `"list" verb`, "forbidden", `cannot list resource "leases"`} {
		if !strings.Contains(err.Error(), s) {
			t.Errorf("error %q does not say %q", err, s)
		}
	}
	if !apierrors.IsForbidden(err) {
		t.Errorf("error does not wrap the API error: %v", err)
	}
	if got := visibleFiles(t, dir); len(got) != 0 {
		t.Errorf("files left after a failed snapshot: %v", got)
	}
}

func TestStaleTempsRemoved(t *testing.T) {
	dir := t.TempDir()
	old := filepath.Join(dir, tempPrefix+"pods-123.json")
	fresh := filepath.Join(dir, tempPrefix+"pods-456.json")
	for _, p := range []string{old, fresh} {
		if err := os.WriteFile(p, []byte(`{"apiVersion":"v1","kind":"List","items":[{"kind`), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	long := time.Now().Add(-2 * time.Hour)
	if err := os.Chtimes(old, long, long); err != nil {
		t.Fatal(err)
	}
	if _, err := Take(context.Background(), fake.NewClientset(), dir, Options{Now: fixedNow}); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(old); !os.IsNotExist(err) {
		t.Errorf("stale temp file kept: %v", err)
	}
	if _, err := os.Stat(fresh); err != nil {
		t.Errorf("recent temp file (maybe another snapshot's) removed: %v", err)
	}
	// ingest never sees either: hidden files are skipped when walking a directory
	inputs, err := ingest.ExpandPaths([]string{dir})
	if err != nil {
		t.Fatal(err)
	}
	for _, in := range inputs {
		if strings.Contains(in.Path, tempPrefix) {
			t.Errorf("ingest would read %s", in.Path)
		}
	}
}

const kubeconfig = `apiVersion: v1
kind: Config
clusters:
- name: a
  cluster: {server: https://a.example:6443}
- name: b
  cluster: {server: https://b.example:6443}
users:
- name: u
  user: {token: t}
contexts:
- name: ctx-a
  context: {cluster: a, user: u}
- name: ctx-b
  context: {cluster: b, user: u}
current-context: ctx-a
`

func TestRESTConfig(t *testing.T) {
	kc := filepath.Join(t.TempDir(), "kubeconfig")
	if err := os.WriteFile(kc, []byte(kubeconfig), 0o600); err != nil {
		t.Fatal(err)
	}
	env := func(m map[string]string) func(string) string { return func(k string) string { return m[k] } }
	inPod := env(map[string]string{"KUBERNETES_SERVICE_HOST": "10.96.0.1", "KUBERNETES_SERVICE_PORT": "443"})

	cfg, target, err := RESTConfig(ClientOptions{Kubeconfig: kc, Getenv: inPod, UserAgent: "kubesift/test"})
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Host != "https://a.example:6443" || cfg.UserAgent != "kubesift/test" || !strings.Contains(target.From, "context ctx-a") || target.Cluster != "a" {
		t.Errorf("explicit kubeconfig: host %s, agent %s, %+v", cfg.Host, cfg.UserAgent, target)
	}
	cfg, target, err = RESTConfig(ClientOptions{Kubeconfig: kc, Context: "ctx-b", Getenv: env(nil)})
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Host != "https://b.example:6443" || !strings.Contains(target.From, "context ctx-b") || target.Cluster != "b" {
		t.Errorf("--context ctx-b: host %s, %+v", cfg.Host, target)
	}
	if _, _, err := RESTConfig(ClientOptions{Kubeconfig: kc, Context: "nope", Getenv: env(nil)}); err == nil || !strings.Contains(err.Error(), "nope") {
		t.Errorf("unknown context: %v", err)
	}
	// $KUBECONFIG is honored (os.Getenv is what clientcmd reads), even inside a pod
	t.Setenv("KUBECONFIG", kc)
	cfg, _, err = RESTConfig(ClientOptions{Getenv: func(k string) string {
		if k == "KUBECONFIG" {
			return kc
		}
		return inPod(k)
	}})
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Host != "https://a.example:6443" {
		t.Errorf("$KUBECONFIG: host %s", cfg.Host)
	}
	// Inside a pod without a kubeconfig: in-cluster config, whose token file does not exist here.
	if _, err := os.Stat("/var/run/secrets/kubernetes.io/serviceaccount/token"); err == nil {
		t.Skip("running inside a pod")
	}
	_, _, err = RESTConfig(ClientOptions{Getenv: inPod})
	if err == nil || !strings.Contains(err.Error(), "in-cluster configuration is unusable") {
		t.Errorf("in-cluster without a token: %v", err)
	}
}

func TestNoKubeconfig(t *testing.T) {
	t.Setenv("KUBECONFIG", filepath.Join(t.TempDir(), "missing"))
	t.Setenv("HOME", t.TempDir())
	_, _, err := RESTConfig(ClientOptions{Getenv: func(string) string { return "" }})
	if err == nil || !strings.Contains(err.Error(), "pass --kubeconfig") {
		t.Errorf("no kubeconfig anywhere: %v", err)
	}
}

func TestKeepPrunesOnlyOldSnapshotFiles(t *testing.T) {
	dir := t.TempDir()
	old := []string{"pods-2026-11-13T04:28:19Z.json", "configmaps-2026-11-01T00:00:00Z.json"}
	kept := []string{"pods-2026-11-14T04:28:21Z.json", "audit-2026-11-01T00:00:00Z.json", "pods-2026-11-01T00-00-00Z.json", "notes.txt"}
	for _, n := range append(append([]string{}, old...), kept...) {
		if err := os.WriteFile(filepath.Join(dir, n), []byte("{}"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	res, err := Take(context.Background(), fake.NewClientset(), dir, Options{Now: fixedNow, Keep: 7 * 24 * time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Pruned) != len(old) {
		t.Errorf("pruned %v, want %v", res.Pruned, old)
	}
	for _, n := range old {
		if _, err := os.Stat(filepath.Join(dir, n)); !os.IsNotExist(err) {
			t.Errorf("%s kept", n)
		}
	}
	for _, n := range kept {
		if _, err := os.Stat(filepath.Join(dir, n)); err != nil {
			t.Errorf("%s removed: %v", n, err)
		}
	}
	if got := len(visibleFiles(t, dir)); got != len(kept)+6 {
		t.Errorf("%d files left, want %d", got, len(kept)+6)
	}
}

// objectsOf returns the number of objects of kind that Take wrote.
func objectsOf(res *Result, kind string) int {
	for _, f := range res.Files {
		if f.Kind == kind {
			return f.Objects
		}
	}
	return 0
}

// TestSnapshotRecordsCluster: the files record Options.Cluster, and ingest fills every object
// table's cluster column from it, unless --cluster or --cluster-per-dir names another.
func TestSnapshotRecordsCluster(t *testing.T) {
	ctx := context.Background()
	root := t.TempDir()
	dir := filepath.Join(root, "from-dir")
	res, err := Take(ctx, fake.NewClientset(objects()...), dir, Options{Now: fixedNow, Cluster: "lab"})
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range res.Files {
		b, err := os.ReadFile(f.Path)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.HasPrefix(string(b), `{"apiVersion":"v1","kind":"List","kubesift":{"cluster":"lab"},"items":[`) {
			t.Errorf("%s starts %.80s", f.Path, b)
		}
	}
	clusters := func(path string, opt ingest.Options) string {
		t.Helper()
		var got string
		err := ingested(t, path, opt).QueryRow(`SELECT string_agg(DISTINCT format('{}:{}', t, cluster), ' ' ORDER BY format('{}:{}', t, cluster)) FROM (
			SELECT 'endpoint_addresses' AS t, cluster FROM endpoint_addresses UNION ALL SELECT 'services', cluster FROM services
			UNION ALL SELECT 'pods', cluster FROM pods UNION ALL SELECT 'pod_probes', cluster FROM pod_probes
			UNION ALL SELECT 'leader_locks', cluster FROM leader_locks UNION ALL SELECT 'object_annotations', cluster FROM object_annotations)`).Scan(&got)
		if err != nil {
			t.Fatal(err)
		}
		return got
	}
	every := func(cluster string) string {
		var s []string
		for _, table := range []string{"endpoint_addresses", "leader_locks", "object_annotations", "pod_probes", "pods", "services"} {
			s = append(s, table+":"+cluster)
		}
		return strings.Join(s, " ")
	}
	for _, tc := range []struct {
		name, path string
		opt        ingest.Options
		want       string
	}{
		{"recorded", dir, ingest.Options{}, "lab"},
		{"--cluster", dir, ingest.Options{Cluster: "prod"}, "prod"},
		{"--cluster-per-dir", root, ingest.Options{ClusterPerDir: true}, "from-dir"},
	} {
		if got := clusters(tc.path, tc.opt); got != every(tc.want) {
			t.Errorf("%s: clusters %s, want %s", tc.name, got, every(tc.want))
		}
	}
	// Without a cluster the files record none, and the rows have the unknown cluster "".
	bare := t.TempDir()
	if _, err := Take(ctx, fake.NewClientset(objects()...), bare, Options{Now: fixedNow}); err != nil {
		t.Fatal(err)
	}
	if got := clusters(bare, ingest.Options{}); got != every("") {
		t.Errorf("no cluster: clusters %s, want %s", got, every(""))
	}
}

// ingested returns an in-memory database with path ingested into it under opt.
func ingested(t *testing.T, path string, opt ingest.Options) *store.DB {
	t.Helper()
	ctx := context.Background()
	db := testdb.Empty(t)
	inputs, err := ingest.ExpandPaths([]string{path})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ingest.New(db, opt).Ingest(ctx, inputs); err != nil {
		t.Fatal(err)
	}
	return db
}
