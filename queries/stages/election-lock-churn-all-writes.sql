-- election-lock-churn, stage stage_lock_writes_all (transient): the successful writes of the lock-capable resources
-- (Endpoints, ConfigMaps, Leases), one row per request, from the start of the lookback up to the end of the window (the
-- previous state of an object is needed at the start of the window; in_win marks the writes inside it; a lock whose
-- last write before the window is older than the lookback starts with an acquisition), with what their body says: the
-- bodies themselves are not kept (the rule's window functions would hold every body in memory at once), and the name
-- of a create without one in its objectRef is in its body. What the rule reads of a body was taken from it at ingest
-- (audit_events.body_fields), so that no body is read here; stage_lock_candidates
-- decides from these rows which objects the rule can report, stage_lock_writes keeps theirs for the pieces, and this
-- table is dropped before the pieces run.
SELECT b.* EXCLUDE (has_body, ref_name, v),
       b.has_body,
       coalesce(b.ref_name, b.v[1]) AS name,
       b.v[2] AS rec,
       b.v[3] AS uid,
       b.v[4] AS lease_holder,
       TRY_CAST(b.v[5] AS BIGINT) AS lease_transitions,
       b.v[6] IS NOT NULL AS identity_lease,
       ks_place_bucket(b.cluster, b.namespace, coalesce(b.ref_name, b.v[1])) AS place_bucket
FROM (SELECT coalesce(a.cluster, '') AS cluster, coalesce(a.namespace, '') AS ns_key, a.audit_id, a.verb, a.resource,
             a.namespace, a.name AS ref_name,
             a.username, coalesce(a.user_agent, '') AS user_agent,
             a.stage_at AS ts, a.source_file, a.source_line,
             a.has_body,
             -- the body's [metadata.name, leader annotation, metadata.uid, spec.holderIdentity, spec.leaseTransitions,
             -- apiserver identity label]
             a.body_fields AS v,
             (a.stage_at >= ks_window_start($since)) AS in_win
      FROM audit_events a
      WHERE a.stage_at >= ks_lookback_start($lookback_since, $since) AND a.stage_at <= ks_window_end($until)
        -- coalesce(…) IN: a filter the scan evaluates, not a zone-map hint (macros.sql, above ks_advancing_write)
        AND coalesce(a.resource, '') IN ('endpoints', 'configmaps', 'leases')
        AND coalesce(a.api_group, '') IN ('', 'coordination.k8s.io')
        AND coalesce(a.subresource, '') = ''
        AND coalesce(a.verb, '') IN ('create', 'update', 'patch')
        AND a.stage = 'ResponseComplete'
        AND a.code BETWEEN 200 AND 299
        -- node heartbeats are no election (the rule leaves kube-node-lease out), and a real cluster's bulk of Leases
        AND NOT (a.resource = 'leases' AND coalesce(a.namespace, '') = 'kube-node-lease')) b
