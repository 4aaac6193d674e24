package k8sobj

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestDetect(t *testing.T) {
	files, _ := filepath.Glob("testdata/*.good.*")
	for _, f := range files {
		b, _ := os.ReadFile(f)
		for _, n := range []int{len(b), 4096, 300} {
			if n > len(b) {
				n = len(b)
			}
			if !Detect(b[:n]) {
				t.Errorf("Detect(%s[:%d]) = false", f, n)
			}
		}
	}
	audit := `{"kind":"Event","apiVersion":"audit.k8s.io/v1","level":"RequestResponse","auditID":"1b2c","stage":"ResponseComplete","requestURI":"/api/v1/namespaces/shop/endpoints/web","verb":"update","objectRef":{"resource":"endpoints","namespace":"shop","name":"web","apiVersion":"v1"},"responseObject":{"kind":"Endpoints","apiVersion":"v1","metadata":{"name":"web"}}}
{"kind":"Event","apiVersion":"audit.k8s.io/v1","auditID":"2"}
`
	for _, s := range []string{
		audit,
		audit[:200],
		`{"auditID":"x","kind":"Event","apiVersion":"audit.k8s.io/v1"}`,
		`{"kind":"EventList","apiVersion":"audit.k8s.io/v1","items":[{"kind":"Event","apiVersion":"audit.k8s.io/v1","auditID":"a"}]}`,
		`{"level":"Metadata","auditID":"a","stage":"ResponseComplete","kind":"Event"}`,
		"apiVersion: audit.k8s.io/v1\nkind: Policy\nrules:\n- level: Metadata\n",
		"", "   \n", "hello world\n", `{"a":1}`, "[1,2,3]", "key: value\n",
	} {
		if Detect([]byte(s)) {
			t.Errorf("Detect(%.60q) = true", s)
		}
	}
	for _, s := range []string{
		`{"type":"ADDED","object":{"kind":"Endpoints","apiVersion":"v1","metadata":{"name":"a"}}}`,
		"{\n    \"apiVersion\": \"v1\",\n    \"items\": [\n        {\n            \"apiVersion\": \"v1\",\n            \"kind\": \"Endpoints\",\n  ",
		"---\napiVersion: v1\nkind: ConfigMap\n",
		// a ConfigMap holding an audit policy is still a Kubernetes object
		`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"audit"},"data":{"policy.yaml":"apiVersion: audit.k8s.io/v1"}}`,
	} {
		if !Detect([]byte(s)) {
			t.Errorf("Detect(%.60q) = false", s)
		}
	}
}

func TestDecodeObject(t *testing.T) {
	body := readFixture(t, "single.good.json")
	c := &collector{}
	if err := DecodeObject(body, ObjectOptions{Event: "update", Line: 77}, c); err != nil {
		t.Fatal(err)
	}
	rows := addr(t, c)
	if len(rows) != 3 || rows[0].Event != "update" || rows[0].Line != 77 || rows[0].Seq != 0 || rows[0].Values()[1] != nil {
		t.Errorf("rows %+v", rows)
	}
	// Body without kind: Kind from the audit objectRef.resource.
	c = &collector{}
	if err := DecodeObject([]byte(`{"metadata":{"name":"web-x","namespace":"shop","labels":{"kubernetes.io/service-name":"web"}},"addressType":"IPv4","endpoints":[]}`),
		ObjectOptions{Event: "create", Kind: "endpointslices"}, c); err != nil {
		t.Fatal(err)
	}
	if rows := addr(t, c); len(rows) != 1 || rows[0].Kind != "EndpointSlice" || rows[0].IP != "" || rows[0].Deleted || rows[0].Service != "web" {
		t.Errorf("rows %+v", rows)
	}
	// Delete answered with a Status: marker from Kind/Namespace/Name.
	for _, b := range []string{`{"kind":"Status","apiVersion":"v1","status":"Success"}`, ``} {
		c = &collector{}
		if err := DecodeObject([]byte(b), ObjectOptions{Event: "delete", Kind: "endpoints", Namespace: "shop", Name: "web", Deleted: true}, c); err != nil {
			t.Fatal(err)
		}
		if rows := addr(t, c); len(rows) != 1 || !rows[0].Deleted || rows[0].Name != "web" || rows[0].Namespace != "shop" || rows[0].Service != "web" || len(c.rows) != 1 {
			t.Errorf("delete rows %+v", c.rows)
		}
	}
	// Delete with the deleted object as body keeps its labels.
	c = &collector{}
	if err := DecodeObject(readFixture(t, "single.good.yaml")[:0], ObjectOptions{Kind: "pods", Namespace: "shop", Name: "web-1", Deleted: true}, c); err != nil {
		t.Fatal(err)
	}
	if len(c.rows) != 1 || !c.rows[0].(Pod).Deleted {
		t.Errorf("pod delete rows %+v", c.rows)
	}
	// Bad bodies go to Bad.
	c = &collector{}
	DecodeObject([]byte(`[1]`), ObjectOptions{Line: 5}, c)
	DecodeObject([]byte(`{"kind":"Endpoints","subsets":"x"}`), ObjectOptions{Line: 6}, c)
	if len(c.bad) != 2 || c.bad[0].Line != 5 || c.bad[1].Line != 6 || len(c.rows) != 0 {
		t.Errorf("bad %+v rows %+v", c.bad, c.rows)
	}
}

