-- election-lock-churn, stage stage_lock_candidates: the objects of which the rule can report anything, decided once
-- over all the lock-capable writes (ks_lock_writes_all, queries/macros.sql) from the few columns the decision needs, so
-- that the pieces (which carry every column of a write through their window functions, for the evidence) follow only
-- these objects' writes (stage_lock_writes). In a cluster of many annotation objects written now and then, nearly no
-- write belongs to one: at 10M events of the independent mix, 1,837,663 writes of 75,000 objects, none of them a
-- candidate.
-- The candidates:
--   * the annotation locks (Endpoints, ConfigMaps) that the audit writes make reported: the rule's lock_writers,
--     lock_writes and reportable_locks (queries/election-lock-churn.sql), the same definitions over the same rows,
--     keeping only what they need (the record, not its holder: the holder names the action, not whether a write is a
--     lock write); the window and the join below take 1.1 s at 10M events where the rule's forms took 2.1 s;
--   * the Leases whose holder changes more than lease_max_holder_changes_count times in the window at all (the rule
--     reports those with more than that many within lease_window_minutes, a subset); the same changes as the rule's
--     lease_changes;
--   * every object of the snapshots in the lookback and the window: the rule judges an annotation lock by its
--     snapshots when it has no audit updates, and takes a Lease's snapshots only when it has no audit write with a
--     body, so those objects' writes must be there to tell.
WITH lock_writes_all AS MATERIALIZED (
    SELECT cluster, resource, namespace, name, ts, in_win, has_body, username, verb, rec, audit_id, lease_holder, uid,
           source_file, source_line, identity_lease
    FROM ks_lock_writes_all($lookback_since, $since, $until)
),
ann AS (
    SELECT w.cluster, w.resource, w.namespace, w.name, w.ts, w.in_win, w.has_body, w.username, w.verb, w.rec
    FROM lock_writes_all w
    WHERE w.resource IN ('endpoints', 'configmaps')
),
ann_locks AS (
    SELECT DISTINCT cluster, resource, namespace, name FROM ann WHERE in_win AND rec IS NOT NULL
),
-- the users that changed the record: the rule's lag of the record IGNORE NULLS over all writes is the previous one
-- among the writes with a record
lock_writers AS (
    SELECT DISTINCT cluster, resource, namespace, name, username
    FROM (SELECT w.cluster, w.resource, w.namespace, w.name, w.username, w.in_win, w.rec,
                 lag(w.rec) OVER (PARTITION BY w.cluster, w.resource, w.namespace, w.name ORDER BY w.ts, w.audit_id) AS prev_rec
          FROM lock_writes_all w
          WHERE w.resource IN ('endpoints', 'configmaps') AND w.rec IS NOT NULL)
    WHERE in_win AND rec IS DISTINCT FROM prev_rec
),
-- the rule's EXISTS over lock_writers as a join (lock_writers is distinct): the same rows at half the cost
lock_writes AS (
    SELECT a.cluster, a.resource, a.namespace, a.name, a.verb, a.ts
    FROM ann a
    JOIN ann_locks k USING (cluster, resource, namespace, name)
    LEFT JOIN lock_writers lw
      ON lw.cluster = a.cluster AND lw.resource = a.resource AND lw.namespace = a.namespace AND lw.name = a.name
     AND lw.username = a.username
    WHERE a.in_win
      AND ((a.rec IS NOT NULL AND lw.username IS NOT NULL)
       OR (NOT a.has_body AND NOT list_contains(ks_usernames($endpoints_controller_usernames), a.username)))
),
lease_changes AS (
    SELECT cluster, namespace, name
    FROM (SELECT w.cluster, w.namespace, w.name, w.in_win, w.lease_holder AS holder,
                 lag(nullif(w.lease_holder, '') IGNORE NULLS)
                     OVER (PARTITION BY w.cluster, w.namespace, w.name, w.uid ORDER BY w.ts, w.source_file, w.source_line) AS prev_holder
          FROM lock_writes_all w
          WHERE w.resource = 'leases' AND w.has_body AND NOT w.identity_lease AND ks_election_lease(w.namespace, w.name))
    WHERE in_win AND coalesce(holder, '') <> '' AND prev_holder IS NOT NULL AND holder <> prev_holder
)
SELECT cluster, resource, namespace, name
FROM lock_writes
GROUP BY ALL
HAVING ks_lock_written_often(count(*) FILTER (WHERE verb <> 'create'), epoch(max(ts) - min(ts)), $min_updates_count, $min_updates_per_min)
UNION
SELECT cluster, 'leases', namespace, name
FROM lease_changes
GROUP BY ALL
HAVING count(*) > CAST($lease_max_holder_changes_count AS BIGINT)
UNION
SELECT coalesce(l.cluster, ''),
       CASE l.kind WHEN 'Endpoints' THEN 'endpoints' WHEN 'ConfigMap' THEN 'configmaps' WHEN 'Lease' THEN 'leases' END,
       l.namespace, l.name
FROM leader_locks l
WHERE l.source = 'snapshot'
  AND l.captured_at >= ks_lookback_start($lookback_since, $since) AND l.captured_at <= ks_window_end($until)
