// Package audit loads kube-apiserver audit logs (audit.k8s.io/v1 and v1beta1) into
// audit_events (declared in tables.go), from which an ingest copies their Service requests into
// audit_services once its files are loaded (store.DB.DeriveNewerLoads), and derives endpoint
// states from the Endpoints and EndpointSlice bodies in them (endpoints.go) into the k8sobj tables.
//
// A file's envelope (envelope*.go: JSON lines, EventList lines, pretty-printed documents, and
// the exports of EKS, AKS and GKE) decodes it into raw event JSON with each event's line and
// offset, and the cluster and apiserver where the envelope names them. On the fast path of JSON
// lines nothing is copied: lines are sliced out of the read chunks, a scanner (jsonscan.go)
// picks the request URI whose query is parsed in Go (uriquery.go), and Arrow batches go to
// DuckDB, whose json_transform decodes the events in parallel in one INSERT (load.sql).
package audit
