-- watch-rewind, stage stage_rewind_epochs: where each cluster's server epochs start. A new cluster (or an etcd restore)
-- starts its resourceVersions over; a client "going back" across such a reset is not rewinding, so streams never span
-- two epochs. An epoch starts where the resourceVersion a write returned (response_rv, which ingest took from the
-- response body: the store's revision after the write) falls below half of the one before; each start carries the
-- number of epochs started up to then (t_ms: its time in whole milliseconds). Writes logged in the same microsecond are
-- taken in the order of their revisions, so that no epoch starts between two of them. Events are left out: they may
-- live in another etcd. Selected once, from the start of the lookback to the end of the window: every piece of the rule
-- needs all of a cluster's starts, and the window over every write that finds them would otherwise run again in each
-- piece (and hold its memory there).
WITH server_revisions AS (
    SELECT w.cluster, w.t, w.rv, lag(w.rv IGNORE NULLS) OVER (PARTITION BY w.cluster ORDER BY w.t, w.rv) AS prev_rv
    FROM (SELECT coalesce(a.cluster, '') AS cluster, a.stage_at AS t, a.response_rv AS rv
          FROM audit_events a
          WHERE ks_advancing_write(a.stage, a.verb, a.code, a.resource, a.subresource)
            AND a.resource <> 'events'
            AND a.response_rv IS NOT NULL
            AND a.stage_at >= ks_lookback_start($lookback_since, $since) AND a.stage_at <= ks_window_end($until)) w
)
SELECT r.cluster, r.t, epoch_ms(r.t) AS t_ms,
       CAST(sum(count(*)) OVER (PARTITION BY r.cluster ORDER BY r.t) AS BIGINT) AS epoch
FROM server_revisions r
WHERE CAST(r.rv AS HUGEINT) * 2 < r.prev_rv -- exact for any 64-bit resourceVersion a body logged
GROUP BY r.cluster, r.t
