package ingest

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/kubesift/kubesift/analyze"
	"github.com/kubesift/kubesift/rules"
)

// The tests here re-package real recordings from samples/ into each envelope audit events
// come in, load them, and check that every event loads and that the findings are those of the
// plain log.

// sampleEvents returns the events of a recording, one JSON object each.
func sampleEvents(t *testing.T, path string) []map[string]any {
	t.Helper()
	var evs []map[string]any
	for _, line := range bytes.Split(readFile(t, path), []byte("\n")) {
		if len(bytes.TrimSpace(line)) == 0 {
			continue
		}
		var ev map[string]any
		if err := json.Unmarshal(line, &ev); err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		evs = append(evs, ev)
	}
	return evs
}

func mustJSON(t *testing.T, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// ndjson writes values one per line.
func ndjson(t *testing.T, values []map[string]any) []byte {
	t.Helper()
	var b bytes.Buffer
	for _, v := range values {
		b.Write(append(mustJSON(t, v), '\n'))
	}
	return b.Bytes()
}

func mustIndent(t *testing.T, v any) []byte {
	t.Helper()
	b, err := json.MarshalIndent(v, "", "    ")
	if err != nil {
		t.Fatal(err)
	}
	return append(b, '\n')
}

// pages cuts evs into pages of n.
func pages[T any](evs []T, n int) [][]T {
	var out [][]T
	for len(evs) > n {
		out = append(out, evs[:n])
		evs = evs[n:]
	}
	return append(out, evs)
}

// eventTime returns an event's stage time in milliseconds since the epoch, as CloudWatch
// stamps a message.
func eventTime(t *testing.T, ev map[string]any) int64 {
	t.Helper()
	ts, err := time.Parse(time.RFC3339Nano, ev["stageTimestamp"].(string))
	if err != nil {
		t.Fatal(err)
	}
	return ts.UnixMilli()
}

// packaging writes a recording in one envelope under dir and returns the file and how many
// events it carries.
type packaging struct {
	name     string
	file     string
	write    func(t *testing.T, path string, evs []map[string]any) int
	cluster  string
	server   string
	envelope string
	// lost are the rules whose findings the envelope cannot carry (GKE: no request URI, so no
	// watch parameters, and no ResponseStarted stage of running watches); the findings of the
	// other rules are compared by object only.
	lost []string
}

var packagings = []packaging{
	{"plain JSON lines", "audit.log", func(t *testing.T, path string, evs []map[string]any) int {
		writeFileT(t, path, ndjson(t, evs))
		return len(evs)
	}, "", "", "json-lines", nil},
	{"EKS CloudWatch export to S3", "000000.gz", func(t *testing.T, path string, evs []map[string]any) int {
		var b bytes.Buffer
		for _, ev := range evs {
			fmt.Fprintf(&b, "%s %s\n", time.UnixMilli(eventTime(t, ev)).UTC().Format(time.RFC3339Nano), mustJSON(t, ev))
		}
		writeGzip(t, path, b.Bytes())
		return len(evs)
	}, "", "", "json-lines", nil},
	{"EKS filter-log-events", "filter-log-events.json", func(t *testing.T, path string, evs []map[string]any) int {
		var b bytes.Buffer
		for i, page := range pages(evs, 500) {
			var items []map[string]any
			for j, ev := range page {
				items = append(items, map[string]any{"logStreamName": "kube-apiserver-audit-4f5d", "timestamp": eventTime(t, ev),
					"message": string(mustJSON(t, ev)), "ingestionTime": eventTime(t, ev) + 700, "eventId": fmt.Sprint(i*1000 + j)})
			}
			b.Write(mustIndent(t, map[string]any{"events": items, "searchedLogStreams": []any{}, "nextToken": fmt.Sprint("page", i+1)}))
		}
		writeFileT(t, path, b.Bytes())
		return len(evs)
	}, "", "kube-apiserver-audit-4f5d", "eks-log-events", nil},
	{"EKS subscription via Firehose", "firehose-1-2026-11-21-05-31-08", func(t *testing.T, path string, evs []map[string]any) int {
		members := [][]byte{mustJSON(t, map[string]any{"messageType": "CONTROL_MESSAGE", "owner": "CloudwatchLogs", "logGroup": "", "logStream": "",
			"subscriptionFilters": []any{}, "logEvents": []any{map[string]any{"id": "", "timestamp": 1, "message": "CWL CONTROL MESSAGE: Checking health of destination Firehose."}}})}
		for i, page := range pages(evs, 100) {
			var items []map[string]any
			for j, ev := range page {
				items = append(items, map[string]any{"id": fmt.Sprint(i*1000 + j), "timestamp": eventTime(t, ev), "message": string(mustJSON(t, ev))})
			}
			members = append(members, mustJSON(t, map[string]any{"messageType": "DATA_MESSAGE", "owner": "111122223333", "logGroup": "/aws/eks/prod-eu/cluster",
				"logStream": "kube-apiserver-audit-4f5d", "subscriptionFilters": []string{"to-firehose"}, "logEvents": items}))
		}
		writeGzip(t, path, members...)
		return len(evs)
	}, "prod-eu", "kube-apiserver-audit-4f5d", "eks-firehose", nil},
	{"AKS storage blob PT1H.json", "PT1H.json", func(t *testing.T, path string, evs []map[string]any) int {
		var b bytes.Buffer
		for i, ev := range evs {
			b.Write(append(mustJSON(t, aksRecord(t, ev, i%7 == 0)), '\n'))
		}
		writeFileT(t, path, b.Bytes())
		return len(evs)
	}, "lab-aks", "kube-apiserver-7d9f8c-x2x4q", "aks-diagnostics", nil},
	{"AKS Event Hub", "eventhub.json", func(t *testing.T, path string, evs []map[string]any) int {
		var b bytes.Buffer
		for _, page := range pages(evs, 50) {
			var recs []map[string]any
			for _, ev := range page {
				recs = append(recs, aksRecord(t, ev, false))
			}
			recs = append(recs, map[string]any{"category": "kube-apiserver", "resourceId": recs[0]["resourceId"], "properties": map[string]any{"log": "I1121 05:31:08.312540 1 trace.go:236] other log"}})
			b.Write(mustIndent(t, map[string]any{"records": recs}))
		}
		writeFileT(t, path, b.Bytes())
		return len(evs)
	}, "lab-aks", "kube-apiserver-7d9f8c-x2x4q", "aks-diagnostics", nil},
	{"GKE gcloud logging read", "gcloud-read.json", func(t *testing.T, path string, evs []map[string]any) int {
		entries := gkeEntries(t, evs)
		slices.Reverse(entries) // newest first
		writeFileT(t, path, mustIndent(t, entries))
		return len(entries)
	}, "lab-gke", "", "gke-logentry", []string{"watch-rewind"}},
	{"GKE sink (one LogEntry per line)", "cloudaudit.googleapis.com_activity.json", func(t *testing.T, path string, evs []map[string]any) int {
		entries := gkeEntries(t, evs)
		writeFileT(t, path, ndjson(t, entries))
		return len(entries)
	}, "lab-gke", "", "gke-logentry", []string{"watch-rewind"}},
	{"webhook EventList lines without kind", "webhook.ndjson", func(t *testing.T, path string, evs []map[string]any) int {
		var b bytes.Buffer
		for _, page := range pages(evs, 40) {
			b.Write(append(mustJSON(t, webhookList(page)), '\n'))
		}
		writeFileT(t, path, b.Bytes())
		return len(evs)
	}, "", "", "eventlist-lines", nil},
	{"webhook EventList pretty without kind", "webhook.json", func(t *testing.T, path string, evs []map[string]any) int {
		var b bytes.Buffer
		for _, page := range pages(evs, 40) {
			b.Write(mustIndent(t, webhookList(page)))
		}
		writeFileT(t, path, b.Bytes())
		return len(evs)
	}, "", "", "json-documents", nil},
	{"OpenShift must-gather", "must-gather.local.1/quay-io-openshift/audit_logs/kube-apiserver/master-0.lab-audit-2026-11-21T05-40-00.000.log.gz", func(t *testing.T, path string, evs []map[string]any) int {
		writeGzip(t, path, ndjson(t, evs))
		return len(evs)
	}, "", "kube-apiserver/master-0.lab", "json-lines", nil},
}

func writeFileT(t *testing.T, path string, data []byte) {
	t.Helper()
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
}

// webhookList is an EventList as the apiserver's webhook backend sends it: items without kind
// and apiVersion (kubernetes#77076).
func webhookList(evs []map[string]any) map[string]any {
	items := make([]map[string]any, len(evs))
	for i, ev := range evs {
		items[i] = map[string]any{}
		for k, v := range ev {
			if k != "kind" && k != "apiVersion" {
				items[i][k] = v
			}
		}
	}
	return map[string]any{"kind": "EventList", "apiVersion": "audit.k8s.io/v1", "metadata": map[string]any{}, "items": items}
}

// aksRecord is one kube-audit diagnostic record; the event is a JSON string in properties.log,
// or an object when asObject is set.
func aksRecord(t *testing.T, ev map[string]any, asObject bool) map[string]any {
	var log any = string(mustJSON(t, ev))
	if asObject {
		log = ev
	}
	return map[string]any{
		"time":          ev["stageTimestamp"],
		"resourceId":    "/SUBSCRIPTIONS/0000/RESOURCEGROUPS/LAB/PROVIDERS/MICROSOFT.CONTAINERSERVICE/MANAGEDCLUSTERS/LAB-AKS",
		"category":      "kube-audit",
		"operationName": "Microsoft.ContainerService/managedClusters/diagnosticLogs/Read",
		"properties":    map[string]any{"log": log, "stream": "stdout", "pod": "kube-apiserver-7d9f8c-x2x4q"},
	}
}

// gkeEntries are the LogEntries GKE writes for the events: one per request that has an object
// (at ResponseComplete), with the audit ID as insertId.
func gkeEntries(t *testing.T, evs []map[string]any) []map[string]any {
	var out []map[string]any
	for _, ev := range evs {
		ref, ok := ev["objectRef"].(map[string]any)
		if ev["stage"] != "ResponseComplete" || !ok {
			continue
		}
		str := func(k string) string { s, _ := ref[k].(string); return s }
		group := str("apiGroup")
		if group == "" {
			group = "core"
		}
		method := "io.k8s." + group + "." + str("apiVersion") + "." + str("resource")
		name := group + "/" + str("apiVersion")
		if str("namespace") != "" {
			name += "/namespaces/" + str("namespace")
		}
		name += "/" + str("resource")
		if str("name") != "" {
			name += "/" + str("name")
		}
		if str("subresource") != "" {
			method += "." + str("subresource")
			name += "/" + str("subresource")
		}
		user, _ := ev["user"].(map[string]any)
		payload := map[string]any{
			"@type":              "type.googleapis.com/google.cloud.audit.AuditLog",
			"serviceName":        "k8s.io",
			"methodName":         method + "." + ev["verb"].(string),
			"resourceName":       name,
			"authenticationInfo": map[string]any{"principalEmail": user["username"]},
			"requestMetadata":    map[string]any{"callerIp": ev["sourceIPs"].([]any)[0], "callerSuppliedUserAgent": ev["userAgent"]},
			"status":             map[string]any{"code": rpcCode(ev)},
		}
		if v, ok := ev["requestObject"]; ok {
			payload["request"] = v
		}
		if v, ok := ev["responseObject"]; ok {
			payload["response"] = v
		}
		out = append(out, map[string]any{
			"insertId":         ev["auditID"],
			"logName":          "projects/lab/logs/cloudaudit.googleapis.com%2Factivity",
			"operation":        map[string]any{"id": ev["auditID"], "producer": "k8s.io", "first": true, "last": true},
			"protoPayload":     payload,
			"receiveTimestamp": ev["stageTimestamp"],
			"resource":         map[string]any{"type": "k8s_cluster", "labels": map[string]any{"cluster_name": "lab-gke", "location": "europe-west1", "project_id": "lab"}},
			"severity":         "NOTICE",
			"timestamp":        ev["stageTimestamp"],
			"labels":           ev["annotations"],
		})
	}
	return out
}

// rpcCode is the google.rpc.Code GKE logs for the HTTP status of an event.
func rpcCode(ev map[string]any) int {
	status, _ := ev["responseStatus"].(map[string]any)
	code, _ := status["code"].(float64)
	switch {
	case code < 300:
		return 0
	case code == 401:
		return 16
	case code == 403:
		return 7
	case code == 404:
		return 5
	case code == 409:
		return 6
	case code == 429:
		return 8
	case code < 500:
		return 3
	}
	return 13
}

// TestEnvelopesOfRealRecordings: every event of a real recording loads from each envelope, and
// the findings are those of the plain log (less what the envelope cannot carry).
func TestEnvelopesOfRealRecordings(t *testing.T) {
	rs, err := rules.Builtin()
	if err != nil {
		t.Fatal(err)
	}
	for _, sample := range []string{"real-lab", "watch-rewind"} {
		evs := sampleEvents(t, filepath.Join("..", "samples", sample, "audit.log"))
		plain := loadPackaged(t, rs, packagings[0], evs)
		for _, p := range packagings[1:] {
			t.Run(sample+"/"+p.name, func(t *testing.T) {
				got := loadPackaged(t, rs, p, evs)
				if p.lost != nil {
					got, want := objects(got, nil), objects(plain, p.lost)
					if !slices.Equal(got, want) {
						t.Errorf("findings about %q, want those of the plain log but %v: %q", got, p.lost, want)
					}
					return
				}
				if !slices.Equal(got, plain) {
					t.Errorf("findings differ from the plain log's:\n got %q\nwant %q", got, plain)
				}
			})
		}
	}
}

// loadPackaged writes evs in the packaging p, loads the file, checks that every event became a
// row with the cluster, apiserver and envelope p says, and returns the findings without their
// evidence.
func loadPackaged(t *testing.T, rs []rules.Rule, p packaging, evs []map[string]any) []string {
	t.Helper()
	path := filepath.Join(t.TempDir(), filepath.FromSlash(p.file))
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	want := p.write(t, path, evs)
	db := openTestDB(t)
	res := ingestFiles(t, db, Options{}, filepath.Dir(path))
	if len(res) != 1 || res[0].Kind != "audit" || res[0].Rows != int64(want) || res[0].Rejected != 0 {
		t.Fatalf("%s: result %+v, want %d rows, 0 rejected", p.name, res, want)
	}
	if n := queryInt(t, db, "SELECT count(*) FROM audit_events WHERE cluster = $1 AND apiserver = $2 AND envelope = $3 AND stage_at IS NOT NULL",
		p.cluster, p.server, p.envelope); n != int64(want) {
		t.Errorf("%s: %d rows of cluster %q, apiserver %q, envelope %q; want %d", p.name, n, p.cluster, p.server, p.envelope, want)
	}
	rep, err := analyze.Run(context.Background(), db, rs, analyze.Options{})
	if err != nil {
		t.Fatal(err)
	}
	all, err := rep.AllFindings()
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, f := range all {
		got = append(got, strings.Join([]string{f.Rule, string(f.Severity), f.Namespace, f.Name, f.Subject, f.Summary}, " | "))
	}
	t.Logf("%s: %d events in, %d rows out, %d findings", p.name, want, res[0].Rows, len(got))
	return got
}

// objects returns the rule, namespace and name of findings, leaving out those of the lost rules.
func objects(findings []string, lost []string) []string {
	var out []string
	for _, f := range findings {
		parts := strings.Split(f, " | ")
		if !slices.Contains(lost, parts[0]) {
			out = append(out, strings.Join([]string{parts[0], parts[2], parts[3]}, " | "))
		}
	}
	return out
}

// TestLegacyTimestamp: pre-1.10 v1beta1 events carry only timestamp; it gives them received_at
// and stage_at, so time windows include them (and a latency_ms of 0, computed from the two).
func TestLegacyTimestamp(t *testing.T) {
	path := filepath.Join(t.TempDir(), "audit.log")
	writeFileT(t, path, []byte(`{"kind":"Event","apiVersion":"audit.k8s.io/v1beta1","level":"Metadata","timestamp":"2018-03-01T10:00:00Z","auditID":"a1","stage":"ResponseComplete","requestURI":"/api/v1/namespaces/default/endpoints/x","verb":"get","user":{"username":"u"},"objectRef":{"resource":"endpoints","namespace":"default","name":"x"},"responseStatus":{"code":200}}
`))
	db := openTestDB(t)
	if res := ingestFiles(t, db, Options{}, path); res[0].Rows != 1 {
		t.Fatalf("result %+v", res)
	}
	if n := queryInt(t, db, "SELECT count(*) FROM audit_events WHERE received_at = '2018-03-01T10:00:00Z' AND stage_at = received_at AND latency_ms = 0"); n != 1 {
		t.Errorf("%d rows with received_at and stage_at from timestamp, want 1", n)
	}
}

// TestClusterAndAPIServerFlags: --cluster and --apiserver win over what the envelope says.
func TestClusterAndAPIServerFlags(t *testing.T) {
	dir := t.TempDir()
	evs := sampleEvents(t, "testdata/audit-v1.good.log")
	packagings[3].write(t, filepath.Join(dir, "firehose"), evs) // EKS via Firehose: names cluster and apiserver
	db := openTestDB(t)
	ingestFiles(t, db, Options{Cluster: "fleet-7", APIServer: "ip-10-0-0-1"}, dir)
	if got := queryStrings(t, db, "SELECT DISTINCT cluster || ' ' || apiserver FROM audit_events"); !slices.Equal(got, []string{"fleet-7 ip-10-0-0-1"}) {
		t.Errorf("cluster and apiserver %q, want the flags'", got)
	}
}

// TestDocumentLines: the events of a pretty-printed document carry the line and byte offset where
// the document starts, for every document of the file (the second and later ones once carried
// the end of the document before them).
func TestDocumentLines(t *testing.T) {
	evs := sampleEvents(t, "testdata/audit-v1.good.log")[:3]
	path := filepath.Join(t.TempDir(), "filter-log-events.json")
	var b bytes.Buffer
	var want []string
	for i, ev := range evs {
		line := bytes.Count(b.Bytes(), []byte("\n")) + 1
		want = append(want, fmt.Sprintf("%s %d %d", ev["auditID"], line, b.Len()))
		b.Write(mustIndent(t, map[string]any{"events": []any{map[string]any{"logStreamName": "kube-apiserver-audit-4f5d",
			"message": string(mustJSON(t, ev))}}, "nextToken": fmt.Sprint("page", i+1)}))
	}
	writeFileT(t, path, b.Bytes())
	db := openTestDB(t)
	ingestFiles(t, db, Options{}, path)
	got := queryStrings(t, db, "SELECT DISTINCT audit_id || ' ' || source_line || ' ' || source_offset FROM audit_events ORDER BY source_line")
	if !slices.Equal(got, want) {
		t.Errorf("events at %q, want %q (auditID, line, offset of each page)", got, want)
	}
}

// TestDocumentsAcrossRuns: a file of documents larger than a few runs (documents are opened in
// runs of about 4 MiB, side by side) loads every event with its own page's line, and a document
// in a later run that is JSON but no page (found only when opened, after the decoder read ahead)
// keeps the events of every page before it, and of none after it.
func TestDocumentsAcrossRuns(t *testing.T) {
	sample := sampleEvents(t, "testdata/audit-v1.good.log")[0]
	const pageCount, perPage, broken = 70, 200, 57
	var b bytes.Buffer
	lines := map[string]int{} // auditID: the line of its page
	for p := range pageCount {
		line := bytes.Count(b.Bytes(), []byte("\n")) + 1
		if p == broken {
			b.WriteString("{\"events\": 5}\n")
			continue
		}
		var items []any
		for i := range perPage {
			ev := maps.Clone(sample)
			ev["auditID"] = fmt.Sprintf("page-%03d-event-%03d", p, i)
			items = append(items, map[string]any{"logStreamName": "kube-apiserver-audit-4f5d", "message": string(mustJSON(t, ev))})
			if p < broken {
				lines[ev["auditID"].(string)] = line
			}
		}
		b.Write(mustIndent(t, map[string]any{"events": items}))
	}
	if b.Len() < 12<<20 {
		t.Fatalf("file of %d bytes: want more than three runs", b.Len())
	}
	path := filepath.Join(t.TempDir(), "filter-log-events.json")
	writeFileT(t, path, b.Bytes())
	db := openTestDB(t)
	res := ingestFiles(t, db, Options{}, path)
	if len(res) != 1 || res[0].Rejected != 1 || !strings.Contains(res[0].FirstError, "malformed CloudWatch Logs events page") {
		t.Fatalf("result %+v, want the broken page rejected", res)
	}
	got := queryStrings(t, db, "SELECT audit_id || ' ' || source_line FROM audit_events WHERE stage = 'ResponseComplete' ORDER BY audit_id")
	var want []string
	for id, line := range lines {
		want = append(want, fmt.Sprintf("%s %d", id, line))
	}
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Errorf("%d events loaded, want %d (the pages before the broken one, each at its page's line)", len(got), len(want))
	}
}

