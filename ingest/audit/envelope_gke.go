package audit

import (
	"bytes"
	"fmt"
	"regexp"
	"strings"

	"github.com/go-json-experiment/json/v1"

	"github.com/kubesift/kubesift/internal/load"
)

// gkeLogEntries are GKE's Cloud Audit Logs: LogEntry objects whose protoPayload is a
// google.cloud.audit.AuditLog with serviceName k8s.io, as `gcloud logging read --format=json`
// prints them (one JSON array, newest first) or as sinks to Cloud Storage or Pub/Sub write them
// (one per line). Each entry is mapped to an audit event of stage ResponseComplete.
//
// What a LogEntry does not carry: the request URI and so every query parameter (watch,
// resourceVersion, timeoutSeconds, selectors, limit, continue), the user's groups and uid, the
// stages before ResponseComplete, the time the request was received (received_at is the
// entry's timestamp), and responseStatus reason and message beyond the rpc status.
type gkeLogEntries struct{}

func (gkeLogEntries) name() string { return "gke-logentry" }

func (gkeLogEntries) detect(_ string, head []byte) bool {
	probe := head[:min(len(head), 8<<10)]
	return (startsWith(probe, '{') || startsWith(probe, '[')) && bytes.Contains(probe, []byte(`"protoPayload"`)) &&
		bytes.Contains(probe, []byte(`google.cloud.audit.AuditLog`)) && bytes.Contains(probe, []byte(`"k8s.io"`))
}

func (e gkeLogEntries) decode(f *load.File, out *events) error {
	return eachDocument(f, out, "GKE LogEntry", e.events)
}

// events are the audit events of one record.
func (gkeLogEntries) events(doc []byte, at origin) ([]event, error) {
	var entries []gkeEntry
	if startsWith(doc, '[') {
		if err := json.Unmarshal(doc, &entries); err != nil {
			return nil, err
		}
	} else {
		var e gkeEntry
		if err := json.Unmarshal(doc, &e); err != nil {
			return nil, err
		}
		entries = []gkeEntry{e}
	}
	var evs []event
	for i := len(entries) - 1; i >= 0; i-- { // gcloud prints newest first
		e := entries[i]
		if e.ProtoPayload.ServiceName != "k8s.io" {
			continue // another service's audit log in the same export
		}
		raw, err := e.auditEvent()
		if err != nil {
			return nil, fmt.Errorf("entry %s: %w", e.InsertID, err)
		}
		o := at
		o.cluster = e.Resource.Labels.ClusterName
		evs = append(evs, event{raw, o})
	}
	return evs, nil
}

// gkeEntry is the part of a LogEntry that maps to an audit event.
type gkeEntry struct {
	InsertID  string            `json:"insertId"`
	Timestamp string            `json:"timestamp"`
	Labels    map[string]string `json:"labels"`
	Resource  struct {
		Labels struct {
			ClusterName string `json:"cluster_name"`
		} `json:"labels"`
	} `json:"resource"`
	ProtoPayload struct {
		ServiceName        string `json:"serviceName"`
		MethodName         string `json:"methodName"`
		ResourceName       string `json:"resourceName"`
		AuthenticationInfo struct {
			PrincipalEmail string `json:"principalEmail"`
		} `json:"authenticationInfo"`
		RequestMetadata struct {
			CallerIP                string `json:"callerIp"`
			CallerSuppliedUserAgent string `json:"callerSuppliedUserAgent"`
		} `json:"requestMetadata"`
		Status struct {
			Code    int    `json:"code"`
			Message string `json:"message"`
		} `json:"status"`
		Request  json.RawMessage `json:"request"`
		Response json.RawMessage `json:"response"`
	} `json:"protoPayload"`
}

// gkeObjectRef is what methodName and resourceName say about the object.
type gkeObjectRef struct {
	Resource    string `json:"resource,omitempty"`
	Subresource string `json:"subresource,omitempty"`
	APIGroup    string `json:"apiGroup,omitempty"`
	APIVersion  string `json:"apiVersion,omitempty"`
	Namespace   string `json:"namespace,omitempty"`
	Name        string `json:"name,omitempty"`
}

