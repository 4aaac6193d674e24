package audit

import (
	"fmt"

	"github.com/kubesift/kubesift/store"
)

// vocabulary is the compression of the columns whose values come from a small vocabulary (stages,
// verbs, resources, users, namespaces, selectors, reasons, files): a dictionary, whose scan hands
// DuckDB's operators the column's distinct values once with an index per row. Left to choose per
// segment by size, DuckDB stored the rarely set ones with FSST (subresource, status_reason,
// field_selector and resource_version_match, 2 to 5 distinct values in the recordings replicated
// to 10M events), which a scan decompresses value by value: the rules read subresource for every
// write and the others for every watch. With them in dictionaries all rules over that database took
// 0.94× the time, and loads 0.93-0.96× (BENCHMARKS.md); in the storage format of DuckDB 1.5 a
// dictionary's strings are FSST-compressed too (store.Vocabulary). Object names, IDs, versions,
// URIs and messages are left to DuckDB: they are mostly distinct.
const vocabulary = store.Vocabulary

// auditEventsTable is where Loader puts the events; the endpoint states derived from their
// bodies go to the k8sobj tables.

var auditEventsTable = store.Table{
	Name:       "audit_events",
	Evidence:   "audit",
	TimeColumn: "stage_at",
	DedupeKey:  []string{"audit_id", "stage", "cluster"},
	// a dataset's day in files by verb, as a row group of the database groups its rows by kind
	DatasetFiles: &store.FileSplit{Column: "verb", Values: []string{"get", "list", "watch", "create", "update", "patch", "delete"}},
	Doc: "One row per kube-apiserver audit event (audit.k8s.io/v1 or v1beta1), deduplicated on (audit_id, stage, cluster): one log given two cluster names is two clusters' events. " +
		"Bodies of Secrets, TokenReviews and token requests are dropped at ingest unless --keep-secrets is given; secrets elsewhere in events are redacted (README: Secrets stay out). " +
		"Rows are not stored in the order of the file: within each row group they are grouped by kind (creates, updates, patches, deletes, watches, lists, gets; the answers of 400 and above apart), so that a scan for one kind skips the others; order by stage_at, or by source_file and source_line.",
	// In storage order: DuckDB writes a row group's columns in this order, packing those smaller
	// than a block (256 KiB) together into shared blocks, and a scan reads whole blocks. So the
	// columns the rules read come first, the narrow ones ahead of audit_id, and those they never
	// read after them, the bodies last (analyze's TestAuditColumnsReadComeFirst). In this order all
	// rules over the recordings at 10M events read 8.1 GB of the database instead of 10.8 GB, in
	// 0.92x the time (BENCHMARKS.md). Loads insert by name.
	Columns: []store.Column{
		{Name: "cluster", Type: "VARCHAR", Compression: vocabulary, Doc: "cluster the event was logged in: --cluster, else the envelope's (EKS log group, AKS resourceId, GKE cluster_name); \"\" when unknown"},
		{Name: "apiserver", Type: "VARCHAR", Compression: vocabulary, Doc: "apiserver that logged the event: --apiserver, else the envelope's or path's (GKE/EKS log stream, must-gather <server>/<node>); \"\" when unknown"},
		{Name: "stage", Type: "VARCHAR", Compression: vocabulary, Doc: "RequestReceived, ResponseStarted (watches), ResponseComplete or Panic"},
		{Name: "verb", Type: "VARCHAR", Compression: vocabulary, Doc: "Kubernetes verb: get, list, watch, create, update, patch, delete, deletecollection"},
		{Name: "code", Type: "INTEGER", Doc: "responseStatus.code: HTTP status (200 for a watch even when it ends with 410 inside the stream)"},
		{Name: "resource", Type: "VARCHAR", Compression: vocabulary, Doc: "objectRef.resource, e.g. endpoints; NULL for non-resource URLs"},
		{Name: "subresource", Type: "VARCHAR", Compression: vocabulary, Doc: "objectRef.subresource, e.g. status"},
		{Name: "api_group", Type: "VARCHAR", Compression: vocabulary, Doc: "objectRef.apiGroup; empty for the core group"},
		{Name: "api_version", Type: "VARCHAR", Compression: vocabulary, Doc: "objectRef.apiVersion"},
		{Name: "namespace", Type: "VARCHAR", Compression: vocabulary, Doc: "objectRef.namespace"},
		{Name: "name", Type: "VARCHAR", Doc: "objectRef.name; NULL for list/watch of a collection"},
		{Name: "watch", Type: "BOOLEAN", Doc: "verb is watch, or the query has watch=true/1"},
		{Name: "has_body", Type: "BOOLEAN", Doc: "true when request_object or response_object is set: what a filter on the body columns would say, without reading them (a scan reads a column's values for every 2,048 rows in which one row passes)",
			Backfill: "request_object IS NOT NULL OR response_object IS NOT NULL"},
		{Name: "level", Type: "VARCHAR", Compression: vocabulary, Doc: "audit level the policy chose: Metadata, Request or RequestResponse"},
		{Name: "stage_at", Type: "TIMESTAMPTZ", Doc: "stageTimestamp: when this stage was logged (v1beta1 without it: timestamp)"},
		{Name: "received_at", Type: "TIMESTAMPTZ", Doc: "requestReceivedTimestamp (v1beta1 without it: timestamp)"},
		{Name: "latency_ms", Type: "DOUBLE", Doc: "stage_at - received_at in milliseconds (a watch's lifetime on ResponseComplete); computed when read, not stored",
			Generated: latencyMS},
		{Name: "response_rv", Type: "BIGINT", Doc: "a write's (create, update, patch, delete, deletecollection) responseObject.metadata.resourceVersion as a number: the store's revision after the write; NULL for other verbs, a Status, a body without a numeric one, or no body",
			Backfill: ResponseRV("verb", "response_object")},
		{Name: "username", Type: "VARCHAR", Compression: vocabulary, Doc: "authenticated user, e.g. system:serviceaccount:kube-system:endpoint-controller"},
		{Name: "user_agent", Type: "VARCHAR", Compression: vocabulary, Doc: "client's User-Agent, e.g. kube-proxy/v1.30.0 (linux/amd64)"},
		{Name: "source_ips", Type: "VARCHAR[]", Doc: "client addresses, nearest first (X-Forwarded-For chain then the peer)"},
		{Name: "resource_version", Type: "VARCHAR", Doc: "resourceVersion query parameter as sent (\"0\", \"\" or a number)"},
		{Name: "watch_rv", Type: "BIGINT", Doc: "resourceVersion query parameter as a number (watches and lists); NULL when absent or not a base-10 integer; computed when read, not stored",
			Generated: watchRV},
		{Name: "resource_version_match", Type: "VARCHAR", Compression: vocabulary, Doc: "resourceVersionMatch query parameter: NotOlderThan or Exact"},
		{Name: "timeout_seconds", Type: "INTEGER", Doc: "timeoutSeconds query parameter (a watch's requested lifetime)"},
		{Name: "label_selector", Type: "VARCHAR", Compression: vocabulary, Doc: "labelSelector query parameter, URL-decoded"},
		{Name: "field_selector", Type: "VARCHAR", Compression: vocabulary, Doc: "fieldSelector query parameter, URL-decoded"},
		{Name: "send_initial_events", Type: "BOOLEAN", Doc: "sendInitialEvents query parameter (streaming lists)"},
		{Name: "list_continue", Type: "BOOLEAN", Doc: "true when the request carried a continue token (a later page of a list)"},
		{Name: "status_reason", Type: "VARCHAR", Compression: vocabulary, Doc: "responseStatus.reason, e.g. Expired, NotFound, Conflict"},
		{Name: "object_rv", Type: "VARCHAR", Doc: "objectRef.resourceVersion as logged"},
		{Name: "envelope", Type: "VARCHAR", Compression: vocabulary, Doc: "how the event was packed: " + envelopeNames() + "; gke-logentry events have no request URI, so no query parameters (watch_rv, resource_version, timeout_seconds, …)"},
		{Name: "source_file", Type: "VARCHAR", Compression: vocabulary, Doc: "file the event was read from (- for stdin)"},
		{Name: "source_line", Type: "BIGINT", Doc: "1-based line of the event in source_file (the line of the EventList for webhook batches)"},
		{Name: "body_fields", Type: "VARCHAR[]", Doc: "what the rules read of a write's body, taken once at ingest so that they need not read the bodies again: for a create, update or patch of an Endpoints, ConfigMap or Lease (not a node heartbeat in kube-node-lease) and a create or delete of an Endpoints or EndpointSlice, without subresource, and a create, delete, get, update or patch of a Service or its status, on its ResponseComplete stage, 13 values as json_extract_string reads them (NULL where absent): of the responseObject, else the requestObject, [1] metadata.name, [2] the control-plane.alpha.kubernetes.io/leader annotation, [3] metadata.uid, [4] spec.holderIdentity, [5] spec.leaseTransitions, [6] the apiserver.kubernetes.io/identity label, [7] endpoints (JSON); of the responseObject [8] metadata.name, [9] details.name, [10] metadata.uid, [11] details.uid, [12] the kubernetes.io/service-name label; of the requestObject [13] that label. NULL for every other event and for a write without a body",
			Backfill: BodyFields("resource", "subresource", "namespace", "verb", "stage", "response_object", "request_object")},
		{Name: "audit_id", Type: "VARCHAR", Doc: "auditID: unique per request; all stages of one request share it"},
		{Name: "groups", Type: "VARCHAR[]", Doc: "authenticated user's groups"},
		{Name: "user_uid", Type: "VARCHAR", Doc: "authenticated user's UID"},
		{Name: "impersonated_user", Type: "VARCHAR", Doc: "impersonatedUser.username when the request impersonated someone"},
		{Name: "object_uid", Type: "VARCHAR", Doc: "objectRef.uid"},
		{Name: "status_message", Type: "VARCHAR", Doc: "responseStatus.message"},
		{Name: "allow_watch_bookmarks", Type: "BOOLEAN", Doc: "allowWatchBookmarks query parameter"},
		{Name: "list_limit", Type: "BIGINT", Doc: "limit query parameter (list page size)"},
		{Name: "annotations", Type: "MAP(VARCHAR, VARCHAR)", Doc: "event annotations, e.g. authorization.k8s.io/decision"},
		{Name: "redacted", Type: "BOOLEAN", Doc: "true when kubesift dropped this event's bodies at ingest (Secrets, TokenReviews, token requests: by the objectRef's resource in any case, or by a body that is itself a Secret, a SecretList or a list with a Secret item)"},
		{Name: "audit_api_version", Type: "VARCHAR", Compression: vocabulary, Doc: "the event's own apiVersion (its EventList's for webhook items without one): audit.k8s.io/v1 or audit.k8s.io/v1beta1"},
		{Name: "source_offset", Type: "BIGINT", Doc: "byte offset of that line in the (decompressed) file"},
		{Name: "load_id", Type: "BIGINT", Doc: "ingest_files.load_id of the load that added this row"},
		{Name: "load_problem", Type: "VARCHAR", Doc: "loading bookkeeping: always NULL in committed data"},
		{Name: "request_uri", Type: "VARCHAR", Doc: "request path and query exactly as sent by the client"},
		{Name: "request_object", Type: "JSON", Compression: store.Documents, Doc: "requestObject body (Request and RequestResponse levels), NULL when redacted"},
		{Name: "response_object", Type: "JSON", Compression: store.Documents, Doc: "responseObject body (RequestResponse level), NULL when redacted"},
	},
	// One bookkeeping column instead of two, and latency_ms and watch_rv computed: each stored
	// column of audit_events costs DuckDB's batch insert a 4 MiB reservation per thread, out of a
	// quarter of the memory limit, and at 51 columns the default --memory-limit 850MB loaded on one
	// thread (a third slower).
	Obsolete: []string{"load_reject", "load_warning"},
}

