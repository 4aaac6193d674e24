-- election-lock-churn, stage stage_watch_keys: what each watch request of stage_watch_reqs covers, as equality keys:
-- its namespace ('' = all namespaces) and each name its field selector names (metadata.name=X; '' = all names), so
-- that locks meet their watchers in a hash join.
-- prev_ended_at: the latest end of the watcher's earlier requests under the same key (NULL for its first one).
-- single_key: the watcher's requests of this resource never meet a lock under two keys (no field selector, and not
-- both cluster-wide and namespaced watches), so that its first request open while a lock was written is the one
-- whose earlier requests had all ended before the lock's first write (see lock_watchers in the rule's query)
SELECT k.*,
       max(k.ended_at) OVER (PARTITION BY k.cluster, k.resource, k.watcher_id, k.ns_key, k.name_key ORDER BY k.req_id
                             ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING) AS prev_ended_at,
       bool_and(k.name_key = '') OVER (PARTITION BY k.cluster, k.resource, k.watcher_id)
         AND (bool_and(k.ns_key = '') OVER (PARTITION BY k.cluster, k.resource, k.watcher_id)
              OR bool_and(k.ns_key <> '') OVER (PARTITION BY k.cluster, k.resource, k.watcher_id)) AS single_key
FROM (SELECT w.req_id, w.watcher_id, w.cluster, w.resource, w.started_at, w.ended_at, w.user_agent,
             coalesce(w.namespace, '') AS ns_key, sel.name_key
      FROM stage_watch_reqs w,
           unnest(CASE WHEN coalesce(w.field_selector, '') LIKE '%metadata.name=%'
                       THEN list_distinct(regexp_extract_all(w.field_selector, 'metadata\.name=([^,]*)', 1))
                       ELSE [''] END) AS sel(name_key)) k
