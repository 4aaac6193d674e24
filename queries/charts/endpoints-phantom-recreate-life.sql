-- Around a finding's span: the writes to its Service and Endpoints (create, update, delete) and the
-- watches and lists of Services and Endpoints by the client that deleted the Endpoints (the
-- subject's first word is its username), a 410 answer marked as such.
SELECT stage_at AS "at",
       CASE WHEN verb IN ('watch', 'list')
            THEN verb || ' ' || resource || ' by ' || regexp_replace(username, '^system:serviceaccount:', '')
            ELSE resource || '/' || name END AS lane,
       verb || CASE WHEN code >= 400 THEN ' ' || code ELSE '' END AS what
FROM audit_events
WHERE stage = 'ResponseComplete' AND coalesce(resource, '') IN ('services', 'endpoints') AND coalesce(cluster, '') = $cluster
  AND stage_at BETWEEN $first_seen - INTERVAL 30 SECOND AND $last_seen + INTERVAL 30 SECOND
  AND ((namespace = $namespace AND name = $name AND verb IN ('create', 'update', 'patch', 'delete'))
       OR (verb IN ('watch', 'list') AND coalesce(namespace, $namespace) = $namespace AND username = split_part($subject, ' ', 1)))
ORDER BY stage_at
