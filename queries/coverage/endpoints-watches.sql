-- coverage of endpoints-watches: per cluster with Endpoints leader-election locks that election-lock-churn reports
-- (at least $min_updates_count updates within the window: leader annotations in audit write bodies, written at
-- $min_updates_per_min or faster, or else renewTime values in snapshots), whether any watch of kube-proxy's is in the
-- audit log. kube-proxy and every CNI agent watch
-- endpoints (or endpointslices); none of kube-proxy's logged usually means the policy excludes it (a `level: None`
-- rule for system:kube-proxy, as in the upstream examples), so the fan-out of those locks' writes is undercounted, or
-- unknown when no endpoints watch is logged at all. Without such locks there is no fan-out to count: evaluated.
WITH observed AS (
    SELECT coalesce(cluster, '') AS cluster, namespace, name,
           count(*) FILTER (WHERE source = 'audit') AS audit_writes,
           epoch(max(captured_at) FILTER (WHERE source = 'audit') - min(captured_at) FILTER (WHERE source = 'audit')) AS audit_span_s,
           count(DISTINCT renew_time) FILTER (WHERE source = 'snapshot') AS snapshot_renewals
    FROM leader_locks
    WHERE kind = 'Endpoints' AND lock_type = 'annotation'
      AND captured_at >= ks_window_start($since) AND captured_at <= ks_window_end($until)
    GROUP BY ALL
),
-- as the rule does: the audit writes of a lock when there are any, else its snapshots
locks AS (
    SELECT cluster, namespace, name, CASE WHEN audit_writes > 0 THEN audit_writes ELSE snapshot_renewals END AS writes
    FROM observed
    WHERE CASE WHEN audit_writes > 0
               THEN ks_lock_written_often(audit_writes, audit_span_s, $min_updates_count, $min_updates_per_min)
               ELSE snapshot_renewals >= CAST($min_updates_count AS BIGINT) END
),
lock_writes AS (
    SELECT cluster, sum(writes) AS writes FROM locks GROUP BY ALL
),
-- the watches of the clusters with such locks only: with none, the scan of audit_events is skipped (the join's build
-- side is empty; 0.4 s at 10M events)
watches AS (
    SELECT coalesce(a.cluster, '') AS cluster,
           count(*) FILTER (WHERE a.user_agent LIKE 'kube-proxy/%' OR a.username = 'system:kube-proxy'
                                  OR a.username = 'system:serviceaccount:kube-system:kube-proxy') AS kube_proxy,
           count(*) AS n
    FROM audit_events a
    SEMI JOIN lock_writes l ON l.cluster = coalesce(a.cluster, '')
    -- coalesce(…) IN: a filter the scan evaluates, not a zone-map hint (macros.sql, above ks_advancing_write)
    WHERE a.watch AND coalesce(a.resource, '') IN ('endpoints', 'endpointslices')
      AND a.stage_at >= ks_window_start($since) AND a.received_at <= ks_window_end($until)
    GROUP BY ALL
)
SELECT l.cluster, 'partial' AS coverage,
       CASE WHEN coalesce(x.n, 0) = 0 THEN 'no endpoints watches logged (policy?): ' ELSE 'no kube-proxy watches logged: ' END
           || format('fan-out of {:,} lock writes ', l.writes)
           || CASE WHEN coalesce(x.n, 0) = 0 THEN 'unknown' ELSE 'undercounted' END AS reason
FROM lock_writes l LEFT JOIN watches x USING (cluster)
WHERE coalesce(x.kube_proxy, 0) = 0
