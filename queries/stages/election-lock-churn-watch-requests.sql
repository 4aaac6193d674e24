-- election-lock-churn, stage stage_watch_reqs: the watch requests (one row per request) on Endpoints and ConfigMaps,
-- with their lifetime; req_id numbers them in the order they started (then by audit ID), watcher_id numbers the
-- watching clients: user + client address, so that every pod of a DaemonSet (one username and userAgent, one address
-- each) counts. Read are the requests that started by the end of the window (every event of a request carries its
-- start) and have an event from the start of the lookback on: a watch still open in the window that started before the
-- lookback is seen by its ResponseComplete event (a watch lasts at most the apiserver's request timeout, an hour by
-- default). Only watches that a candidate lock (stage_lock_candidates) can meet are read: those of its cluster and
-- resource, in its namespace or in all (a lock's keys in the rule's query); with no candidate the scan of audit_events
-- is skipped altogether (the join's build side is empty). Selected once for all the pieces of the rule: each meets the
-- watches of its locks in a hash join.
SELECT q.*,
       row_number() OVER (ORDER BY q.started_at, q.audit_id) AS req_id,
       dense_rank() OVER (ORDER BY q.username, q.client_ip) AS watcher_id
FROM (SELECT coalesce(a.cluster, '') AS cluster, a.audit_id, a.resource, a.namespace, any_value(a.username) AS username,
             coalesce(any_value(a.user_agent), '') AS user_agent,
             coalesce(any_value(a.source_ips[1]), '') AS client_ip,
             any_value(a.field_selector) AS field_selector,
             min(a.received_at) AS started_at,
             coalesce(max(a.stage_at) FILTER (WHERE a.stage IN ('ResponseComplete', 'Panic')), 'infinity'::TIMESTAMPTZ) AS ended_at,
             min(a.source_file) AS source_file, min(a.source_line) AS source_line
      FROM audit_events a
      SEMI JOIN (SELECT cluster, resource, namespace AS ns_key FROM stage_lock_candidates
                 WHERE resource IN ('endpoints', 'configmaps') AND namespace IS NOT NULL
                 UNION
                 SELECT cluster, resource, '' FROM stage_lock_candidates WHERE resource IN ('endpoints', 'configmaps')) c
        ON c.cluster = coalesce(a.cluster, '') AND c.resource = a.resource AND c.ns_key = coalesce(a.namespace, '')
      -- coalesce(…) IN: a filter the scan evaluates, not a zone-map hint (macros.sql, above ks_advancing_write)
      WHERE a.watch AND coalesce(a.resource, '') IN ('endpoints', 'configmaps')
        AND coalesce(a.api_group, '') = '' AND coalesce(a.subresource, '') = ''
        AND a.stage_at >= ks_lookback_start($lookback_since, $since) AND a.received_at <= ks_window_end($until)
      GROUP BY coalesce(a.cluster, ''), a.audit_id, a.resource, a.namespace
      HAVING bool_and(coalesce(a.code, 200) BETWEEN 200 AND 299)) q
