// Package snapshot takes a live snapshot of the objects kubesift reads (Endpoints, EndpointSlices,
// Services, Pods, Leases and ConfigMap metadata) through client-go and writes them as kubectl-style
// List files that 'kubesift ingest' loads back.
//
// One snapshot is one capture time: every kind goes to its own file named with that time, such as
// endpoints-2026-11-21T04:28:20Z.json, so that the ingested rows of all kinds share captured_at.
// Lists are paginated (500 objects per request by default) and streamed to a hidden temporary file
// in the output directory that is renamed into place only when every list has succeeded, so a
// process killed mid-write leaves no partial file (ingest skips hidden files). Each List records,
// before its items, the cluster it was listed from (ClusterField), for ingest's cluster column.
//
// What is written is what kubesift needs, and no more:
//   - ConfigMaps keep only name, namespace, uid, resourceVersion and annotations (the leader-election
//     record lives in control-plane.alpha.kubernetes.io/leader); their data and binaryData are never
//     written, as they may hold secrets.
//   - The kubectl.kubernetes.io/last-applied-configuration annotation is dropped from every object
//     (on a ConfigMap it repeats the data) and so are managedFields.
//   - Pods lose their containers' env and envFrom (literal values are often credentials); probes,
//     ports, status and owner references stay.
package snapshot
