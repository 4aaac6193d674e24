-- election-lock-churn, stage stage_lock_writes: the successful writes of the lock-capable resources (Endpoints,
-- ConfigMaps, Leases), one row per request, from the start of the lookback up to the end of the window (the previous
-- state of an object is needed at the start of the window; in_win marks the writes inside it; a lock whose last write
-- before the window is older than the lookback starts with an acquisition), with what their body says: the bodies
-- themselves are not kept (the rule's window functions would hold every body in memory at once). Selected once, so
-- that each piece of the rule reads its share of these rows instead of scanning every audit event again; the name of
-- a create without one in its objectRef is in its body. Sorted by cluster and namespace (ns_key: '' for
-- cluster-scoped objects), so that a piece, which joins only its own namespaces, skips the others' row groups.
SELECT b.* EXCLUDE (body, ref_name),
       (b.body IS NOT NULL) AS has_body,
       coalesce(b.ref_name, b.body->'metadata'->>'name') AS name,
       b.body->'metadata'->'annotations'->>'control-plane.alpha.kubernetes.io/leader' AS rec,
       b.body->'metadata'->>'uid' AS uid,
       b.body->'spec'->>'holderIdentity' AS lease_holder,
       TRY_CAST(b.body->'spec'->>'leaseTransitions' AS BIGINT) AS lease_transitions,
       json_extract_string(b.body, '$.metadata.labels."apiserver.kubernetes.io/identity"') IS NOT NULL AS identity_lease
FROM (SELECT coalesce(a.cluster, '') AS cluster, coalesce(a.namespace, '') AS ns_key, a.audit_id, a.verb, a.resource,
             a.namespace, a.name AS ref_name,
             a.username, coalesce(a.user_agent, '') AS user_agent,
             a.stage_at AS ts, a.source_file, a.source_line,
             coalesce(a.response_object, a.request_object) AS body,
             (a.stage_at >= ks_window_start($since)) AS in_win
      FROM audit_events a
      WHERE a.stage_at >= ks_lookback_start($lookback_since, $since) AND a.stage_at <= ks_window_end($until)
        AND a.resource IN ('endpoints', 'configmaps', 'leases')
        AND coalesce(a.api_group, '') IN ('', 'coordination.k8s.io')
        AND coalesce(a.subresource, '') = ''
        AND a.verb IN ('create', 'update', 'patch')
        AND a.stage = 'ResponseComplete'
        AND a.code BETWEEN 200 AND 299
        -- node heartbeats are no election (the rule leaves kube-node-lease out), and a real cluster's bulk of Leases
        AND NOT (a.resource = 'leases' AND coalesce(a.namespace, '') = 'kube-node-lease')) b
ORDER BY b.cluster, b.ns_key
