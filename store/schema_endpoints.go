package store

import "slices"

// Tables fed by ingest/k8sobj from Kubernetes object snapshots (kubectl get -o json|yaml, -w
// streams, watch-event streams) and from Endpoints/EndpointSlice bodies in audit events. The first
// four columns of each (captured_at, source, source_file, load_id) and the last (cluster) are filled
// by the caller; the rest come from k8sobj.Record.Values() in this order.

func k8sObjectCallerColumns() []Column {
	return []Column{
		{"captured_at", "TIMESTAMPTZ", "when the object was seen: the snapshot time (from the file name, --at, or the file's time) or the audit event's stageTimestamp"},
		{"source", "VARCHAR", "'snapshot' (a saved kubectl/API dump) or 'audit' (a request or response body in an audit event)"},
		{"source_file", "VARCHAR", "file the object was read from (- for stdin)"},
		{"load_id", "BIGINT", "ingest_files.load_id of the load that added this row"},
	}
}

func k8sObjectOriginColumns() []Column {
	return []Column{
		{"source_line", "BIGINT", "1-based line in source_file where the object starts (the list item's line inside a List; the audit event's line for source='audit')"},
		{"object_seq", "BIGINT", "1-based ordinal of the object in source_file (list items count singly); orders the objects of a -w or watch stream. NULL for audit bodies"},
		{"event", "VARCHAR", "NULL for a plain object; ADDED, MODIFIED or DELETED for a watch event; the audit verb (create, update, patch, delete) for source='audit'"},
	}
}

func k8sObjectColumns(cols ...Column) []Column {
	out := append(k8sObjectCallerColumns(), k8sObjectOriginColumns()...)
	return append(append(out, cols...), ClusterColumn)
}

var endpointAddressesTable = Table{
	Name: "endpoint_addresses",
	Doc: "One row per address of a v1 Endpoints or discovery.k8s.io EndpointSlice (v1 and v1beta1) per observation. " +
		"An object with no address at all gets one row with ip NULL and deleted=false, so 'all addresses gone' differs from 'object absent'; " +
		"a deleted object (watch DELETED, audit delete) gets one row with ip NULL and deleted=true. " +
		"Flapping: the same (kind, namespace, name, ip) going ready -> not ready -> ready across captured_at/object_seq.",
	Columns: k8sObjectColumns(
		Column{"kind", "VARCHAR", "Endpoints or EndpointSlice"},
		Column{"namespace", "VARCHAR", "metadata.namespace"},
		Column{"name", "VARCHAR", "metadata.name (for slices the generated name, e.g. web-x7k2p)"},
		Column{"service", "VARCHAR", "the Service: the name of an Endpoints, the kubernetes.io/service-name label of a slice (NULL when unlabelled)"},
		Column{"uid", "VARCHAR", "metadata.uid"},
		Column{"resource_version", "VARCHAR", "metadata.resourceVersion of the object"},
		Column{"change_time", "TIMESTAMPTZ", "endpoints.kubernetes.io/last-change-trigger-time annotation: when the pod/service change this object reflects happened"},
		Column{"deleted", "BOOLEAN", "true only on the marker row of a deleted object"},
		Column{"address_type", "VARCHAR", "IPv4, IPv6 or FQDN (a slice's addressType; guessed from the address for Endpoints)"},
		Column{"ip", "VARCHAR", "the address; NULL on marker rows (object without addresses, or deleted)"},
		Column{"hostname", "VARCHAR", "hostname of the address (headless services with subdomains)"},
		Column{"ready", "BOOLEAN", "Endpoints: true in subsets[].addresses, false in notReadyAddresses. Slices: conditions.ready, unset read as true as the API says. NULL on marker rows"},
		Column{"serving", "BOOLEAN", "Slices: conditions.serving, unset read as ready. Endpoints cannot tell: equal to ready"},
		Column{"terminating", "BOOLEAN", "Slices: conditions.terminating, unset read as false. Endpoints cannot tell: NULL"},
		Column{"target_kind", "VARCHAR", "targetRef.kind, usually Pod"},
		Column{"target_name", "VARCHAR", "targetRef.name"},
		Column{"pod", "VARCHAR", "targetRef.name when targetRef.kind is Pod"},
		Column{"node", "VARCHAR", "nodeName (v1beta1 slices without nodeName: topology kubernetes.io/hostname)"},
		Column{"zone", "VARCHAR", "slice endpoint zone (v1beta1: topology topology.kubernetes.io/zone, else failure-domain.beta.kubernetes.io/zone); NULL for Endpoints"},
		Column{"ports", "VARCHAR", "ports of the subset or slice as name:port/PROTOCOL joined by commas, e.g. http:8080/TCP,metrics:9090/TCP; unnamed ports as 8080/TCP; a slice port without a number (all ports) as name:*"},
	),
}

