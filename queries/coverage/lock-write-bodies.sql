-- coverage of lock-write-bodies: per cluster, the successful Endpoints/ConfigMap writes (create, update, patch) in
-- the window whose audit event carries no body, so that the leader-election annotation cannot be read, when no
-- snapshot showed an annotation lock either. The endpoints controllers' writes are left out: they write Services'
-- Endpoints, never locks. Blind when no such write has a body, partial when some have.
WITH writes AS (
    SELECT coalesce(cluster, '') AS cluster,
           count(*) AS writes,
           count(*) FILTER (WHERE request_object IS NULL AND response_object IS NULL) AS bare,
           mode(level) FILTER (WHERE request_object IS NULL AND response_object IS NULL) AS bare_level
    FROM audit_events
    WHERE resource IN ('endpoints', 'configmaps') AND coalesce(api_group, '') = '' AND coalesce(subresource, '') = ''
      AND verb IN ('create', 'update', 'patch')
      AND stage = 'ResponseComplete' AND code BETWEEN 200 AND 299
      AND username NOT IN ('system:serviceaccount:kube-system:endpoint-controller',
                           'system:serviceaccount:kube-system:endpointslicemirroring-controller')
      AND stage_at >= ks_window_start($since) AND stage_at <= ks_window_end($until)
    GROUP BY ALL
)
SELECT w.cluster,
       CASE WHEN w.bare = w.writes THEN 'blind' ELSE 'partial' END AS coverage,
       CASE WHEN w.bare = w.writes THEN format('{:,}', w.bare) ELSE format('{:,} of {:,}', w.bare, w.writes) END
           || ' Endpoints/ConfigMap writes in the audit log carry no bodies (level ' || coalesce(w.bare_level, 'unknown')
           || '): the leader-election annotation of a lock cannot be read' AS reason
FROM writes w
WHERE w.bare > 0
  AND NOT EXISTS (SELECT 1 FROM leader_locks l
                  WHERE l.source = 'snapshot' AND l.lock_type = 'annotation'
                    AND l.captured_at >= ks_window_start($since) AND l.captured_at <= ks_window_end($until))
