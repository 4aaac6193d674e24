package k8sobj

import (
	"slices"

	"github.com/kubesift/kubesift/store"
)

// Tables fed by ingest/k8sobj from Kubernetes object snapshots (kubectl get -o json|yaml, -w
// streams, watch-event streams) and from Endpoints/EndpointSlice bodies in audit events. The first
// four columns of each (captured_at, source, source_file, load_id) and the last (cluster) are filled
// by the caller; the rest come from Record.Values() in this order.

func k8sObjectCallerColumns() []store.Column {
	return []store.Column{
		{Name: "captured_at", Type: "TIMESTAMPTZ", Doc: "when the object was seen: the snapshot time (from the file name, --at, or the file's time) or the audit event's stageTimestamp"},
		{Name: "source", Type: "VARCHAR", Doc: "'snapshot' (a saved kubectl/API dump) or 'audit' (a request or response body in an audit event)"},
		{Name: "source_file", Type: "VARCHAR", Doc: "file the object was read from (- for stdin)"},
		{Name: "load_id", Type: "BIGINT", Doc: "ingest_files.load_id of the load that added this row"},
	}
}

func k8sObjectOriginColumns() []store.Column {
	return []store.Column{
		{Name: "source_line", Type: "BIGINT", Doc: "1-based line in source_file where the object starts (the list item's line inside a List; the audit event's line for source='audit')"},
		{Name: "object_seq", Type: "BIGINT", Doc: "1-based ordinal of the object in source_file (list items count singly); orders the objects of a -w or watch stream. NULL for audit bodies"},
		{Name: "event", Type: "VARCHAR", Doc: "NULL for a plain object; ADDED, MODIFIED or DELETED for a watch event; the audit verb (create, update, patch, delete) for source='audit'"},
	}
}

func k8sObjectColumns(cols ...store.Column) []store.Column {
	out := append(k8sObjectCallerColumns(), k8sObjectOriginColumns()...)
	return append(append(out, cols...), store.ClusterColumn)
}

var endpointAddressesTable = store.Table{
	Name: "endpoint_addresses",
	// the rules time the observations of a watch stream by their change (a file captured after the
	// window can hold the window's events: ks_address_states in queries/macros.sql)
	ChangeTime: "change_time",
	Doc: "One row per address of a v1 Endpoints or discovery.k8s.io EndpointSlice (v1 and v1beta1) per observation. " +
		"An object with no address at all gets one row with ip NULL and deleted=false, so 'all addresses gone' differs from 'object absent'; " +
		"a deleted object (watch DELETED, audit delete) gets one row with ip NULL and deleted=true. " +
		"Flapping: the same (kind, namespace, name, ip) going ready -> not ready -> ready across captured_at/object_seq.",
	Columns: k8sObjectColumns(
		store.Column{Name: "kind", Type: "VARCHAR", Doc: "Endpoints or EndpointSlice"},
		store.Column{Name: "namespace", Type: "VARCHAR", Doc: "metadata.namespace"},
		store.Column{Name: "name", Type: "VARCHAR", Doc: "metadata.name (for slices the generated name, e.g. web-x7k2p)"},
		store.Column{Name: "service", Type: "VARCHAR", Doc: "the Service: the name of an Endpoints, the kubernetes.io/service-name label of a slice (NULL when unlabelled)"},
		store.Column{Name: "uid", Type: "VARCHAR", Doc: "metadata.uid"},
		store.Column{Name: "resource_version", Type: "VARCHAR", Doc: "metadata.resourceVersion of the object"},
		store.Column{Name: "change_time", Type: "TIMESTAMPTZ", Doc: "endpoints.kubernetes.io/last-change-trigger-time annotation: when the pod/service change this object reflects happened"},
		store.Column{Name: "deleted", Type: "BOOLEAN", Doc: "true only on the marker row of a deleted object"},
		store.Column{Name: "address_type", Type: "VARCHAR", Doc: "IPv4, IPv6 or FQDN (a slice's addressType; guessed from the address for Endpoints)"},
		store.Column{Name: "ip", Type: "VARCHAR", Doc: "the address; NULL on marker rows (object without addresses, or deleted)"},
		store.Column{Name: "hostname", Type: "VARCHAR", Doc: "hostname of the address (headless services with subdomains)"},
		store.Column{Name: "ready", Type: "BOOLEAN", Doc: "Endpoints: true in subsets[].addresses, false in notReadyAddresses. Slices: conditions.ready, unset read as true as the API says. NULL on marker rows"},
		store.Column{Name: "serving", Type: "BOOLEAN", Doc: "Slices: conditions.serving, unset read as ready. Endpoints cannot tell: equal to ready"},
		store.Column{Name: "terminating", Type: "BOOLEAN", Doc: "Slices: conditions.terminating, unset read as false. Endpoints cannot tell: NULL"},
		store.Column{Name: "target_kind", Type: "VARCHAR", Doc: "targetRef.kind, usually Pod"},
		store.Column{Name: "target_name", Type: "VARCHAR", Doc: "targetRef.name"},
		store.Column{Name: "pod", Type: "VARCHAR", Doc: "targetRef.name when targetRef.kind is Pod"},
		store.Column{Name: "node", Type: "VARCHAR", Doc: "nodeName (v1beta1 slices without nodeName: topology kubernetes.io/hostname)"},
		store.Column{Name: "zone", Type: "VARCHAR", Doc: "slice endpoint zone (v1beta1: topology topology.kubernetes.io/zone, else failure-domain.beta.kubernetes.io/zone); NULL for Endpoints"},
		store.Column{Name: "ports", Type: "VARCHAR", Doc: "ports of the subset or slice as name:port/PROTOCOL joined by commas, e.g. http:8080/TCP,metrics:9090/TCP; unnamed ports as 8080/TCP; a slice port without a number (all ports) as name:*"},
	),
}

