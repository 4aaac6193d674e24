package cli

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// fakeAPIServer answers every list with one object of the kind (or with status forbidden for
// the paths in deny) and records the request URIs.
func fakeAPIServer(t *testing.T, deny string) (kubeconfig string, uris func() []string) {
	t.Helper()
	var mu sync.Mutex
	var seen []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		seen = append(seen, r.URL.RequestURI())
		mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		resource := r.URL.Path[strings.LastIndex(r.URL.Path, "/")+1:]
		if deny != "" && resource == deny {
			w.WriteHeader(http.StatusForbidden)
			fmt.Fprintf(w, `{"kind":"Status","apiVersion":"v1","status":"Failure","reason":"Forbidden","code":403,
				"message":"%s is forbidden: User \"system:serviceaccount:x:y\" cannot list resource \"%s\" at the cluster scope",
				"details":{"kind":"%s"}}`, resource, resource, resource)
			return
		}
		item := `{"metadata":{"name":"a","namespace":"ns","uid":"u1","resourceVersion":"7"}}`
		if resource == "configmaps" {
			item = `{"metadata":{"name":"a","namespace":"ns","uid":"u1","resourceVersion":"7"},"data":{"password":"s3cr3t-value"}}`
		}
		kinds := map[string][2]string{"endpoints": {"v1", "EndpointsList"}, "endpointslices": {"discovery.k8s.io/v1", "EndpointSliceList"},
			"services": {"v1", "ServiceList"}, "pods": {"v1", "PodList"}, "leases": {"coordination.k8s.io/v1", "LeaseList"},
			"configmaps": {"v1", "ConfigMapList"}}
		k := kinds[resource]
		fmt.Fprintf(w, `{"kind":%q,"apiVersion":%q,"metadata":{"resourceVersion":"9"},"items":[%s]}`, k[1], k[0], item)
	}))
	t.Cleanup(srv.Close)
	kubeconfig = filepath.Join(t.TempDir(), "kubeconfig")
	kc := fmt.Sprintf("apiVersion: v1\nkind: Config\nclusters: [{name: c, cluster: {server: %q}}]\nusers: [{name: u, user: {token: t}}]\n"+
		"contexts: [{name: x, context: {cluster: c, user: u}}]\ncurrent-context: x\n", srv.URL)
	if err := os.WriteFile(kubeconfig, []byte(kc), 0o600); err != nil {
		t.Fatal(err)
	}
	return kubeconfig, func() []string { mu.Lock(); defer mu.Unlock(); return append([]string(nil), seen...) }
}

func TestSnapshotVerb(t *testing.T) {
	kc, uris := fakeAPIServer(t, "")
	out := filepath.Join(t.TempDir(), "snaps")
	r := runCLI(t, "snapshot", "--kubeconfig", kc, "--namespace", "ns", "--out", out)
	if r.code != ExitOK {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	ents, err := os.ReadDir(out)
	if err != nil || len(ents) != 6 {
		t.Fatalf("%d files (%v)", len(ents), err)
	}
	for _, e := range ents {
		b, _ := os.ReadFile(filepath.Join(out, e.Name()))
		if strings.Contains(string(b), "s3cr3t") {
			t.Errorf("%s holds ConfigMap data: %s", e.Name(), b)
		}
		if !strings.Contains(string(b), `"kubesift":{"cluster":"c"}`) {
			t.Errorf("%s does not record the current context's cluster c: %.100s", e.Name(), b)
		}
	}
	if !strings.Contains(r.stderr, "6 objects in 6 files captured at") {
		t.Errorf("stderr: %s", r.stderr)
	}
	want := []string{"/api/v1/namespaces/ns/endpoints?limit=500", "/apis/discovery.k8s.io/v1/namespaces/ns/endpointslices?limit=500",
		"/api/v1/namespaces/ns/services?limit=500", "/api/v1/namespaces/ns/pods?limit=500",
		"/apis/coordination.k8s.io/v1/namespaces/ns/leases?limit=500", "/api/v1/namespaces/ns/configmaps?limit=500"}
	if got := uris(); strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("requests\n%v\nwant\n%v", got, want)
	}
	if r := runCLI(t, "snapshot", "-q", "--kubeconfig", kc, "--out", out); r.code != ExitOK || r.stderr != "" {
		t.Errorf("--quiet: exit %d, stderr %q", r.code, r.stderr)
	}
	// --cluster names the cluster instead, and ingest fills the cluster column from the files.
	named := filepath.Join(t.TempDir(), "snaps")
	if r := runCLI(t, "snapshot", "-q", "--kubeconfig", kc, "--cluster", "prod-eu-1", "--out", named); r.code != ExitOK {
		t.Fatalf("--cluster: exit %d: %s", r.code, r.stderr)
	}
	db := filepath.Join(t.TempDir(), "k.duckdb")
	if r := runCLI(t, "ingest", "-q", "--db", db, named); r.code != ExitOK {
		t.Fatalf("ingest: %+v", r)
	}
	if r := runCLI(t, "query", "--db", db, "-o", "csv", "SELECT DISTINCT cluster FROM services"); r.stdout != "cluster\nprod-eu-1\n" {
		t.Errorf("clusters of the ingested snapshot: %q (%s)", r.stdout, r.stderr)
	}
}

func TestSnapshotVerbForbidden(t *testing.T) {
	kc, _ := fakeAPIServer(t, "leases")
	out := filepath.Join(t.TempDir(), "snaps")
	r := runCLI(t, "snapshot", "--kubeconfig", kc, "--out", out)
	if r.code != ExitError {
		t.Fatalf("exit %d, want %d", r.code, ExitError)
	}
	for _, s := range []string{"kubesift snapshot: listing leases.coordination.k8s.io in all namespaces: forbidden", `needs the "list" verb on leases.coordination.k8s.io`} {
		if !strings.Contains(r.stderr, s) {
			t.Errorf("stderr lacks %q:\n%s", s, r.stderr)
		}
	}
	if ents, _ := os.ReadDir(out); len(ents) != 0 {
		t.Errorf("files left: %v", ents)
	}
}

func TestSnapshotVerbUsage(t *testing.T) {
	for _, args := range [][]string{
		{"snapshot"},
		{"snapshot", "--out", "d", "extra"},
		{"snapshot", "--out", "d", "--keep", "3x"},
		{"snapshot", "--out", "d", "--page-size", "0"},
		{"snapshot", "--bogus"},
	} {
		if r := runCLI(t, args...); r.code != ExitUsage || !strings.Contains(r.stderr, "kubesift snapshot -h") {
			t.Errorf("%v: exit %d, stderr %q", args, r.code, r.stderr)
		}
	}
	if r := runCLI(t, "snapshot", "-h"); r.code != ExitOK || !strings.Contains(r.stdout, "--kubeconfig") {
		t.Errorf("-h: exit %d, stdout %q", r.code, r.stdout)
	}
}
