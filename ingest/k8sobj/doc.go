// Package k8sobj decodes saved Kubernetes object snapshots into kubesift rows, without touching
// the database: `kubectl get endpoints,endpointslices -A -o json|yaml` Lists and typed lists, single
// objects, multi-document YAML, `kubectl get -w -o json` streams of concatenated objects, and
// watch-event streams ({"type":"ADDED","object":{...}} per line), including combined dumps that
// also hold Services, Pods, ConfigMaps and Leases.
//
// Decode streams its input: JSON Lists are read item by item with a token-wise json.Decoder and
// YAML one document at a time. Objects it cannot use go to Handler.Bad and decoding goes on. Rows
// go to Handler.Row as Records for the tables documented in tables.go:
// endpoint_addresses, services, pods, pod_probes, object_annotations and leader_locks; an ingest
// then derives endpoint_objects from endpoint_addresses (store.DB.DeriveNewerLoads). The caller
// prepends CallerColumns (captured_at, source, source_file, load_id) to Record.Values() and
// appends the cluster.
//
// DecodeObject does the same for one object body taken from an audit event, and Detect tells
// snapshot files from audit logs. Loader (load.go) is the endpoints kind of ingest: it loads a
// snapshot file into the tables through RowSink.
package k8sobj
