-- Around a finding's span: the life of each Service and Endpoints object of the finding's name, one
-- lane per UID (a new UID is a new object of the same name), existing from its first write (create,
-- or the first update seen) and deleted from its delete. A delete names its UID in the deleted object
-- (Services) or the Status details (Endpoints); else it is the UID last written before it. A delete
-- answered 404 Not Found says the object was already gone (removed by a write the log does not hold).
WITH writes AS (
    SELECT stage_at, source_line, resource, verb, code,
           coalesce(response_object->'metadata'->>'uid', response_object->'details'->>'uid',
                    request_object->'preconditions'->>'uid',
                    CASE WHEN verb <> 'delete' THEN request_object->'metadata'->>'uid' END) AS uid
    FROM audit_events
    WHERE stage = 'ResponseComplete' AND coalesce(verb, '') IN ('create', 'update', 'patch', 'delete')
      AND (code BETWEEN 200 AND 299 OR (verb = 'delete' AND code = 404))
      AND coalesce(resource, '') IN ('services', 'endpoints') AND coalesce(subresource, '') = ''
      AND coalesce(cluster, '') = $cluster AND namespace = $namespace AND name = $name
      AND stage_at BETWEEN $first_seen - INTERVAL 30 SECOND AND $last_seen + INTERVAL 30 SECOND
),
named AS (
    SELECT stage_at, source_line, resource, verb, code,
           coalesce(uid, last_value(uid IGNORE NULLS) OVER (PARTITION BY resource ORDER BY stage_at, source_line)) AS uid
    FROM writes
),
states AS (
    SELECT stage_at, source_line, resource, uid,
           CASE WHEN verb <> 'delete' THEN 'exists' WHEN code = 404 THEN 'not found' ELSE 'deleted' END AS state
    FROM named
),
changes AS (
    SELECT *, lag(state) OVER (PARTITION BY resource, uid ORDER BY stage_at, source_line) AS prev_state
    FROM states
)
SELECT stage_at AS "at",
       CASE resource WHEN 'services' THEN 'Service' ELSE 'Endpoints' END || ' uid ' || coalesce(left(uid, 8), '(not logged)') AS object,
       state
FROM changes
WHERE state IS DISTINCT FROM prev_state
ORDER BY stage_at, source_line
