-- coverage of endpoints-write-bodies: per cluster, the successful Endpoints/EndpointSlice writes (create, update,
-- patch) in the window whose audit event carries no body (the policy logged them at Metadata level), when no
-- Endpoints snapshot of that cluster in the window was loaded either: their address changes are invisible. Blind
-- when no write has a body, partial when some have.
WITH writes AS (
    SELECT * FROM ks_bare_writes(['endpoints', 'endpointslices'],
                                 []::VARCHAR[], $since, $until)
)
SELECT w.cluster,
       CASE WHEN w.bare = w.writes THEN 'blind' ELSE 'partial' END AS coverage,
       CASE WHEN w.bare = w.writes THEN format('{:,}', w.bare) ELSE format('{:,} of {:,}', w.bare, w.writes) END
           || ' Endpoints/EndpointSlice writes in the audit log carry no bodies (level ' || coalesce(w.bare_level, 'unknown')
           || ') and no snapshots were loaded' AS reason
FROM writes w
WHERE w.bare > 0
  AND NOT EXISTS (SELECT 1 FROM endpoint_addresses e
                  WHERE coalesce(e.cluster, '') = w.cluster AND e.source = 'snapshot'
                    AND e.captured_at >= ks_window_start($since) AND e.captured_at <= ks_window_end($until))
