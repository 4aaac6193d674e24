package k8sobj

import (
	"bufio"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kubesift/kubesift/internal/load"
)

// Real recordings under samples/ (made against a real kube-apiserver by the recording scripts).
// They are committed: a test fails when they are missing.

func TestRealSnapshots(t *testing.T) {
	files, _ := filepath.Glob("../../samples/*/snapshots/*")
	watch, _ := filepath.Glob("../../samples/*/watch/*")
	files = append(files, watch...)
	if len(files) == 0 {
		t.Fatal("no real snapshots under samples/*/snapshots")
	}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if !Detect(b[:min(len(b), 4096)]) {
			t.Errorf("%s: not detected", f)
		}
		if _, ok := load.TimeFromFileName(f); !ok {
			t.Errorf("%s: no time in the name", f)
		}
		c := &collector{}
		st, err := Decode(f, strings.NewReader(string(b)), c)
		if err != nil {
			t.Fatal(err)
		}
		if st.Bad != 0 || st.Objects == 0 || st.Rows[TableEndpointAddresses] == 0 {
			t.Errorf("%s: %+v bad %+v", f, st, c.bad)
		}
		if strings.Contains(f, "/flapping/watch/") && (st.Objects != 40 || st.Kinds["Endpoints"] != 40) {
			t.Errorf("%s: want the 40 Endpoints objects of the -w stream, got %+v", f, st)
		}
		for _, r := range addr(t, c) {
			if r.Line == 0 || r.Seq == 0 || r.Namespace == "" || r.Name == "" {
				t.Errorf("%s: row %+v", f, r)
			}
		}
	}
}

// TestRealAuditBodies feeds the Endpoints/ConfigMap bodies of a real audit log to DecodeObject,
// and checks that Detect does not take the audit log for snapshots.
func TestRealAuditBodies(t *testing.T) {
	f, err := os.Open("../../samples/real-lab/audit.log")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	head := make([]byte, 8192)
	n, _ := f.Read(head)
	if Detect(head[:n]) {
		t.Error("audit log detected as Kubernetes objects")
	}
	f.Seek(0, 0)
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 16<<20)
	c := &collector{}
	line := int64(0)
	for sc.Scan() {
		line++
		var ev struct {
			Verb      string `json:"verb"`
			ObjectRef struct {
				Resource, Namespace, Name, Subresource string
			} `json:"objectRef"`
			ResponseStatus struct{ Code int } `json:"responseStatus"`
			ResponseObject json.RawMessage    `json:"responseObject"`
		}
		if err := json.Unmarshal(sc.Bytes(), &ev); err != nil {
			t.Fatal(err)
		}
		r := ev.ObjectRef
		if ev.ResponseStatus.Code >= 300 || r.Subresource != "" {
			continue
		}
		switch r.Resource {
		case "endpoints", "endpointslices", "configmaps", "leases":
		default:
			continue
		}
		switch ev.Verb {
		case "create", "update", "patch":
			if err := DecodeObject(ev.ResponseObject, ObjectOptions{Event: ev.Verb, Line: line, Kind: r.Resource}, c); err != nil {
				t.Fatal(err)
			}
		case "delete":
			if err := DecodeObject(ev.ResponseObject, ObjectOptions{Event: "delete", Line: line, Kind: r.Resource, Namespace: r.Namespace, Name: r.Name, Deleted: true}, c); err != nil {
				t.Fatal(err)
			}
		}
	}
	if len(c.bad) != 0 {
		t.Errorf("bad: %+v", c.bad[:min(len(c.bad), 5)])
	}
	holders := map[string]map[string]bool{}
	for _, r := range c.table(TableLeaderLocks) {
		l := r.(LeaderLock)
		k := l.Kind + " " + l.Namespace + "/" + l.Name
		if holders[k] == nil {
			holders[k] = map[string]bool{}
		}
		holders[k][l.Holder] = true
	}
	ep := holders["Endpoints lab/legacy-operator-lock"]
	if !ep["legacy-operator-a"] || !ep["legacy-operator-b"] {
		t.Errorf("Endpoints lock holders %v (all locks %v)", ep, holders)
	}
	if len(holders["ConfigMap lab/legacy-cm-lock"]) == 0 {
		t.Errorf("no ConfigMap lock rows: %v", holders)
	}
	var web int
	for _, r := range addr(t, c) {
		if r.Kind == KindEndpoints && r.Namespace == "lab" && r.Name == "web" && r.IP != "" {
			web++
		}
	}
	if web == 0 {
		t.Error("no address rows for lab/web")
	}
	t.Logf("%d rows from audit bodies, locks %v", len(c.rows), holders)
}

func TestRealAuditLogsNotDetected(t *testing.T) {
	files, _ := filepath.Glob("../../samples/*/audit.log")
	if len(files) == 0 {
		t.Fatal("no audit logs under samples/")
	}
	for _, f := range files {
		fh, err := os.Open(f)
		if err != nil {
			t.Fatal(err)
		}
		head := make([]byte, 8192)
		n, _ := fh.Read(head)
		fh.Close()
		if Detect(head[:n]) {
			t.Errorf("%s detected as Kubernetes objects", f)
		}
	}
}
