-- endpoint-flapping: per (Service, address), the sequence of states ready / notReady / absent across the
-- observations of the Service's Endpoints and EndpointSlices, with consecutive identical states merged.
-- Streams are counted separately and never mixed: the audit bodies, the plain snapshots (ordered by capture time),
-- and each watch stream file (kubectl get -w: several observations of one object in one file, ordered by object_seq,
-- timed by the last-change-trigger-time annotation). Per (Service, address) the stream/kind/object with the most
-- transitions is used (audit first on ties), so Endpoints + EndpointSlice + snapshots of one change count once.
-- An address's leading absence (before it first appears) is not a transition; a deleted object is "object absent"
-- (its addresses are not observed), not "address absent".
-- Fires when an address makes >= min_transitions_count transitions within window_minutes, or shows
-- remove -> add -> remove -> add (leaving and re-entering the ready set twice) within pattern_window_minutes.
-- Addresses of one Service whose flapping periods overlap form one batch = one finding.
-- The window bounds are bound into the WHERE (not a cross-joined CTE); joins match on equalities only, so that
-- they hash instead of looping.
WITH
-- snapshot files that hold several observations of one object are watch streams
watch_files AS (
    SELECT DISTINCT source, source_file
    FROM endpoint_addresses
    WHERE source = 'snapshot'
    GROUP BY source, source_file, kind, namespace, name
    HAVING count(DISTINCT coalesce(object_seq, source_line)) > 1
),
r0 AS (
    SELECT e.*,
           coalesce(e.service, e.name) AS svc,
           CASE WHEN e.source = 'audit' THEN 'audit'
                WHEN wf.source_file IS NOT NULL THEN 'watch ' || e.source_file
                ELSE 'snapshots' END AS stream,
           (wf.source_file IS NOT NULL) AS is_watch
    FROM endpoint_addresses e
    LEFT JOIN watch_files wf ON wf.source = e.source AND wf.source_file = e.source_file
),
-- one row per observation of an object
obs0 AS (
    SELECT stream, is_watch, kind, namespace, svc, name AS obj, source_file,
           coalesce(object_seq, 0) AS seq, source_line,
           any_value(captured_at) AS captured_at, any_value(change_time) AS change_time, bool_or(deleted) AS deleted
    FROM r0
    GROUP BY ALL
),
obs1 AS (
    SELECT o.*,
           -- order: capture time (plain snapshots, audit), or position in the stream (watch files)
           CASE WHEN o.is_watch THEN NULL ELSE o.captured_at END AS ord_t,
           CASE WHEN o.is_watch
                THEN max(coalesce(o.change_time, o.captured_at)) OVER (
                         PARTITION BY o.stream, o.kind, o.namespace, o.obj ORDER BY o.seq, o.source_line
                         ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW)
                ELSE o.captured_at END AS ts
    FROM obs0 o
),
obs AS (
    SELECT o.*,
           -- an observation point of the Service: one capture (all objects of a plain snapshot file at
           -- once), or one write / one watch event (audit, watch files)
           dense_rank() OVER (PARTITION BY o.stream, o.namespace, o.svc
                              ORDER BY o.ord_t NULLS FIRST, o.source_file,
                                       CASE WHEN o.stream = 'snapshots' THEN 0 ELSE o.seq END,
                                       CASE WHEN o.stream = 'snapshots' THEN 0 ELSE o.source_line END) AS pt
    FROM obs1 o
    WHERE o.ts >= ks_window_start($since) AND o.ts <= ks_window_end($until)
),
points AS (
    SELECT stream, namespace, svc, pt, min(ts) AS ts, min(ord_t) AS ord_t,
           min(source_file) AS source_file, min(seq) AS seq, min(source_line) AS source_line
    FROM obs
    GROUP BY ALL
),
-- at each point, the latest observation of every object of the Service (Endpoints and all its
-- EndpointSlices): the Service's combined state, so that an address moving between slices
-- (rebalancing) or missing from a truncated Endpoints (1,000 addresses) is no removal
latest AS (
    SELECT p.stream, p.namespace, p.svc, p.pt, o.kind, o.obj, o.source_file, o.seq, o.source_line, o.deleted
    FROM points p
    JOIN obs o ON o.stream = p.stream AND o.namespace = p.namespace AND o.svc = p.svc AND o.pt <= p.pt
    QUALIFY row_number() OVER (PARTITION BY p.stream, p.namespace, p.svc, p.pt, o.kind, o.obj
                               ORDER BY o.pt DESC, o.seq DESC, o.source_line DESC) = 1
),
-- addresses ever seen in each stream/Service (in the window)
universe AS (
    SELECT DISTINCT r.stream, r.namespace, r.svc, r.ip
    FROM r0 r
    JOIN obs o ON o.stream = r.stream AND o.kind = r.kind AND o.namespace = r.namespace AND o.obj = r.name
              AND o.source_file = r.source_file AND o.seq = coalesce(r.object_seq, 0) AND o.source_line = r.source_line
    WHERE r.ip IS NOT NULL
),
-- the combined state of each address at each point: ready in any object; else serving while
-- terminating (a pod shutting down gracefully); else present but not ready
present AS (
    SELECT l.stream, l.namespace, l.svc, l.pt, r.ip,
           bool_or(r.ready) AS ready,
           bool_or(coalesce(r.serving, false) AND coalesce(r.terminating, false)) AS terminating,
           any_value(r.pod) AS pod
    FROM latest l
    JOIN r0 r ON r.stream = l.stream AND r.kind = l.kind AND r.namespace = l.namespace AND r.name = l.obj
             AND r.source_file = l.source_file AND coalesce(r.object_seq, 0) = l.seq AND r.source_line = l.source_line
    WHERE NOT l.deleted AND r.ip IS NOT NULL
    GROUP BY ALL
),
stream_kinds AS (
    SELECT stream, namespace, svc, string_agg(DISTINCT kind, '+' ORDER BY kind) AS kind
    FROM obs
    GROUP BY ALL
),
states AS (
    SELECT u.stream, k.kind, u.namespace, u.svc, u.svc AS obj, u.ip, p.pt, p.ts, p.ord_t, p.source_file, p.seq, p.source_line,
           x.pod,
           CASE WHEN x.ip IS NULL THEN 'absent' WHEN x.ready THEN 'ready' WHEN x.terminating THEN 'terminating'
                ELSE 'notReady' END AS state
    FROM universe u
    JOIN points p ON p.stream = u.stream AND p.namespace = u.namespace AND p.svc = u.svc
    JOIN stream_kinds k ON k.stream = u.stream AND k.namespace = u.namespace AND k.svc = u.svc
    LEFT JOIN present x ON x.stream = p.stream AND x.namespace = p.namespace AND x.svc = p.svc AND x.pt = p.pt AND x.ip = u.ip
),
states_ord AS (
    SELECT s.*,
           row_number() OVER (PARTITION BY stream, kind, namespace, obj, ip ORDER BY pt) AS pos
    FROM states s
),
-- drop the leading absence (before the address first appears)
states_seen AS (
    SELECT s.* FROM (
        SELECT s.*, min(pos) FILTER (WHERE state <> 'absent') OVER (PARTITION BY stream, kind, namespace, obj, ip) AS first_pos
        FROM states_ord s) s
    WHERE pos >= first_pos
),
states_lag AS (
    SELECT s.*, lag(state) OVER (PARTITION BY stream, kind, namespace, obj, ip ORDER BY pos) AS prev_state
    FROM states_seen s
),
changes AS (
    SELECT c.*,
           CASE WHEN c.prev_state = 'ready' THEN 'remove' WHEN c.state = 'ready' THEN 'add' END AS crossing
    FROM states_lag c
    WHERE c.prev_state IS NOT NULL AND c.state <> c.prev_state
),
changes_win AS (
    SELECT c.*,
           count(*) OVER (PARTITION BY stream, kind, namespace, obj, ip ORDER BY ts
                          RANGE BETWEEN to_microseconds(CAST(CAST($window_minutes AS DOUBLE) * 60000000 AS BIGINT)) PRECEDING
                                    AND CURRENT ROW) AS in_window
    FROM changes c
),
-- remove -> add -> remove -> add: a remove whose third following ready-boundary crossing comes within M minutes
crossings AS (
    SELECT stream, kind, namespace, obj, ip, ts, crossing,
           lead(ts, 3) OVER (PARTITION BY stream, kind, namespace, obj, ip ORDER BY pos) AS ts_plus3
    FROM changes
    WHERE crossing IS NOT NULL
),
pattern AS (
    SELECT stream, kind, namespace, obj, ip, min(ts) AS pattern_at
    FROM crossings
    WHERE crossing = 'remove' AND ts_plus3 IS NOT NULL
      AND ts_plus3 - ts <= to_microseconds(CAST(CAST($pattern_window_minutes AS DOUBLE) * 60000000 AS BIGINT))
    GROUP BY ALL
),
per_key AS (
    SELECT c.stream, c.kind, c.namespace, any_value(c.svc) AS svc, c.obj, c.ip,
           count(*) AS transitions, max(c.in_window) AS max_in_window,
           count(*) FILTER (WHERE c.crossing = 'remove') AS removes,
           count(*) FILTER (WHERE c.crossing = 'add') AS adds,
           min(c.ts) AS first_ts, max(c.ts) AS last_ts
    FROM changes_win c
    GROUP BY c.stream, c.kind, c.namespace, c.obj, c.ip
),
-- one stream/kind/object per (Service, address): the most transitions; audit, then Endpoints, on ties
best AS (
    SELECT k.*, p.pattern_at,
           row_number() OVER (PARTITION BY k.namespace, k.svc, k.ip
                              ORDER BY k.transitions DESC, (k.stream = 'audit') DESC, (k.stream = 'snapshots') DESC,
                                       (k.kind = 'Endpoints') DESC, k.stream, k.obj) AS pick
    FROM per_key k
    LEFT JOIN pattern p USING (stream, kind, namespace, obj, ip)
),
flappers AS (
    SELECT b.*,
           (SELECT any_value(s.pod) FROM states s
             WHERE s.stream = b.stream AND s.kind = b.kind AND s.namespace = b.namespace AND s.obj = b.obj
               AND s.ip = b.ip AND s.pod IS NOT NULL) AS pod
    FROM best b
    WHERE b.pick = 1
      AND (b.max_in_window >= CAST($min_transitions_count AS BIGINT) OR b.pattern_at IS NOT NULL)
),
-- batches: addresses of one Service whose flapping periods [first, last transition] overlap
batched AS (
    SELECT f.*,
           sum(CASE WHEN f.prev_last IS NULL OR f.first_ts > f.prev_last THEN 1 ELSE 0 END)
               OVER (PARTITION BY f.namespace, f.svc ORDER BY f.first_ts, f.ip ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW) AS batch
    FROM (
        SELECT f.*, max(f.last_ts) OVER (PARTITION BY f.namespace, f.svc ORDER BY f.first_ts, f.ip
                                         ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING) AS prev_last
        FROM flappers f) f
),
-- addresses of the Service known to the streams used (for the share of the Service that flapped)
svc_addresses AS (
    SELECT u.namespace, u.svc, count(DISTINCT u.ip) AS addresses
    FROM universe u
    GROUP BY ALL
),
-- per-address evidence: the sequence of states (merged) of the chosen stream
seq_items AS (
    SELECT b.namespace, b.svc, b.batch, b.ip,
           list(struct_pack("at" := ks_time_ms(s.ts), state := s.state,
                            file := s.source_file, line := s.source_line) ORDER BY s.pos) AS seq
    FROM batched b
    JOIN states_lag s ON s.stream = b.stream AND s.kind = b.kind AND s.namespace = b.namespace AND s.obj = b.obj AND s.ip = b.ip
    WHERE s.prev_state IS NULL OR s.state <> s.prev_state
    GROUP BY ALL
),
batch_agg AS (
    SELECT b.namespace, b.svc, b.batch,
           count(*) AS n_addr,
           sum(b.transitions) AS transitions_total,
           min(b.transitions) AS min_tr, max(b.transitions) AS max_tr,
           min(b.removes) AS min_removes, max(b.removes) AS max_removes,
           min(b.first_ts) AS first_ts, max(b.last_ts) AS last_ts,
           bool_or(b.pattern_at IS NOT NULL) AS any_pattern,
           max(b.max_in_window) AS max_in_window,
           string_agg(DISTINCT b.stream || ' ' || b.kind, ', ' ORDER BY b.stream || ' ' || b.kind) AS streams,
           string_agg(b.ip, ', ' ORDER BY b.ip) AS ips,
           string_agg(b.pod, ', ' ORDER BY b.ip) AS pods,
           list(struct_pack(type := 'address', ip := b.ip, pod := b.pod, source := b.stream, kind := b.kind, object := b.obj,
                            transitions := b.transitions, removes := b.removes, adds := b.adds,
                            "first" := ks_time_ms(b.first_ts),
                            "last" := ks_time_ms(b.last_ts),
                            sequence := si.seq[1:40], sequence_length := len(si.seq))
                ORDER BY b.ip) AS items
    FROM batched b
    LEFT JOIN seq_items si USING (namespace, svc, batch, ip)
    GROUP BY b.namespace, b.svc, b.batch
)
SELECT 'endpoint-flapping' AS rule,
       CASE WHEN sa.addresses > 0 AND 100.0 * a.n_addr / sa.addresses >= CAST($critical_share_percent AS DOUBLE)
            THEN 'critical' ELSE 'warning' END AS severity,
       a.namespace,
       a.svc AS name,
       a.ips || coalesce(' (' || a.pods || ')', '') AS subject,
       a.first_ts AS first_seen,
       a.last_ts AS last_seen,
       CAST(a.transitions_total AS BIGINT) AS count,
       struct_pack(addresses := a.n_addr, service_addresses := sa.addresses,
                   min_transitions := a.min_tr, max_transitions := a.max_tr, transitions := CAST(a.transitions_total AS BIGINT),
                   min_removals := a.min_removes, max_removals := a.max_removes, max_in_window := a.max_in_window,
                   pattern := a.any_pattern, streams := a.streams,
                   sequences_truncated := list_bool_or([x.sequence_length > 40 FOR x IN a.items])) AS facts,
       to_json(a.items[1:50]) AS evidence
FROM batch_agg a
LEFT JOIN svc_addresses sa ON sa.namespace = a.namespace AND sa.svc = a.svc
ORDER BY first_seen, namespace, name, subject