var servicesTable = Table{
	Name: "services",
	Doc:  "One row per v1 Service per observation.",
	Columns: k8sObjectColumns(
		Column{"deleted", "BOOLEAN", "true when the row records the Service's deletion (watch DELETED, audit delete)"},
		Column{"namespace", "VARCHAR", "metadata.namespace"},
		Column{"name", "VARCHAR", "metadata.name"},
		Column{"uid", "VARCHAR", "metadata.uid"},
		Column{"type", "VARCHAR", "spec.type: ClusterIP (also when unset), NodePort, LoadBalancer, ExternalName"},
		Column{"cluster_ip", "VARCHAR", "spec.clusterIP; 'None' for headless services"},
		Column{"external_name", "VARCHAR", "spec.externalName"},
		Column{"selector", "MAP(VARCHAR, VARCHAR)", "spec.selector; NULL for services without a selector (manually managed endpoints)"},
		Column{"ports", "VARCHAR", "spec.ports as name:port->targetPort/PROTOCOL (->targetPort only when it differs from port) plus (node:N) for a nodePort, joined by commas, e.g. http:80->8080/TCP"},
		Column{"publish_not_ready_addresses", "BOOLEAN", "spec.publishNotReadyAddresses"},
		Column{"internal_traffic_policy", "VARCHAR", "spec.internalTrafficPolicy: Cluster or Local"},
		Column{"external_traffic_policy", "VARCHAR", "spec.externalTrafficPolicy: Cluster or Local"},
		Column{"resource_version", "VARCHAR", "metadata.resourceVersion"},
		Column{"creation_timestamp", "TIMESTAMPTZ", "metadata.creationTimestamp"},
	),
}

func probeSummaryColumns(probe string) []Column {
	return []Column{
		{probe + "_probe_type", "VARCHAR", probe + " probe of the first container (spec order) that has one: http, tcp, exec or grpc; NULL when no container has one (all of them: pod_probes)"},
		{probe + "_probe_port", "INTEGER", "its port, named ports resolved through the container's ports; NULL for exec or an unresolvable name"},
		{probe + "_period_s", "INTEGER", "its periodSeconds (10 when unset)"},
	}
}