// TestArrayElementsAreDocuments: the elements of a top-level array (`gcloud logging read
// --format=json`) are read one at a time, each with its own line, so that an export of gigabytes
// is not held whole and an array cut off keeps the elements before the cut.
func TestArrayElementsAreDocuments(t *testing.T) {
	evs := sampleEvents(t, "testdata/audit-v1.good.log")
	p := packagings[6] // GKE gcloud logging read: one indented array of LogEntries
	path := filepath.Join(t.TempDir(), p.file)
	n := p.write(t, path, evs)
	lines := bytes.SplitAfter(readFile(t, path), []byte("\n"))
	var starts []int // the line of each element's {
	for i, l := range lines {
		if string(l) == "    {\n" {
			starts = append(starts, i+1)
		}
	}
	if len(starts) != n || n < 3 {
		t.Fatalf("%d elements found at %v, want %d (at least 3)", len(starts), starts, n)
	}
	// cut in the middle of the third element
	cut := starts[2] + 2
	writeFileT(t, path, bytes.Join(lines[:cut], nil))
	db := openTestDB(t)
	res := ingestFiles(t, db, Options{}, path)
	if len(res) != 1 || res[0].Rejected != 1 || !strings.HasPrefix(res[0].FirstError, fmt.Sprintf("line %d: malformed GKE LogEntry", starts[2])) {
		t.Fatalf("result %+v, want the third element rejected at its line %d", res, starts[2])
	}
	got := queryStrings(t, db, "SELECT DISTINCT source_line FROM audit_events ORDER BY 1")
	if want := []string{fmt.Sprint(starts[0]), fmt.Sprint(starts[1])}; !slices.Equal(got, want) {
		t.Errorf("events at lines %q, want the first two elements' %q", got, want)
	}
}

