// Package auditgen generates deterministic, realistic kube-apiserver audit
// logs (audit.k8s.io/v1 Event objects, one JSON document per line, exactly as
// the apiserver writes them with --audit-log-format=json).
//
// The shape follows a real kube-apiserver v1.33 recording: field order and
// encoding of the envelope (requestURI with \u0026, microsecond
// timestamps, sorted annotation keys), the mix of verbs, resources and users
// (kubelets renewing node leases and patching pod status, controllers updating
// Endpoints/EndpointSlices, legacy leader election on Endpoints and ConfigMap
// locks, informer list+watch, events, token requests, kubectl), stages
// (RequestReceived for a configurable share of requests, ResponseStarted and a
// later ResponseComplete sharing one auditID for watches), levels
// (RequestResponse with real request/response bodies for endpoints,
// endpointslices, services, pods, configmaps and leases, Metadata otherwise)
// and status codes (200, 201, 404, 409, 410 Expired, rare 500).
//
// Bodies are built once from the real k8s.io/api types, rendered with
// encoding/json into templates, and then only resourceVersions, timestamps
// and leader-election holders are spliced in with byte appends, so the
// generator produces well over 100 MB/s on one core while every line still
// decodes into k8s.io/apiserver/pkg/apis/audit/v1.Event and re-encodes to the
// same bytes.
//
// Output is a pure function of Options: the same Seed and Options give the
// same bytes.
//
// It feeds ingestion tests and cmd/kubesift-bench; it is not part of the
// kubesift binary.
package auditgen