var podsTable = Table{
	Name: "pods",
	Doc: "One row per v1 Pod per observation, with a summary of its probes for probe load estimation " +
		"(probe rate of a pod ~ 1/readiness_period_s + 1/liveness_period_s + ...; every probe of every container is in pod_probes).",
	Columns: k8sObjectColumns(append(append(append([]Column{
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
		Column{"probes", "INTEGER", "number of probes of all containers and sidecars (rows in pod_probes)"},
		Column{"resource_version", "VARCHAR", "metadata.resourceVersion"},
		Column{"creation_timestamp", "TIMESTAMPTZ", "metadata.creationTimestamp"},
		Column{"deletion_timestamp", "TIMESTAMPTZ", "metadata.deletionTimestamp: set while the pod terminates"},
	)...)...),
}

var podProbesTable = Table{
	Name: "pod_probes",
	Doc: "One row per probe (readiness, liveness, startup) per container per Pod observation, for regular containers and sidecars " +
		"(init containers with restartPolicy Always); plain init containers are not probed and not listed. Unset fields carry the API defaults.",
	Columns: k8sObjectColumns(
		Column{"namespace", "VARCHAR", "pod's metadata.namespace"},
		Column{"pod", "VARCHAR", "pod's metadata.name"},
		Column{"uid", "VARCHAR", "pod's metadata.uid"},
		Column{"node", "VARCHAR", "pod's spec.nodeName: the kubelet that runs the probe"},
		Column{"pod_ip", "VARCHAR", "pod's status.podIP: where http/tcp/grpc probes go unless host is set"},
		Column{"container", "VARCHAR", "container name"},
		Column{"container_type", "VARCHAR", "container or sidecar"},
		Column{"probe", "VARCHAR", "readiness, liveness or startup"},
		Column{"type", "VARCHAR", "http, tcp, exec, grpc (unknown when the probe has no handler)"},
		Column{"port", "INTEGER", "probed port, named ports resolved through the container's ports; NULL for exec or an unresolvable name"},
		Column{"port_name", "VARCHAR", "the port's name when the probe names it"},
		Column{"path", "VARCHAR", "httpGet.path"},
		Column{"scheme", "VARCHAR", "httpGet.scheme: HTTP (also when unset) or HTTPS"},
		Column{"host", "VARCHAR", "httpGet.host or tcpSocket.host when set (default: the pod IP)"},
		Column{"period_s", "INTEGER", "periodSeconds (10 when unset)"},
		Column{"timeout_s", "INTEGER", "timeoutSeconds (1 when unset)"},
		Column{"initial_delay_s", "INTEGER", "initialDelaySeconds (0 when unset)"},
		Column{"failure_threshold", "INTEGER", "failureThreshold (3 when unset)"},
		Column{"success_threshold", "INTEGER", "successThreshold (1 when unset)"},
	),
}

var objectAnnotationsTable = Table{
	Name: "object_annotations",
	Doc: "One row per annotation of each Endpoints, EndpointSlice, Service, ConfigMap and Lease observation, " +
		"e.g. control-plane.alpha.kubernetes.io/leader (parsed in leader_locks) or endpoints.kubernetes.io/last-change-trigger-time. Deleted objects add none.",
	Columns: k8sObjectColumns(
		Column{"kind", "VARCHAR", "Endpoints, EndpointSlice, Service, ConfigMap or Lease"},
		Column{"namespace", "VARCHAR", "metadata.namespace"},
		Column{"name", "VARCHAR", "metadata.name"},
		Column{"key", "VARCHAR", "annotation key"},
		Column{"value", "VARCHAR", "annotation value"},
		Column{"resource_version", "VARCHAR", "metadata.resourceVersion of the object"},
	),
}

var leaderLocksTable = Table{
	Name: "leader_locks",
	Doc: "One row per leader-election lock observation: a coordination.k8s.io Lease's spec, or the control-plane.alpha.kubernetes.io/leader " +
		"annotation (client-go's LeaderElectionRecord) of an Endpoints or ConfigMap. Churn: holder or transitions changing between observations of one lock; " +
		"a renew_time older than lease_duration_s before captured_at means an expired lease.",
	Columns: k8sObjectColumns(
		Column{"kind", "VARCHAR", "Lease, Endpoints or ConfigMap"},
		Column{"namespace", "VARCHAR", "metadata.namespace, e.g. kube-system"},
		Column{"name", "VARCHAR", "metadata.name: the lock, e.g. kube-controller-manager"},
		Column{"lock_type", "VARCHAR", "lease (Lease spec) or annotation (leader annotation)"},
		Column{"holder", "VARCHAR", "holderIdentity; NULL or empty when released"},
		Column{"lease_duration_s", "BIGINT", "leaseDurationSeconds"},
		Column{"acquire_time", "TIMESTAMPTZ", "acquireTime: when the current holder took the lock"},
		Column{"renew_time", "TIMESTAMPTZ", "renewTime: the holder's last renewal"},
		Column{"transitions", "BIGINT", "leaseTransitions (Lease) or leaderTransitions (annotation): number of leader changes"},
		Column{"resource_version", "VARCHAR", "metadata.resourceVersion of the object"},
	),
}

// K8sObjectTables lists the tables fed by ingest/k8sobj, in documentation order.
var K8sObjectTables = observations(
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
func observations(tables ...Table) []Table {
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