var servicesTable = store.Table{
	Name: "services",
	Doc:  "One row per v1 Service per observation.",
	Columns: k8sObjectColumns(
		store.Column{Name: "deleted", Type: "BOOLEAN", Doc: "true when the row records the Service's deletion (watch DELETED, audit delete)"},
		store.Column{Name: "namespace", Type: "VARCHAR", Doc: "metadata.namespace"},
		store.Column{Name: "name", Type: "VARCHAR", Doc: "metadata.name"},
		store.Column{Name: "uid", Type: "VARCHAR", Doc: "metadata.uid"},
		store.Column{Name: "type", Type: "VARCHAR", Doc: "spec.type: ClusterIP (also when unset), NodePort, LoadBalancer, ExternalName"},
		store.Column{Name: "cluster_ip", Type: "VARCHAR", Doc: "spec.clusterIP; 'None' for headless services"},
		store.Column{Name: "external_name", Type: "VARCHAR", Doc: "spec.externalName"},
		store.Column{Name: "selector", Type: "MAP(VARCHAR, VARCHAR)", Doc: "spec.selector; NULL for services without a selector (manually managed endpoints)"},
		store.Column{Name: "ports", Type: "VARCHAR", Doc: "spec.ports as name:port->targetPort/PROTOCOL (->targetPort only when it differs from port) plus (node:N) for a nodePort, joined by commas, e.g. http:80->8080/TCP"},
		store.Column{Name: "publish_not_ready_addresses", Type: "BOOLEAN", Doc: "spec.publishNotReadyAddresses"},
		store.Column{Name: "internal_traffic_policy", Type: "VARCHAR", Doc: "spec.internalTrafficPolicy: Cluster or Local"},
		store.Column{Name: "external_traffic_policy", Type: "VARCHAR", Doc: "spec.externalTrafficPolicy: Cluster or Local"},
		store.Column{Name: "resource_version", Type: "VARCHAR", Doc: "metadata.resourceVersion"},
		store.Column{Name: "creation_timestamp", Type: "TIMESTAMPTZ", Doc: "metadata.creationTimestamp"},
	),
}

func probeSummaryColumns(probe string) []store.Column {
	return []store.Column{
		{Name: probe + "_probe_type", Type: "VARCHAR", Doc: probe + " probe of the first container (spec order) that has one: http, tcp, exec or grpc; NULL when no container has one (all of them: pod_probes)"},
		{Name: probe + "_probe_port", Type: "INTEGER", Doc: "its port, named ports resolved through the container's ports; NULL for exec or an unresolvable name"},
		{Name: probe + "_period_s", Type: "INTEGER", Doc: "its periodSeconds (10 when unset)"},
	}
}

