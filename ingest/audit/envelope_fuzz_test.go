package audit

import (
	"encoding/json"
	"testing"
)

// recordDecoders are the envelopes that read records document by document.
var recordDecoders = map[string]func(doc []byte, at origin) ([]event, error){
	"eks-log-events":  eksLogEvents{}.events,
	"eks-firehose":    eksFirehose{}.events,
	"aks-diagnostics": aksDiagnostics{}.events,
	"gke-logentry":    gkeLogEntries{}.events,
}

// FuzzRecordEvents: no record makes an envelope panic, and every event it takes out of a
// record is JSON or a message DuckDB rejects with its text, at the record's line.
func FuzzRecordEvents(f *testing.F) {
	for _, seed := range []string{
		`{"events":[{"logStreamName":"kube-apiserver-audit-1","message":"{\"kind\":\"Event\"}"}],"nextToken":"x"}`,
		`{"events":[{"message":"not json"}]}`,
		`{"messageType":"DATA_MESSAGE","logGroup":"/aws/eks/c/cluster","logStream":"s","logEvents":[{"id":"1","timestamp":1,"message":"{\"kind\":\"Event\"}"}]}`,
		`{"messageType":"CONTROL_MESSAGE","logEvents":[{"message":"CWL CONTROL MESSAGE"}]}`,
		`{"resourceId":"/SUBSCRIPTIONS/1/RESOURCEGROUPS/G/PROVIDERS/MICROSOFT.CONTAINERSERVICE/MANAGEDCLUSTERS/C","category":"kube-audit","properties":{"log":"{\"kind\":\"Event\"}","pod":"p"}}`,
		`{"records":[{"category":"kube-audit-admin","resourceId":"x","properties":{"log":{"kind":"Event"}}}]}`,
		`[{"insertId":"i","timestamp":"2026-11-21T05:31:08Z","resource":{"labels":{"cluster_name":"c"}},"protoPayload":{"serviceName":"k8s.io","methodName":"io.k8s.core.v1.pods.status.update","resourceName":"core/v1/namespaces/ns/pods/p/status","status":{"code":5}}}]`,
		`{"insertId":"i","protoPayload":{"serviceName":"k8s.io","methodName":"io.k8s.v1.x"}}`,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, doc []byte) {
		for name, records := range recordDecoders {
			evs, err := records(doc, origin{line: 7, offset: 70})
			if err != nil {
				continue
			}
			for _, ev := range evs {
				if ev.at.line != 7 || ev.at.offset != 70 {
					t.Errorf("%s: event at %+v, want the record's line and offset", name, ev.at)
				}
				if len(ev.raw) == 0 {
					t.Errorf("%s: empty event from %q", name, doc)
				}
				if name == "gke-logentry" && !json.Valid(ev.raw) {
					t.Errorf("%s: built event is not JSON: %q", name, ev.raw)
				}
			}
		}
	})
}

// FuzzGKEMethod: a methodName either maps to a verb and a resource or is refused.
func FuzzGKEMethod(f *testing.F) {
	for _, seed := range []string{"io.k8s.core.v1.endpoints.update", "io.k8s.coordination.v1.leases.get", "io.k8s.apps.v1.deployments.scale.patch", "io.k8s.core.v1", "io.k8s.a.b.v1beta2.r.s.t.u"} {
		f.Add(seed, "core/v1/namespaces/ns/endpoints/x")
	}
	f.Fuzz(func(t *testing.T, method, name string) {
		verb, ref, err := gkeMethod(method)
		if err != nil {
			return
		}
		if verb == "" && ref.Resource == "" {
			t.Errorf("%q: neither verb nor resource", method)
		}
		gkeResourceName(name, &ref)
	})
}

func TestGKEMethod(t *testing.T) {
	for method, want := range map[string]gkeObjectRef{
		"io.k8s.core.v1.endpoints.update":                {Resource: "endpoints", APIVersion: "v1"},
		"io.k8s.apps.v1.deployments.scale.patch":         {Resource: "deployments", Subresource: "scale", APIGroup: "apps", APIVersion: "v1"},
		"io.k8s.coordination.k8s.io.v1.leases.update":    {Resource: "leases", APIGroup: "coordination.k8s.io", APIVersion: "v1"},
		"io.k8s.networking.v1beta1.ingresses.status.get": {Resource: "ingresses", Subresource: "status", APIGroup: "networking", APIVersion: "v1beta1"},
	} {
		if _, got, err := gkeMethod(method); err != nil || got != want {
			t.Errorf("gkeMethod(%q) = %+v, %v; want %+v", method, got, err, want)
		}
	}
	for _, bad := range []string{"io.k8s.core.v1", "google.container.v1.ClusterManager.GetCluster", "io.k8s.core.endpoints.get"} {
		if _, _, err := gkeMethod(bad); err == nil {
			t.Errorf("gkeMethod(%q) accepted", bad)
		}
	}
	ref := gkeObjectRef{Resource: "namespaces"}
	if gkeResourceName("core/v1/namespaces/lab", &ref); ref.Namespace != "" || ref.Name != "lab" {
		t.Errorf("namespace lab: %+v", ref)
	}
	ref = gkeObjectRef{Resource: "pods", Subresource: "status"}
	if gkeResourceName("core/v1/namespaces/ns/pods/p/status", &ref); ref.Namespace != "ns" || ref.Name != "p" {
		t.Errorf("pod status: %+v", ref)
	}
}
