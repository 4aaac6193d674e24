package k8sobj

import (
	"slices"

	"github.com/kubesift/kubesift/store"
)

// Tables fed by ingest/k8sobj from Kubernetes object snapshots (kubectl get -o json|yaml, -w
// streams, watch-event streams) and from Endpoints/EndpointSlice bodies in audit events. The first
// four columns of each (captured_at, source, source_file, load_id) are filled by the caller; the
// rest come from Record.Values() in this order.

func k8sObjectCallerColumns() []store.Column {
	return []store.Column{
		{"captured_at", "TIMESTAMPTZ", "when the object was seen: the snapshot time (from the file name, --at, or the file's time) or the audit event's stageTimestamp"},
		{"source", "VARCHAR", "'snapshot' (a saved kubectl/API dump) or 'audit' (a request or response body in an audit event)"},
		{"source_file", "VARCHAR", "file the object was read from (- for stdin)"},
		{"load_id", "BIGINT", "ingest_files.load_id of the load that added this row"},
	}
}

func k8sObjectOriginColumns() []store.Column {
	return []store.Column{
		{"source_line", "BIGINT", "1-based line in source_file where the object starts (the list item's line inside a List; the audit event's line for source='audit')"},
		{"object_seq", "BIGINT", "1-based ordinal of the object in source_file (list items count singly); orders the objects of a -w or watch stream. NULL for audit bodies"},
		{"event", "VARCHAR", "NULL for a plain object; ADDED, MODIFIED or DELETED for a watch event; the audit verb (create, update, patch, delete) for source='audit'"},
	}
}

func k8sObjectColumns(cols ...store.Column) []store.Column {
	out := append(k8sObjectCallerColumns(), k8sObjectOriginColumns()...)
	return append(out, cols...)
}

var endpointAddressesTable = store.Table{
	Name: "endpoint_addresses",
	Doc: "One row per address of a v1 Endpoints or discovery.k8s.io EndpointSlice (v1 and v1beta1) per observation. " +
		"An object with no address at all gets one row with ip NULL and deleted=false, so 'all addresses gone' differs from 'object absent'; " +
		"a deleted object (watch DELETED, audit delete) gets one row with ip NULL and deleted=true. " +
		"Flapping: the same (kind, namespace, name, ip) going ready -> not ready -> ready across captured_at/object_seq.",
	Columns: k8sObjectColumns(
		store.Column{"kind", "VARCHAR", "Endpoints or EndpointSlice"},
		store.Column{"namespace", "VARCHAR", "metadata.namespace"},
		store.Column{"name", "VARCHAR", "metadata.name (for slices the generated name, e.g. web-x7k2p)"},
		store.Column{"service", "VARCHAR", "the Service: the name of an Endpoints, the kubernetes.io/service-name label of a slice (NULL when unlabelled)"},
		store.Column{"uid", "VARCHAR", "metadata.uid"},
		store.Column{"resource_version", "VARCHAR", "metadata.resourceVersion of the object"},
		store.Column{"change_time", "TIMESTAMPTZ", "endpoints.kubernetes.io/last-change-trigger-time annotation: when the pod/service change this object reflects happened"},
		store.Column{"deleted", "BOOLEAN", "true only on the marker row of a deleted object"},
		store.Column{"address_type", "VARCHAR", "IPv4, IPv6 or FQDN (a slice's addressType; guessed from the address for Endpoints)"},
		store.Column{"ip", "VARCHAR", "the address; NULL on marker rows (object without addresses, or deleted)"},
		store.Column{"hostname", "VARCHAR", "hostname of the address (headless services with subdomains)"},
		store.Column{"ready", "BOOLEAN", "Endpoints: true in subsets[].addresses, false in notReadyAddresses. Slices: conditions.ready, unset read as true as the API says. NULL on marker rows"},
		store.Column{"serving", "BOOLEAN", "Slices: conditions.serving, unset read as ready. Endpoints cannot tell: equal to ready"},
		store.Column{"terminating", "BOOLEAN", "Slices: conditions.terminating, unset read as false. Endpoints cannot tell: NULL"},
		store.Column{"target_kind", "VARCHAR", "targetRef.kind, usually Pod"},
		store.Column{"target_name", "VARCHAR", "targetRef.name"},
		store.Column{"pod", "VARCHAR", "targetRef.name when targetRef.kind is Pod"},
		store.Column{"node", "VARCHAR", "nodeName (v1beta1 slices without nodeName: topology kubernetes.io/hostname)"},
		store.Column{"zone", "VARCHAR", "slice endpoint zone (v1beta1: topology topology.kubernetes.io/zone, else failure-domain.beta.kubernetes.io/zone); NULL for Endpoints"},
		store.Column{"ports", "VARCHAR", "ports of the subset or slice as name:port/PROTOCOL joined by commas, e.g. http:8080/TCP,metrics:9090/TCP; unnamed ports as 8080/TCP; a slice port without a number (all ports) as name:*"},
	),
}