var podsTable = store.Table{
	Name: "pods",
	Doc: "One row per v1 Pod per observation, with a summary of its probes for probe load estimation " +
		"(probe rate of a pod ~ 1/readiness_period_s + 1/liveness_period_s + ...; every probe of every container is in pod_probes).",
	Columns: k8sObjectColumns(append(append(append([]store.Column{
		{Name: "deleted", Type: "BOOLEAN", Doc: "true when the row records the Pod's deletion (watch DELETED, audit delete)"},
		{Name: "namespace", Type: "VARCHAR", Doc: "metadata.namespace"},
		{Name: "name", Type: "VARCHAR", Doc: "metadata.name"},
		{Name: "uid", Type: "VARCHAR", Doc: "metadata.uid"},
		{Name: "node", Type: "VARCHAR", Doc: "spec.nodeName"},
		{Name: "pod_ip", Type: "VARCHAR", Doc: "status.podIP"},
		{Name: "host_network", Type: "BOOLEAN", Doc: "spec.hostNetwork"},
		{Name: "phase", Type: "VARCHAR", Doc: "status.phase: Pending, Running, Succeeded, Failed, Unknown"},
		{Name: "ready", Type: "BOOLEAN", Doc: "status of the Ready condition; NULL when the pod has no Ready condition"},
		{Name: "labels", Type: "MAP(VARCHAR, VARCHAR)", Doc: "metadata.labels"},
		{Name: "owner_kind", Type: "VARCHAR", Doc: "kind of the controller ownerReference (else the first one), e.g. ReplicaSet, StatefulSet, DaemonSet"},
		{Name: "owner_name", Type: "VARCHAR", Doc: "name of that ownerReference"},
		{Name: "containers", Type: "INTEGER", Doc: "number of regular containers (spec.containers)"},
		{Name: "restarts", Type: "INTEGER", Doc: "sum of the containers' restartCount"},
	}, probeSummaryColumns("readiness")...), probeSummaryColumns("liveness")...), append(probeSummaryColumns("startup"),
		store.Column{Name: "probes", Type: "INTEGER", Doc: "number of probes of all containers and sidecars (rows in pod_probes)"},
		store.Column{Name: "resource_version", Type: "VARCHAR", Doc: "metadata.resourceVersion"},
		store.Column{Name: "creation_timestamp", Type: "TIMESTAMPTZ", Doc: "metadata.creationTimestamp"},
		store.Column{Name: "deletion_timestamp", Type: "TIMESTAMPTZ", Doc: "metadata.deletionTimestamp: set while the pod terminates"},
	)...)...),
}

var podProbesTable = store.Table{
	Name: "pod_probes",
	Doc: "One row per probe (readiness, liveness, startup) per container per Pod observation, for regular containers and sidecars " +
		"(init containers with restartPolicy Always); plain init containers are not probed and not listed. Unset fields carry the API defaults.",
	Columns: k8sObjectColumns(
		store.Column{Name: "namespace", Type: "VARCHAR", Doc: "pod's metadata.namespace"},
		store.Column{Name: "pod", Type: "VARCHAR", Doc: "pod's metadata.name"},
		store.Column{Name: "uid", Type: "VARCHAR", Doc: "pod's metadata.uid"},
		store.Column{Name: "node", Type: "VARCHAR", Doc: "pod's spec.nodeName: the kubelet that runs the probe"},
		store.Column{Name: "pod_ip", Type: "VARCHAR", Doc: "pod's status.podIP: where http/tcp/grpc probes go unless host is set"},
		store.Column{Name: "container", Type: "VARCHAR", Doc: "container name"},
		store.Column{Name: "container_type", Type: "VARCHAR", Doc: "container or sidecar"},
		store.Column{Name: "probe", Type: "VARCHAR", Doc: "readiness, liveness or startup"},
		store.Column{Name: "type", Type: "VARCHAR", Doc: "http, tcp, exec, grpc (unknown when the probe has no handler)"},
		store.Column{Name: "port", Type: "INTEGER", Doc: "probed port, named ports resolved through the container's ports; NULL for exec or an unresolvable name"},
		store.Column{Name: "port_name", Type: "VARCHAR", Doc: "the port's name when the probe names it"},
		store.Column{Name: "path", Type: "VARCHAR", Doc: "httpGet.path"},
		store.Column{Name: "scheme", Type: "VARCHAR", Doc: "httpGet.scheme: HTTP (also when unset) or HTTPS"},
		store.Column{Name: "host", Type: "VARCHAR", Doc: "httpGet.host or tcpSocket.host when set (default: the pod IP)"},
		store.Column{Name: "period_s", Type: "INTEGER", Doc: "periodSeconds (10 when unset)"},
		store.Column{Name: "timeout_s", Type: "INTEGER", Doc: "timeoutSeconds (1 when unset)"},
		store.Column{Name: "initial_delay_s", Type: "INTEGER", Doc: "initialDelaySeconds (0 when unset)"},
		store.Column{Name: "failure_threshold", Type: "INTEGER", Doc: "failureThreshold (3 when unset)"},
		store.Column{Name: "success_threshold", Type: "INTEGER", Doc: "successThreshold (1 when unset)"},
	),
}

