-- namespace-writers: each user's successful writes of the objects of each namespace, in pieces ($piece of $pieces):
-- each piece reads the namespaces that hash to it (ks_in_piece)
SELECT 'namespace-writers' AS rule, 'info' AS severity, coalesce(cluster, '') AS cluster, namespace,
       NULL::VARCHAR AS name, username AS subject, min(stage_at) AS first_seen, max(stage_at) AS last_seen,
       count(*) AS count, struct_pack(writes := count(*)) AS facts,
       to_json(list(struct_pack(type := 'write', audit_id := audit_id, verb := verb, resource := resource)
                    ORDER BY stage_at, audit_id)[1:5]) AS evidence
FROM audit_events
WHERE verb IN ('create', 'update', 'patch', 'delete') AND stage = 'ResponseComplete' AND code BETWEEN 200 AND 299
  AND namespace IS NOT NULL AND username IS NOT NULL
  AND stage_at >= ks_window_start($since) AND stage_at <= ks_window_end($until)
  AND ks_in_piece(cluster, namespace, $piece, $pieces)
GROUP BY ALL
ORDER BY first_seen, cluster, namespace, subject