var servicesTable = store.Table{
	Name: "services",
	Doc:  "One row per v1 Service per observation.",
	Columns: k8sObjectColumns(
		store.Column{"deleted", "BOOLEAN", "true when the row records the Service's deletion (watch DELETED, audit delete)"},
		store.Column{"namespace", "VARCHAR", "metadata.namespace"},
		store.Column{"name", "VARCHAR", "metadata.name"},
		store.Column{"uid", "VARCHAR", "metadata.uid"},
		store.Column{"type", "VARCHAR", "spec.type: ClusterIP (also when unset), NodePort, LoadBalancer, ExternalName"},
		store.Column{"cluster_ip", "VARCHAR", "spec.clusterIP; 'None' for headless services"},
		store.Column{"external_name", "VARCHAR", "spec.externalName"},
		store.Column{"selector", "MAP(VARCHAR, VARCHAR)", "spec.selector; NULL for services without a selector (manually managed endpoints)"},
		store.Column{"ports", "VARCHAR", "spec.ports as name:port->targetPort/PROTOCOL (->targetPort only when it differs from port) plus (node:N) for a nodePort, joined by commas, e.g. http:80->8080/TCP"},
		store.Column{"publish_not_ready_addresses", "BOOLEAN", "spec.publishNotReadyAddresses"},
		store.Column{"internal_traffic_policy", "VARCHAR", "spec.internalTrafficPolicy: Cluster or Local"},
		store.Column{"external_traffic_policy", "VARCHAR", "spec.externalTrafficPolicy: Cluster or Local"},
		store.Column{"resource_version", "VARCHAR", "metadata.resourceVersion"},
		store.Column{"creation_timestamp", "TIMESTAMPTZ", "metadata.creationTimestamp"},
	),
}

func probeSummaryColumns(probe string) []store.Column {
	return []store.Column{
		{probe + "_probe_type", "VARCHAR", probe + " probe of the first container (spec order) that has one: http, tcp, exec or grpc; NULL when no container has one (all of them: pod_probes)"},
		{probe + "_probe_port", "INTEGER", "its port, named ports resolved through the container's ports; NULL for exec or an unresolvable name"},
		{probe + "_period_s", "INTEGER", "its periodSeconds (10 when unset)"},
	}
}

var podsTable = store.Table{
	Name: "pods",
	Doc: "One row per v1 Pod per observation, with a summary of its probes for probe load estimation " +
		"(probe rate of a pod ~ 1/readiness_period_s + 1/liveness_period_s + ...; every probe of every container is in pod_probes).",
	Columns: k8sObjectColumns(append(append(append([]store.Column{
		{"deleted", "BOOLEAN", "true when the row records the Pod's deletion (watch DELETED, audit delete)"},
		{"namespace", "VARCHAR", "metadata.namespace"},
		{"name", "VARCHAR", "metadata.name"},
		{"uid", "VARCHAR", "metadata.uid"},
		{"node", "VARCHAR", "spec.nodeName"},
		{"pod_ip", "VARCHAR", "status.podIP"},
		{"host_network", "BOOLEAN", "spec.hostNetwork"},
		{"phase", "VARCHAR", "status.phase: Pending, Running, Succeeded, Failed, Unknown"},
		{"ready", "BOOLEAN", "status of the Ready condition; NULL when the pod has no Ready condition"},
		{"labels", "MAP(VARCHAR, VARCHAR)", "metadata.labels"},
		{"owner_kind", "VARCHAR", "kind of the controller ownerReference (else the first one), e.g. ReplicaSet, StatefulSet, DaemonSet"},
		{"owner_name", "VARCHAR", "name of that ownerReference"},
		{"containers", "INTEGER", "number of regular containers (spec.containers)"},
		{"restarts", "INTEGER", "sum of the containers' restartCount"},
	}, probeSummaryColumns("readiness")...), probeSummaryColumns("liveness")...), append(probeSummaryColumns("startup"),
		store.Column{"probes", "INTEGER", "number of probes of all containers and sidecars (rows in pod_probes)"},
		store.Column{"resource_version", "VARCHAR", "metadata.resourceVersion"},
		store.Column{"creation_timestamp", "TIMESTAMPTZ", "metadata.creationTimestamp"},
		store.Column{"deletion_timestamp", "TIMESTAMPTZ", "metadata.deletionTimestamp: set while the pod terminates"},
	)...)...),
}

