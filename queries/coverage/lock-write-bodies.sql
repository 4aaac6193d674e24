-- coverage of lock-write-bodies: per cluster, the successful Endpoints/ConfigMap writes (create, update, patch) in
-- the window whose audit event carries no body, so that the leader-election annotation cannot be read, when no
-- snapshot of that cluster showed an annotation lock either. The writes of the endpoints controllers (the rule's
-- $endpoints_controller_usernames) are left out: they write Services' Endpoints, never locks. Blind when no such
-- write has a body, partial when some have.
WITH writes AS (
    SELECT * FROM ks_bare_writes(['endpoints', 'configmaps'], ks_usernames($endpoints_controller_usernames), $since, $until)
)
SELECT w.cluster,
       CASE WHEN w.bare = w.writes THEN 'blind' ELSE 'partial' END AS coverage,
       CASE WHEN w.bare = w.writes THEN format('{:,}', w.bare) ELSE format('{:,} of {:,}', w.bare, w.writes) END
           || ' Endpoints/ConfigMap writes in the audit log carry no bodies (level ' || coalesce(w.bare_level, 'unknown')
           || '): the leader-election annotation of a lock cannot be read' AS reason
FROM writes w
WHERE w.bare > 0
  AND NOT EXISTS (SELECT 1 FROM leader_locks l
                  WHERE coalesce(l.cluster, '') = w.cluster AND l.source = 'snapshot' AND l.lock_type = 'annotation'
                    AND l.captured_at >= ks_window_start($since) AND l.captured_at <= ks_window_end($until))
