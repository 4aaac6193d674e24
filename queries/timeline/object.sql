-- timeline/object: what is known about one object ($resource: endpoints, endpointslices, services, pods,
-- configmaps, leases; $ns, $name; of $cluster), one row per observation in time order within $since..$until: audit
-- events on it (with the endpoint addresses their bodies held), snapshots of it, and, for a Service, the
-- address changes of its Endpoints and EndpointSlices. The addresses come from ks_endpoint_observations(),
-- the observations endpoint-flapping reads.
WITH obs AS (
    SELECT source, stream, kind, name AS object, captured_at, source_file, source_line, object_seq, event,
           bool_or(deleted) AS deleted,
           coalesce(list_sort(list(ip) FILTER (WHERE ip IS NOT NULL AND ready)), []) AS ready,
           coalesce(list_sort(list(ip) FILTER (WHERE ip IS NOT NULL AND NOT ready)), []) AS not_ready
    FROM ks_endpoint_observations()
    WHERE cluster = $cluster AND namespace = $ns AND (($resource IN ('endpoints', 'endpointslices') AND name = $name) OR ($resource = 'services' AND svc = $name))
    GROUP BY ALL
),
states AS (
    SELECT *, lag(ready) OVER w AS prev_ready, lag(not_ready) OVER w AS prev_not_ready
    FROM obs
    WINDOW w AS (PARTITION BY stream, kind, object ORDER BY captured_at, object_seq, source_line)
),
described AS (
    SELECT *,
        CASE WHEN deleted THEN 'deleted'
             ELSE 'ready [' || array_to_string(ready, ', ') || '] not ready [' || array_to_string(not_ready, ', ') || ']' ||
                  CASE WHEN prev_ready IS NULL THEN ''
                       WHEN ready = prev_ready AND not_ready = prev_not_ready THEN ' (no change)'
                       ELSE ' (' || concat_ws('; ',
                            CASE WHEN len(list_filter(ready, x -> NOT list_contains(prev_ready, x))) > 0
                                 THEN 'now ready ' || array_to_string(list_filter(ready, x -> NOT list_contains(prev_ready, x)), ', ') END,
                            CASE WHEN len(list_filter(prev_ready, x -> NOT list_contains(ready, x))) > 0
                                 THEN 'no longer ready ' || array_to_string(list_filter(prev_ready, x -> NOT list_contains(ready, x)), ', ') END) || ')'
                  END
        END AS addresses
    FROM states
),
timeline AS (
    SELECT a.stage_at AS "at", 'audit' AS source, a.resource || '/' || a.name AS object,
           a.verb || ' ' || coalesce(a.code::VARCHAR, '') || coalesce(' ' || a.status_reason, '') AS what,
           coalesce(d.addresses, '') AS detail,
           a.source_file || ':' || a.source_line AS evidence,
           trim(coalesce(a.username, '') || ' ' || coalesce(a.user_agent, '')) AS who
    FROM audit_events a
    LEFT JOIN described d ON d.source = 'audit' AND d.source_file = a.source_file AND d.source_line = a.source_line
    WHERE a.stage = 'ResponseComplete' AND coalesce(a.cluster, '') = $cluster AND a.namespace = $ns AND a.name = $name AND a.resource = $resource
    UNION ALL
    SELECT d.captured_at, d.source, lower(d.kind) || '/' || d.object, coalesce(d.event, 'observed'), d.addresses,
           d.source_file || ':' || d.source_line, ''
    FROM described d
    WHERE d.source = 'snapshot' OR d.kind <> CASE $resource WHEN 'endpointslices' THEN 'EndpointSlice' ELSE 'Endpoints' END
       OR ($resource = 'services')
    UNION ALL
    SELECT captured_at, source, 'service/' || name, coalesce(event, 'observed'),
           'type ' || coalesce(type, '') || ', clusterIP ' || coalesce(cluster_ip, '') || ', ports ' || coalesce(ports, ''),
           source_file || ':' || source_line, ''
    FROM services WHERE $resource = 'services' AND coalesce(cluster, '') = $cluster AND namespace = $ns AND name = $name
    UNION ALL
    SELECT captured_at, source, 'pod/' || name, coalesce(event, 'observed'),
           'phase ' || coalesce(phase, '') || ', ready ' || coalesce(ready::VARCHAR, '?') || ', ip ' || coalesce(pod_ip, '') || ', node ' || coalesce(node, ''),
           source_file || ':' || source_line, ''
    FROM pods WHERE $resource = 'pods' AND coalesce(cluster, '') = $cluster AND namespace = $ns AND name = $name
)
SELECT * FROM timeline
WHERE "at" >= ks_window_start($since) AND "at" <= ks_window_end($until)
ORDER BY "at", source, object
