-- coverage of endpoints-watches: per cluster with Endpoints or ConfigMap writes in the window, whether any watch of
-- kube-proxy's are in the audit log. kube-proxy and every CNI agent watch endpoints (or endpointslices); none of
-- kube-proxy's logged usually means the policy excludes it (a `level: None` rule for system:kube-proxy, as in the
-- upstream examples), so the fan-out of a lock is undercounted, or unknown when no endpoints watch is logged at all.
WITH writes AS (
    SELECT DISTINCT coalesce(cluster, '') AS cluster
    FROM audit_events
    WHERE resource IN ('endpoints', 'configmaps') AND coalesce(api_group, '') = ''
      AND verb IN ('create', 'update', 'patch')
      AND stage_at >= ks_window_start($since) AND stage_at <= ks_window_end($until)
),
watches AS (
    SELECT coalesce(cluster, '') AS cluster,
           count(*) FILTER (WHERE user_agent LIKE 'kube-proxy/%' OR username = 'system:kube-proxy'
                                  OR username = 'system:serviceaccount:kube-system:kube-proxy') AS kube_proxy,
           count(*) AS n
    FROM audit_events
    WHERE watch AND resource IN ('endpoints', 'endpointslices')
      AND stage_at >= ks_window_start($since) AND received_at <= ks_window_end($until)
    GROUP BY ALL
)
SELECT w.cluster, 'partial' AS coverage,
       CASE WHEN coalesce(x.n, 0) = 0
            THEN 'no watches of endpoints are in the audit log (excluded by the policy?): fan-out unknown'
            ELSE 'no kube-proxy endpoints watch starts in the audit log: fan-out undercounted' END AS reason
FROM writes w LEFT JOIN watches x USING (cluster)
WHERE coalesce(x.kube_proxy, 0) = 0