var objectAnnotationsTable = store.Table{
	Name: "object_annotations",
	Doc: "One row per annotation of each Endpoints, EndpointSlice, Service, ConfigMap and Lease observation, " +
		"e.g. control-plane.alpha.kubernetes.io/leader (parsed in leader_locks) or endpoints.kubernetes.io/last-change-trigger-time. Deleted objects add none.",
	Columns: k8sObjectColumns(
		store.Column{Name: "kind", Type: "VARCHAR", Doc: "Endpoints, EndpointSlice, Service, ConfigMap or Lease"},
		store.Column{Name: "namespace", Type: "VARCHAR", Doc: "metadata.namespace"},
		store.Column{Name: "name", Type: "VARCHAR", Doc: "metadata.name"},
		store.Column{Name: "key", Type: "VARCHAR", Doc: "annotation key"},
		store.Column{Name: "value", Type: "VARCHAR", Doc: "annotation value"},
		store.Column{Name: "resource_version", Type: "VARCHAR", Doc: "metadata.resourceVersion of the object"},
	),
}

var leaderLocksTable = store.Table{
	Name: "leader_locks",
	Doc: "One row per leader-election lock observation: a coordination.k8s.io Lease's spec, or the control-plane.alpha.kubernetes.io/leader " +
		"annotation (client-go's LeaderElectionRecord) of an Endpoints or ConfigMap. Churn: holder or transitions changing between observations of one lock; " +
		"a renew_time older than lease_duration_s before captured_at means an expired lease.",
	Columns: k8sObjectColumns(
		store.Column{Name: "kind", Type: "VARCHAR", Doc: "Lease, Endpoints or ConfigMap"},
		store.Column{Name: "namespace", Type: "VARCHAR", Doc: "metadata.namespace, e.g. kube-system"},
		store.Column{Name: "name", Type: "VARCHAR", Doc: "metadata.name: the lock, e.g. kube-controller-manager"},
		store.Column{Name: "lock_type", Type: "VARCHAR", Doc: "lease (Lease spec) or annotation (leader annotation)"},
		store.Column{Name: "holder", Type: "VARCHAR", Doc: "holderIdentity; NULL or empty when released"},
		store.Column{Name: "lease_duration_s", Type: "BIGINT", Doc: "leaseDurationSeconds"},
		store.Column{Name: "acquire_time", Type: "TIMESTAMPTZ", Doc: "acquireTime: when the current holder took the lock"},
		store.Column{Name: "renew_time", Type: "TIMESTAMPTZ", Doc: "renewTime: the holder's last renewal"},
		store.Column{Name: "transitions", Type: "BIGINT", Doc: "leaseTransitions (Lease) or leaderTransitions (annotation): number of leader changes"},
		store.Column{Name: "resource_version", Type: "VARCHAR", Doc: "metadata.resourceVersion of the object"},
	),
}