// versionRe matches a Kubernetes API version: v1, v1beta1, v2alpha3.
var versionRe = regexp.MustCompile(`^v\d+((alpha|beta)\d+)?$`)

// auditEvent builds the audit event JSON of the entry.
func (e gkeEntry) auditEvent() ([]byte, error) {
	p := e.ProtoPayload
	verb, ref, err := gkeMethod(p.MethodName)
	if err != nil {
		return nil, err
	}
	gkeResourceName(p.ResourceName, &ref)
	level := "Metadata"
	if len(p.Request) > 0 || len(p.Response) > 0 {
		level = "RequestResponse"
	}
	ev := map[string]any{
		"kind": "Event", "apiVersion": "audit.k8s.io/v1", "level": level,
		"auditID": e.InsertID, "stage": "ResponseComplete", "verb": verb,
		"user":                     map[string]any{"username": p.AuthenticationInfo.PrincipalEmail},
		"userAgent":                p.RequestMetadata.CallerSuppliedUserAgent,
		"objectRef":                ref,
		"responseStatus":           map[string]any{"code": httpCode(p.Status.Code), "message": p.Status.Message},
		"requestReceivedTimestamp": e.Timestamp,
		"stageTimestamp":           e.Timestamp,
	}
	if p.RequestMetadata.CallerIP != "" {
		ev["sourceIPs"] = []string{p.RequestMetadata.CallerIP}
	}
	if len(e.Labels) > 0 {
		ev["annotations"] = e.Labels // authorization.k8s.io/decision and reason
	}
	if len(p.Request) > 0 {
		ev["requestObject"] = p.Request
	}
	if len(p.Response) > 0 {
		ev["responseObject"] = p.Response
	}
	return json.Marshal(ev)
}

// gkeMethod reads io.k8s.<group>.<version>.<resource>[.<subresource>].<verb>; the core group
// is "core" there and "" in an objectRef.
func gkeMethod(method string) (verb string, ref gkeObjectRef, err error) {
	rest, ok := strings.CutPrefix(method, "io.k8s.")
	parts := strings.Split(rest, ".")
	v := -1
	for i, s := range parts {
		if versionRe.MatchString(s) {
			v = i
		}
	}
	if !ok || v < 1 || len(parts)-v < 3 || len(parts)-v > 4 {
		return "", ref, fmt.Errorf("methodName %q is not io.k8s.<group>.<version>.<resource>[.<subresource>].<verb>", method)
	}
	ref.APIGroup = strings.Join(parts[:v], ".")
	if ref.APIGroup == "core" {
		ref.APIGroup = ""
	}
	ref.APIVersion, ref.Resource = parts[v], parts[v+1]
	if len(parts)-v == 4 {
		ref.Subresource = parts[v+2]
	}
	return parts[len(parts)-1], ref, nil
}

// gkeResourceName fills the namespace and name from <group>/<version>/[namespaces/<ns>/]<resource>[/<name>[/<subresource>]],
// and the group as written there (methodName drops the domain of some groups).
func gkeResourceName(name string, ref *gkeObjectRef) {
	parts := strings.Split(name, "/")
	if len(parts) < 3 {
		return
	}
	if parts[0] != "core" && strings.Contains(parts[0], ".") {
		ref.APIGroup = parts[0]
	}
	parts = parts[2:]
	if len(parts) >= 2 && parts[0] == "namespaces" && !(len(parts) == 2 && ref.Resource == "namespaces") {
		ref.Namespace, parts = parts[1], parts[2:]
	}
	if len(parts) >= 2 {
		ref.Name = parts[1]
	}
}

// httpCode maps a google.rpc.Code to the HTTP status the apiserver answered with.
func httpCode(rpc int) int {
	switch rpc {
	case 0:
		return 200
	case 1:
		return 499
	case 3, 9, 11:
		return 400
	case 4:
		return 504
	case 5:
		return 404
	case 6, 10:
		return 409
	case 7:
		return 403
	case 8:
		return 429
	case 12:
		return 501
	case 14:
		return 503
	case 16:
		return 401
	}
	return 500
}