var podProbesTable = store.Table{
	Name: "pod_probes",
	Doc: "One row per probe (readiness, liveness, startup) per container per Pod observation, for regular containers and sidecars " +
		"(init containers with restartPolicy Always); plain init containers are not probed and not listed. Unset fields carry the API defaults.",
	Columns: k8sObjectColumns(
		store.Column{"namespace", "VARCHAR", "pod's metadata.namespace"},
		store.Column{"pod", "VARCHAR", "pod's metadata.name"},
		store.Column{"uid", "VARCHAR", "pod's metadata.uid"},
		store.Column{"node", "VARCHAR", "pod's spec.nodeName: the kubelet that runs the probe"},
		store.Column{"pod_ip", "VARCHAR", "pod's status.podIP: where http/tcp/grpc probes go unless host is set"},
		store.Column{"container", "VARCHAR", "container name"},
		store.Column{"container_type", "VARCHAR", "container or sidecar"},
		store.Column{"probe", "VARCHAR", "readiness, liveness or startup"},
		store.Column{"type", "VARCHAR", "http, tcp, exec, grpc (unknown when the probe has no handler)"},
		store.Column{"port", "INTEGER", "probed port, named ports resolved through the container's ports; NULL for exec or an unresolvable name"},
		store.Column{"port_name", "VARCHAR", "the port's name when the probe names it"},
		store.Column{"path", "VARCHAR", "httpGet.path"},
		store.Column{"scheme", "VARCHAR", "httpGet.scheme: HTTP (also when unset) or HTTPS"},
		store.Column{"host", "VARCHAR", "httpGet.host or tcpSocket.host when set (default: the pod IP)"},
		store.Column{"period_s", "INTEGER", "periodSeconds (10 when unset)"},
		store.Column{"timeout_s", "INTEGER", "timeoutSeconds (1 when unset)"},
		store.Column{"initial_delay_s", "INTEGER", "initialDelaySeconds (0 when unset)"},
		store.Column{"failure_threshold", "INTEGER", "failureThreshold (3 when unset)"},
		store.Column{"success_threshold", "INTEGER", "successThreshold (1 when unset)"},
	),
}

var objectAnnotationsTable = store.Table{
	Name: "object_annotations",
	Doc: "One row per annotation of each Endpoints, EndpointSlice, Service, ConfigMap and Lease observation, " +
		"e.g. control-plane.alpha.kubernetes.io/leader (parsed in leader_locks) or endpoints.kubernetes.io/last-change-trigger-time. Deleted objects add none.",
	Columns: k8sObjectColumns(
		store.Column{"kind", "VARCHAR", "Endpoints, EndpointSlice, Service, ConfigMap or Lease"},
		store.Column{"namespace", "VARCHAR", "metadata.namespace"},
		store.Column{"name", "VARCHAR", "metadata.name"},
		store.Column{"key", "VARCHAR", "annotation key"},
		store.Column{"value", "VARCHAR", "annotation value"},
		store.Column{"resource_version", "VARCHAR", "metadata.resourceVersion of the object"},
	),
}

var leaderLocksTable = store.Table{
	Name: "leader_locks",
	Doc: "One row per leader-election lock observation: a coordination.k8s.io Lease's spec, or the control-plane.alpha.kubernetes.io/leader " +
		"annotation (client-go's LeaderElectionRecord) of an Endpoints or ConfigMap. Churn: holder or transitions changing between observations of one lock; " +
		"a renew_time older than lease_duration_s before captured_at means an expired lease.",
	Columns: k8sObjectColumns(
		store.Column{"kind", "VARCHAR", "Lease, Endpoints or ConfigMap"},
		store.Column{"namespace", "VARCHAR", "metadata.namespace, e.g. kube-system"},
		store.Column{"name", "VARCHAR", "metadata.name: the lock, e.g. kube-controller-manager"},
		store.Column{"lock_type", "VARCHAR", "lease (Lease spec) or annotation (leader annotation)"},
		store.Column{"holder", "VARCHAR", "holderIdentity; NULL or empty when released"},
		store.Column{"lease_duration_s", "BIGINT", "leaseDurationSeconds"},
		store.Column{"acquire_time", "TIMESTAMPTZ", "acquireTime: when the current holder took the lock"},
		store.Column{"renew_time", "TIMESTAMPTZ", "renewTime: the holder's last renewal"},
		store.Column{"transitions", "BIGINT", "leaseTransitions (Lease) or leaderTransitions (annotation): number of leader changes"},
		store.Column{"resource_version", "VARCHAR", "metadata.resourceVersion of the object"},
	),
}

// Tables lists the tables fed by ingest/k8sobj, in documentation order; the audit Loader writes
// them too.
var Tables = observations(
	endpointAddressesTable,
	servicesTable,
	podsTable,
	podProbesTable,
	objectAnnotationsTable,
	leaderLocksTable,
)

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
