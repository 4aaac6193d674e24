-- election-lock-churn, stage stage_lock_namespaces: the rows of each namespace ('' for cluster-scoped objects) that the
-- pieces share out: its lock-capable writes (stage_lock_writes, staged before) and snapshots, from the start of the
-- lookback to the end of the window. Counted once for all the pieces, each of which maps them to its range of pieces
-- (ns_pieces in the rule's query), instead of counting every staged write again.
SELECT cluster, namespace, CAST(sum(n) AS BIGINT) AS n
FROM (SELECT w.cluster, w.ns_key AS namespace, count(*) AS n
      FROM stage_lock_writes w
      GROUP BY ALL
      UNION ALL
      SELECT coalesce(l.cluster, ''), coalesce(l.namespace, ''), count(*)
      FROM leader_locks l
      WHERE l.source = 'snapshot'
        AND l.captured_at >= ks_lookback_start($lookback_since, $since) AND l.captured_at <= ks_window_end($until)
      GROUP BY ALL)
GROUP BY ALL
