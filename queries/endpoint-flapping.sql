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
-- Addresses of one Service whose flapping periods overlap form one batch = one finding. Clusters never mix.
-- The window bounds are bound into the WHERE (not a cross-joined CTE); joins match on equalities only, so that
-- they hash instead of looping.
WITH
-- the state of every address of every Service at each observation point where it may change: runs of absence cut
-- to their first point (queries/macros.sql), so that the rows grow with the addresses observed, not with every address
-- ever seen × every observation of its Service
states AS (
    SELECT *, hash(cluster, stream, kind, namespace, obj, ip) AS addr_key
    FROM ks_address_states($since, $until, dense := false, piece := $piece, pieces := $pieces)
),
-- each address's states in order (pos), the first point at which it is not absent, and the state before: three window
-- functions over one sort (a point holds one state of an address: the macro's rows are unique per address and point,
-- so pt orders them as pos does). The window sorts only the address's key as one number (addr_key, states': a hash of
-- its six strings; two of a million addresses share one with a chance of about 3 in 100 million), its point and its
-- state, and the other columns are joined back below for the rows read on. Over the whole rows (the six strings, the
-- evidence's file and line, the pod) it took 6.0 s of the rule's 24.0 s at 30M events of the independent mix in
-- DuckDB's profiler (three windows of their own before that: 16.0 of 35.6 s); now 0.9-1.0 s, and the join back
-- 2.4-2.8 s (BENCHMARKS.md). It reads the three columns through a subquery: reading states itself, it sorted whole rows
-- again (4.6 s)
states_ord AS (
    SELECT addr_key, pt, state,
           row_number() OVER w AS pos,
           min(pt) FILTER (WHERE state <> 'absent') OVER (w ROWS BETWEEN UNBOUNDED PRECEDING AND UNBOUNDED FOLLOWING) AS first_pt,
           lag(state) OVER w AS state_before
    FROM (SELECT addr_key, pt, state FROM states)
    WINDOW w AS (PARTITION BY addr_key ORDER BY pt)
),
-- the rows read on, with the rest of their columns: each address's first state (its leading absence, which no state
-- after it follows, dropped) and every change of state (all that changes and seq_items read)
states_lag AS (
    SELECT s.*, o.pos, o.prev_state
    FROM states s
    JOIN (SELECT addr_key, pt, pos, CASE WHEN pt > first_pt THEN state_before END AS prev_state
          FROM states_ord
          WHERE pt >= first_pt AND (pt = first_pt OR state <> state_before)) o
      ON o.addr_key = s.addr_key AND o.pt = s.pt
),
changes AS (
    SELECT c.*,
           CASE WHEN c.prev_state = 'ready' THEN 'remove' WHEN c.state = 'ready' THEN 'add' END AS crossing
    FROM states_lag c
    WHERE c.prev_state IS NOT NULL AND c.state <> c.prev_state
      -- a terminating address's serving condition flipping (terminating <-> notReady) is a pod shutting
      -- down, outside the ready set both ways: no transition
      AND NOT (c.prev_state IN ('terminating', 'notReady') AND c.state IN ('terminating', 'notReady'))
),
-- the most changes of each address within window_minutes. This window and the one of crossings sort numbers only, as
-- states_ord does: over the whole change rows, partitioned by the six strings, they took 2.8 and 0.9 s of the rule's
-- 23.0 s at 30M events of the independent mix in DuckDB's profiler; now 1.0 s and less, and the rule 19.6 s
window_counts AS (
    SELECT addr_key, max(in_window) AS max_in_window
    FROM (SELECT addr_key,
                 count(*) OVER (PARTITION BY addr_key ORDER BY ts
                                RANGE BETWEEN to_microseconds(CAST(CAST($window_minutes AS DOUBLE) * 60000000 AS BIGINT))
                                              PRECEDING AND CURRENT ROW) AS in_window
          FROM changes)
    GROUP BY addr_key
),
-- remove -> add -> remove -> add: a remove whose third following ready-boundary crossing comes within M minutes
crossings AS (
    SELECT addr_key, ts, crossing,
           lead(ts, 3) OVER (PARTITION BY addr_key ORDER BY pos) AS ts_plus3
    FROM changes
    WHERE crossing IS NOT NULL
),
pattern AS (
    SELECT addr_key, min(ts) AS pattern_at
    FROM crossings
    WHERE crossing = 'remove' AND ts_plus3 IS NOT NULL
      AND ts_plus3 - ts <= to_microseconds(CAST(CAST($pattern_window_minutes AS DOUBLE) * 60000000 AS BIGINT))
    GROUP BY ALL
),
per_key AS (
    SELECT c.cluster, c.stream, c.kind, c.namespace, any_value(c.svc) AS svc, c.obj, c.ip, c.addr_key,
           count(*) AS transitions,
           count(*) FILTER (WHERE c.crossing = 'remove') AS removes,
           count(*) FILTER (WHERE c.crossing = 'add') AS adds,
           min(c.ts) AS first_ts, max(c.ts) AS last_ts
    FROM changes c
    GROUP BY c.cluster, c.stream, c.kind, c.namespace, c.obj, c.ip, c.addr_key
),
-- one stream/kind/object per (Service, address): the most transitions; audit, then Endpoints, on ties
best AS (
    SELECT k.*, w.max_in_window, p.pattern_at,
           row_number() OVER (PARTITION BY k.cluster, k.namespace, k.svc, k.ip
                              ORDER BY k.transitions DESC, (k.stream = 'audit') DESC, (k.stream = 'snapshots') DESC,
                                       (k.kind = 'Endpoints') DESC, k.stream, k.obj) AS pick
    FROM per_key k
    JOIN window_counts w ON w.addr_key = k.addr_key
    LEFT JOIN pattern p ON p.addr_key = k.addr_key
),
flappers AS (
    SELECT b.*,
           (SELECT any_value(s.pod) FROM states s
             WHERE s.cluster = b.cluster AND s.stream = b.stream AND s.kind = b.kind AND s.namespace = b.namespace AND s.obj = b.obj
               AND s.ip = b.ip AND s.pod IS NOT NULL) AS pod
    FROM best b
    WHERE b.pick = 1
      AND (b.max_in_window >= CAST($min_transitions_count AS BIGINT) OR b.pattern_at IS NOT NULL)
),
-- batches: addresses of one Service whose flapping periods [first, last transition] overlap
batched AS (
    SELECT f.*,
           sum(CASE WHEN f.prev_last IS NULL OR f.first_ts > f.prev_last THEN 1 ELSE 0 END)
               OVER (PARTITION BY f.cluster, f.namespace, f.svc ORDER BY f.first_ts, f.ip ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW) AS batch
    FROM (
        SELECT f.*, max(f.last_ts) OVER (PARTITION BY f.cluster, f.namespace, f.svc ORDER BY f.first_ts, f.ip
                                         ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING) AS prev_last
        FROM flappers f) f
),
-- addresses of the Service known to the streams used (for the share of the Service that flapped)
svc_addresses AS (
    SELECT cluster, namespace, svc, count(DISTINCT ip) AS addresses
    FROM states
    GROUP BY ALL
),
-- per-address evidence: the sequence of states (merged: states_lag holds each address's first state and its changes
-- only) of the chosen stream
seq_items AS (
    SELECT b.cluster, b.namespace, b.svc, b.batch, b.ip,
           list(struct_pack("at" := ks_time_ms(s.ts), state := s.state,
                            file := s.source_file, line := s.source_line) ORDER BY s.pos) AS seq
    FROM batched b
    JOIN states_lag s ON s.addr_key = b.addr_key
    GROUP BY ALL
),
batch_agg AS (
    SELECT b.cluster, b.namespace, b.svc, b.batch,
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
    LEFT JOIN seq_items si USING (cluster, namespace, svc, batch, ip)
    GROUP BY b.cluster, b.namespace, b.svc, b.batch
)
SELECT 'endpoint-flapping' AS rule,
       CASE WHEN sa.addresses > 0 AND 100.0 * a.n_addr / sa.addresses >= CAST($critical_share_percent AS DOUBLE)
            THEN 'critical' ELSE 'warning' END AS severity,
       a.cluster,
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
LEFT JOIN svc_addresses sa ON sa.cluster = a.cluster AND sa.namespace = a.namespace AND sa.svc = a.svc
ORDER BY first_seen, cluster, namespace, name, subject