// auditServicesTable holds audit_events' requests of Services. What the rules need of a Service is
// its whole history (whether it existed when its Endpoints were deleted, and whether the audit log
// names it at all), however short the window analysed; read from audit_events, that history cost a
// scan of the filter columns of every event, so that all rules over a 15-minute window after 10M
// events took 2.8x the time of the same window alone, 1.5x with this table (BENCHMARKS.md).
var auditServicesTable = store.Table{
	Name:       "audit_services",
	Evidence:   "audit",
	TimeColumn: "stage_at",
	Doc: "One row per audit_events row of a Service (objectRef resource services, any group, subresource, verb, stage or code): the columns the rules read of a Service's history, " +
		"derived from audit_events once an ingest has loaded its files (and, when the database is next opened, from the events of an ingest that stopped before, of a database made before this table, or of loads by an older kubesift), so that a short window does not scan every event for it.",
	Columns: []store.Column{
		{Name: "cluster", Type: "VARCHAR", Compression: vocabulary, Doc: "audit_events.cluster"},
		{Name: "namespace", Type: "VARCHAR", Compression: vocabulary, Doc: "audit_events.namespace"},
		{Name: "name", Type: "VARCHAR", Doc: "audit_events.name: the Service; NULL for a list or watch"},
		{Name: "verb", Type: "VARCHAR", Compression: vocabulary, Doc: "audit_events.verb"},
		{Name: "code", Type: "INTEGER", Doc: "audit_events.code"},
		{Name: "stage", Type: "VARCHAR", Compression: vocabulary, Doc: "audit_events.stage"},
		{Name: "api_group", Type: "VARCHAR", Compression: vocabulary, Doc: "audit_events.api_group"},
		{Name: "subresource", Type: "VARCHAR", Compression: vocabulary, Doc: "audit_events.subresource"},
		{Name: "received_at", Type: "TIMESTAMPTZ", Doc: "audit_events.received_at"},
		{Name: "stage_at", Type: "TIMESTAMPTZ", Doc: "audit_events.stage_at"},
		{Name: "uid", Type: "VARCHAR", Doc: "the Service's uid the response names (body_fields: metadata.uid, else a Status's details.uid); NULL without a body"},
		{Name: "audit_id", Type: "VARCHAR", Doc: "audit_events.audit_id"},
		{Name: "load_id", Type: "BIGINT", Doc: "audit_events.load_id"},
	},
	Derive: `SELECT cluster, namespace, name, verb, code, stage, api_group, subresource, received_at, stage_at,
        coalesce(body_fields[10], body_fields[11]) AS uid, audit_id, load_id
    FROM audit_events WHERE resource = 'services'`,
}