// TestMalformedEnvelopeNamesIt: a file in a cloud envelope that breaks off is not "not evidence":
// the events before the break load, and the break is rejected naming the envelope and its line.
func TestMalformedEnvelopeNamesIt(t *testing.T) {
	evs := sampleEvents(t, "testdata/audit-v1.good.log")
	for _, tt := range []struct {
		p      packaging
		reason string
		line   int64 // of the malformed record; 0: the first line cut off
	}{
		{packagings[2], "malformed CloudWatch Logs events page", 1}, // one page, pretty-printed
		{packagings[4], "malformed AKS diagnostic record", 0},
		{packagings[7], "malformed GKE LogEntry", 0},
	} {
		t.Run(tt.p.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), tt.p.file)
			tt.p.write(t, path, evs)
			data := readFile(t, path)
			lines := bytes.SplitAfter(data, []byte("\n"))
			cut := bytes.Join(lines[:len(lines)/2], nil)
			writeFileT(t, path, append(cut, []byte(`{"broken": `)...))
			db := openTestDB(t)
			res := ingestFiles(t, db, Options{}, path)
			if len(res) != 1 || res[0].Kind != "audit" || res[0].Rejected != 1 || !strings.Contains(res[0].FirstError, tt.reason) {
				t.Fatalf("result %+v, want 1 rejected: %s", res, tt.reason)
			}
			wantLine := tt.line
			if wantLine == 0 {
				wantLine = int64(len(lines)/2 + 1)
			}
			if !strings.HasPrefix(res[0].FirstError, fmt.Sprintf("line %d:", wantLine)) {
				t.Errorf("first error %q, want it at line %d", res[0].FirstError, wantLine)
			}
		})
	}
}

