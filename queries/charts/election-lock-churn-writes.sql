-- Every successful write of a finding's lock (an Endpoints or ConfigMap leader annotation, or a Lease)
-- in the audit log around the finding's span: the holder its record named, and whether the write
-- renewed, took (acquire) or released the lock; 'write' when the audit level logged no body.
WITH writes AS (
    SELECT stage_at, source_line,
           CASE WHEN resource = 'leases'
                THEN coalesce(response_object, request_object)->'spec'
                ELSE TRY_CAST(coalesce(response_object, request_object)->'metadata'->'annotations'->>'control-plane.alpha.kubernetes.io/leader' AS JSON)
           END AS rec
    FROM audit_events
    WHERE stage = 'ResponseComplete' AND code BETWEEN 200 AND 299 AND coalesce(verb, '') IN ('create', 'update', 'patch')
      AND coalesce(resource, '') IN ('endpoints', 'configmaps', 'leases') AND coalesce(subresource, '') = ''
      AND coalesce(cluster, '') = $cluster
      AND namespace = $namespace AND coalesce(name, coalesce(response_object, request_object)->'metadata'->>'name') = $name
),
records AS (
    SELECT stage_at, source_line, rec IS NOT NULL AS logged,
           nullif(rec->>'holderIdentity', '') AS holder,
           lag(nullif(rec->>'holderIdentity', '')) OVER (ORDER BY stage_at, source_line) AS prev_holder,
           lag(rec) OVER (ORDER BY stage_at, source_line) AS prev_rec
    FROM writes
)
SELECT stage_at AS "at",
       CASE WHEN NOT logged THEN '(not logged)' ELSE coalesce(holder, '(released)') END AS holder,
       CASE WHEN NOT logged THEN 'write'
            WHEN holder IS NULL THEN 'release'
            WHEN prev_rec IS NULL OR holder IS DISTINCT FROM prev_holder THEN 'acquire'
            ELSE 'renew' END AS action
FROM records
WHERE stage_at BETWEEN $first_seen - INTERVAL 1 MINUTE AND $last_seen + INTERVAL 1 MINUTE
ORDER BY stage_at, source_line