// latencyMS is latency_ms: epoch arithmetic wherever it cannot overflow (2^62 µs is about 146,000
// years), date_diff (which goes through ICU's calendar) only beyond.
const latencyMS = `CASE WHEN abs(epoch_us(received_at)) < 4611686018427387904 AND abs(epoch_us(stage_at)) < 4611686018427387904
        THEN epoch_us(stage_at) - epoch_us(received_at)
        ELSE date_diff('microsecond', received_at, stage_at) END / 1000.0`

// watchRV is watch_rv: resource_version when it is a base-10 integer (an optional sign and digits,
// as Go's strconv.ParseInt reads it), not whatever DuckDB's cast makes a number of (" 5", "5.0",
// "1e3", "0x10"). Computed when read, so that audit_events stores body_fields without a 51st
// column (docs/development.md).
const watchRV = `CASE WHEN regexp_full_match(resource_version, '[+-]?[0-9]+') THEN TRY_CAST(resource_version AS BIGINT) END`

// ResponseRV is the SQL of response_rv for an event whose verb and responseObject (JSON text)
// are the expressions verb and body: an older database's rows, and a dataset's older files, get
// it from their response_object; a load takes the same value from Go (responseRVText). The rules
// that follow resourceVersions read it instead of parsing every write's body again. The verbs are
// a list, not an IN: DuckDB makes an IN of five constants a join, which held 270 MiB more in a load.
func ResponseRV(verb, body string) string {
	return fmt.Sprintf(`CASE WHEN list_contains(['create', 'update', 'patch', 'delete', 'deletecollection'], %[1]s)
            AND json_extract_string(%[2]s, ['$.kind', '$.metadata.resourceVersion'])[1] IS DISTINCT FROM 'Status'
        THEN TRY_CAST(json_extract_string(%[2]s, ['$.kind', '$.metadata.resourceVersion'])[2] AS BIGINT) END`, verb, body)
}