// TestEventListLinesWithTheirKindLast: webhook batches written again with their keys in order
// (Go's encoding/json of a map, jq -S) have their kind after their items; with a first line longer
// than the head a file is detected by, they are still read as EventList lines, not rejected one
// by one as events of kind EventList.
func TestEventListLinesWithTheirKindLast(t *testing.T) {
	evs := sampleEvents(t, "../samples/flapping/audit.log")
	var b bytes.Buffer
	for _, page := range pages(evs, 200) {
		b.Write(append(mustJSON(t, webhookList(page)), '\n'))
	}
	first, _, _ := bytes.Cut(b.Bytes(), []byte("\n"))
	if kind := bytes.Index(first, []byte(`"kind":"EventList"`)); kind < 64<<10 || !bytes.HasPrefix(first, []byte(`{"apiVersion":"audit.k8s.io/v1","items":[`)) {
		t.Fatalf("the first line's kind at byte %d of %d: want it after its items, past the head", kind, len(first))
	}
	path := filepath.Join(t.TempDir(), "webhook.ndjson")
	writeFileT(t, path, b.Bytes())
	db := openTestDB(t)
	res := ingestFiles(t, db, Options{}, path)
	if len(res) != 1 || res[0].Rows != int64(len(evs)) || res[0].Rejected != 0 {
		t.Errorf("results %+v: want %d events and no rejected line", res, len(evs))
	}
	if envs := queryStrings(t, db, "SELECT DISTINCT envelope FROM audit_events"); !slices.Equal(envs, []string{"eventlist-lines"}) {
		t.Errorf("envelopes %v, want eventlist-lines", envs)
	}
}
