-- At every write of a finding's Endpoints or ConfigMap lock around its span (the writes of
-- election-lock-churn-writes, its holder change or not): the watchers of that resource whose watch was
-- open at that moment (distinct user + client address, watching the lock's namespace or all namespaces,
-- all names or the lock's name), the lock writes in the minute up to it, and the fan-out rate: those
-- writes times the open watchers, in watch events per minute. A Lease finding has no such rows.
WITH writes AS (
    SELECT stage_at, source_line, resource,
           TRY_CAST(coalesce(response_object, request_object)->'metadata'->'annotations'->>'control-plane.alpha.kubernetes.io/leader' AS JSON) AS rec,
           coalesce(response_object, request_object) IS NULL AS not_logged
    FROM audit_events
    WHERE stage = 'ResponseComplete' AND code BETWEEN 200 AND 299 AND coalesce(verb, '') IN ('create', 'update', 'patch')
      AND coalesce(resource, '') IN ('endpoints', 'configmaps') AND coalesce(subresource, '') = ''
      AND coalesce(cluster, '') = $cluster
      AND namespace = $namespace AND coalesce(name, coalesce(response_object, request_object)->'metadata'->>'name') = $name
),
lock_writes AS (
    SELECT stage_at, source_line, resource,
           CASE WHEN not_logged THEN 'write'
                WHEN nullif(rec->>'holderIdentity', '') IS NULL THEN 'release'
                WHEN nullif(rec->>'holderIdentity', '') IS DISTINCT FROM
                     lag(nullif(rec->>'holderIdentity', '')) OVER (ORDER BY stage_at, source_line) THEN 'acquire'
                ELSE 'renew' END AS action,
           count(*) OVER (ORDER BY stage_at RANGE BETWEEN INTERVAL 1 MINUTE PRECEDING AND CURRENT ROW) AS writes_last_min
    FROM writes
    WHERE rec IS NOT NULL OR not_logged
),
watches AS (
    SELECT resource, any_value(username) AS username, coalesce(any_value(source_ips[1]), '') AS client_ip,
           min(received_at) AS started_at,
           coalesce(max(stage_at) FILTER (WHERE stage IN ('ResponseComplete', 'Panic')), 'infinity'::TIMESTAMPTZ) AS ended_at
    FROM audit_events
    WHERE watch AND coalesce(resource, '') IN ('endpoints', 'configmaps') AND coalesce(api_group, '') = '' AND coalesce(subresource, '') = ''
      AND coalesce(cluster, '') = $cluster AND coalesce(namespace, $namespace) = $namespace
      AND (coalesce(field_selector, '') NOT LIKE '%metadata.name=%' OR field_selector LIKE '%metadata.name=' || $name || '%')
    GROUP BY audit_id, resource
    HAVING bool_and(coalesce(code, 200) BETWEEN 200 AND 299)
)
SELECT w.stage_at AS "at", any_value(w.action) AS action, any_value(w.writes_last_min) AS lock_writes_last_min,
       count(DISTINCT (v.username, v.client_ip)) AS open_watchers,
       any_value(w.writes_last_min) * count(DISTINCT (v.username, v.client_ip)) AS fanout_last_min
FROM lock_writes w
LEFT JOIN watches v ON v.resource = w.resource AND v.started_at <= w.stage_at AND v.ended_at >= w.stage_at
WHERE w.stage_at BETWEEN $first_seen - INTERVAL 1 MINUTE AND $last_seen + INTERVAL 1 MINUTE
GROUP BY w.stage_at, w.source_line
ORDER BY w.stage_at, w.source_line