// BodyFields is the SQL of body_fields for an event whose objectRef resource, subresource and
// namespace, verb, stage, responseObject and requestObject (JSON) are the given expressions: a
// load computes it in load.sql, an older database's rows and a dataset's older files from their
// columns. election-lock-churn's stage of every lock-capable write and endpoints-phantom-recreate's
// scans of Endpoints deletes and creates and of Service requests read the bodies of nearly every
// vector of the table for the events among them (982 MB of lock bodies in 10M events of the real
// recordings); these values are all they took of them.
func BodyFields(resource, subresource, namespace, verb, stage, response, request string) string {
	return fmt.Sprintf(`CASE WHEN %[5]s = 'ResponseComplete' AND coalesce(%[6]s, %[7]s) IS NOT NULL
            AND ((coalesce(%[2]s, '') = ''
                  AND ((list_contains(['endpoints', 'configmaps', 'leases'], %[1]s) AND list_contains(['create', 'update', 'patch'], %[4]s)
                        AND NOT (%[1]s = 'leases' AND coalesce(%[3]s, '') = 'kube-node-lease'))
                    OR (list_contains(['endpoints', 'endpointslices'], %[1]s) AND list_contains(['create', 'delete'], %[4]s))))
              OR (%[1]s = 'services' AND list_contains(['', 'status'], coalesce(%[2]s, ''))
                  AND list_contains(['create', 'delete', 'get', 'update', 'patch'], %[4]s)))
        THEN list_concat(
            json_extract_string(coalesce(%[6]s, %[7]s), ['$.metadata.name', '$.metadata.annotations."control-plane.alpha.kubernetes.io/leader"',
                '$.metadata.uid', '$.spec.holderIdentity', '$.spec.leaseTransitions', '$.metadata.labels."apiserver.kubernetes.io/identity"']),
            [CAST(json_extract(coalesce(%[6]s, %[7]s), '$.endpoints') AS VARCHAR)],
            coalesce(json_extract_string(%[6]s, ['$.metadata.name', '$.details.name', '$.metadata.uid', '$.details.uid',
                '$.metadata.labels."kubernetes.io/service-name"']), [NULL, NULL, NULL, NULL, NULL]::VARCHAR[]),
            [json_extract_string(%[7]s, '$.metadata.labels."kubernetes.io/service-name"')]) END`,
		resource, subresource, namespace, verb, stage, response, request)
}