// TestLargeListStreams checks that a List is decoded item by item: the tracker's window stays
// near the size of one item however long the list is.
func TestLargeListStreams(t *testing.T) {
	item := string(readFixture(t, "single.good.json"))
	var b strings.Builder
	b.WriteString(`{"apiVersion":"v1","items":[`)
	const n = 20000
	for i := 0; i < n; i++ {
		if i > 0 {
			b.WriteString(",\n")
		}
		b.WriteString(item)
	}
	b.WriteString(`],"kind":"List"}`)
	in := b.String()
	tr := newTracker(strings.NewReader(in))
	st := newStats()
	c := &countHandler{}
	d := &decoder{name: "big", h: c, st: &st}
	d.em = emitter{h: c, stats: &st}
	maxWin := 0
	c.onRow = func() {
		if cap(tr.win) > maxWin {
			maxWin = cap(tr.win)
		}
	}
	if err := d.jsonStream(tr); err != nil {
		t.Fatal(err)
	}
	if st.Objects != n || c.rows != 4*n {
		t.Fatalf("objects %d rows %d", st.Objects, c.rows)
	}
	if maxWin > 256<<10 {
		t.Errorf("window grew to %d bytes for a %d byte list", maxWin, len(in))
	}
	// The last item's line is right.
	lines := int64(bytes.Count([]byte(in), []byte("\n")))
	if c.lastLine < lines-int64(strings.Count(item, "\n")) || c.lastLine > lines {
		t.Errorf("last line %d of %d", c.lastLine, lines)
	}
}

type countHandler struct {
	rows     int
	lastLine int64
	onRow    func()
}

func (c *countHandler) Row(r Record) error {
	c.rows++
	c.lastLine = r.Values()[0].(int64)
	c.onRow()
	return nil
}
func (c *countHandler) Bad(int, int64, string, string) {}

func TestBillionLaughs(t *testing.T) {
	start := time.Now()
	st, c := decodeFile(t, "laughs.bad.yaml")
	if st.Bad != 1 || !strings.Contains(c.bad[0].Reason, "too large after expanding aliases") || len(c.rows) != 0 {
		t.Errorf("stats %+v bad %+v", st, c.bad)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("took %v", d)
	}
}

// TestKindlessSecretIsNotAConfigMap: a Secret item without kind in a generic List (its data and
// last-applied annotation hold the secret) is told from a ConfigMap by its type, and nothing
// of it is loaded; a kind-less ConfigMap beside it still is.
func TestKindlessSecretIsNotAConfigMap(t *testing.T) {
	const applied = `{\"apiVersion\":\"v1\",\"data\":{\"password\":\"aHVudGVyMg==\"},\"kind\":\"Secret\"}`
	for _, list := range []string{
		`{"kind":"List","apiVersion":"v1","items":[{"metadata":{"name":"db","namespace":"lab","annotations":{"kubectl.kubernetes.io/last-applied-configuration":"` + applied + `"}},"type":"Opaque","data":{"password":"aHVudGVyMg=="}},` +
			`{"metadata":{"name":"lock","namespace":"lab","annotations":{"a":"b"}},"data":{"k":"v"}}]}`,
		"kind: List\napiVersion: v1\nitems:\n- metadata:\n    name: db\n    namespace: lab\n    annotations:\n      kubectl.kubernetes.io/last-applied-configuration: '" + strings.ReplaceAll(applied, `\"`, `"`) + "'\n  type: Opaque\n  data:\n    password: aHVudGVyMg==\n" +
			"- metadata:\n    name: lock\n    namespace: lab\n    annotations:\n      a: b\n  data:\n    k: v\n",
	} {
		c := &collector{}
		st, err := Decode("list", strings.NewReader(list), c)
		if err != nil {
			t.Fatal(err)
		}
		annotations := c.table("object_annotations")
		if len(annotations) != 1 || annotations[0].(ObjectAnnotation).Name != "lock" || st.Kinds["Secret"] != 1 {
			t.Errorf("annotations %+v, kinds %v; want only the ConfigMap's, and one Secret", annotations, st.Kinds)
		}
	}
}