// endpointObjectsTable is endpoint_addresses grouped by load and object. The rules and the
// timeline follow endpoint states over a window, but two things they need of an object are its
// history: whether its file is a watch stream (whose observations take their times from the events
// before them, so that the file is read whole) and, for a deleted EndpointSlice, its Service and
// addresses. Read from endpoint_addresses they cost a scan of every observation at every window:
// a week of 15-minute snapshots of 300 Services made all rules over a 15-minute window take twice
// the time of that window alone (BENCHMARKS.md).
var endpointObjectsTable = store.Table{
	Name:       "endpoint_objects",
	Evidence:   "snapshot",
	TimeColumn: "captured_at",
	Doc: "One row per Endpoints or EndpointSlice per load that observed it (endpoint_addresses grouped by load, file and object): whether it was observed more than once, when, its Service and its addresses, " +
		"derived from endpoint_addresses once an ingest has loaded its files (and, when the database is next opened, from the rows of an ingest that stopped before, of a database made before this table, or of loads by an older kubesift), " +
		"so that a short window does not scan every observation to tell the watch streams among the snapshot files or to find a deleted slice's Service and addresses.",
	Columns: []store.Column{
		{Name: "captured_at", Type: "TIMESTAMPTZ", Doc: "the latest endpoint_addresses.captured_at of the object's rows in the load: retention removes the row with the last of them"},
		{Name: "source", Type: "VARCHAR", Doc: "endpoint_addresses.source: snapshot or audit"},
		{Name: "source_file", Type: "VARCHAR", Doc: "endpoint_addresses.source_file"},
		{Name: "load_id", Type: "BIGINT", Doc: "endpoint_addresses.load_id"},
		{Name: "kind", Type: "VARCHAR", Doc: "Endpoints or EndpointSlice"},
		{Name: "namespace", Type: "VARCHAR", Doc: "endpoint_addresses.namespace"},
		{Name: "name", Type: "VARCHAR", Doc: "endpoint_addresses.name"},
		{Name: "repeated", Type: "BOOLEAN", Doc: "the load observed the object more than once (two object_seq, else source_line): in a snapshot file, that makes the file a watch stream (kubectl get -w)"},
		{Name: "first_at", Type: "TIMESTAMPTZ", Doc: "the earliest time of its observations (change_time, else captured_at): a watch stream's observations take their times from these"},
		{Name: "last_at", Type: "TIMESTAMPTZ", Doc: "the latest time of its observations (change_time, else captured_at)"},
		{Name: "service", Type: "VARCHAR", Doc: "the Service its observations name (endpoint_addresses.service; the first in order when they name several); NULL when none does"},
		{Name: "ips", Type: "VARCHAR[]", Doc: "the addresses its observations hold, each once, sorted; empty when none holds one"},
		store.ClusterColumn,
	},
	Derive: `SELECT max(captured_at) AS captured_at, source, source_file, load_id, kind, namespace, name,
        min(coalesce(object_seq, source_line)) < max(coalesce(object_seq, source_line)) AS repeated,
        min(coalesce(change_time, captured_at)) AS first_at, max(coalesce(change_time, captured_at)) AS last_at,
        min(service) FILTER (WHERE service <> '') AS service,
        list_sort(list_distinct(list(ip))) AS ips,
        cluster
    FROM endpoint_addresses
    GROUP BY source, source_file, load_id, kind, namespace, name, cluster`,
}

// Tables lists the tables fed by ingest/k8sobj, in documentation order; the audit Loader writes
// them too.
var Tables = slices.Concat(observations(endpointAddressesTable), []store.Table{endpointObjectsTable}, observations(
	servicesTable,
	podsTable,
	podProbesTable,
	objectAnnotationsTable,
	leaderLocksTable,
))

// provenanceColumns say where a row came from rather than what it records; two rows that differ
// only there describe the same observation (the same snapshot saved as JSON and as YAML).
var provenanceColumns = []string{"source_file", "source_line", "object_seq", "load_id"}

// observations sets what the object tables share: their evidence, their time, and a dedupe key of
// every column but the provenance ones.
func observations(tables ...store.Table) []store.Table {
	for i, t := range tables {
		t.Evidence, t.TimeColumn = "snapshot", "captured_at"
		for _, c := range t.ColumnNames() {
			if !slices.Contains(provenanceColumns, c) {
				t.DedupeKey = append(t.DedupeKey, c)
			}
		}
		tables[i] = t
	}
	return tables
}
