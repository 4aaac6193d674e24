-- election-lock-churn: leader election on the legacy control-plane.alpha.kubernetes.io/leader annotation of
-- Endpoints or ConfigMaps (every renewal is an object change delivered to every watcher of that resource),
-- and, as a separate info line, Leases whose holder changes more than N times within a window.
--
-- Sources: audit_events write bodies (responseObject, else requestObject) of endpoints, configmaps and leases;
-- leader_locks rows of snapshots (source = 'snapshot'). Audit is preferred for a lock when it has writes of it;
-- snapshots alone give a lower bound (distinct renewTime values seen).
-- The window bounds are bound into each scan's WHERE (not a cross-joined CTE) so that DuckDB filters the scans themselves.
-- With --since the writes and watch requests are read from $lookback_since (the rule's lookback before the window),
-- not from the start of the database, so that a run over a short window costs in proportion to the window.
-- What the rule reads of audit_events is selected once, before the pieces, by its stages (rules/election-lock-churn.yaml,
-- queries/stages/election-lock-churn-*.sql): the lock-capable writes, without their bodies, of the objects that the rule
-- can report (stage_lock_writes: the candidates are decided over all the lock-capable writes at once, from the few
-- columns that decision needs, so that the writes of every other object never reach the pieces), the watch requests on
-- Endpoints and ConfigMaps that those locks can meet (stage_watch_reqs) and their keys (stage_watch_keys), the rows of
-- each namespace (stage_lock_namespaces), and the Services the audit log names (stage_audit_services); a piece reads its
-- share of those instead of scanning every audit event again.
-- The rule runs in pieces ($piece of $pieces) of about equal shares of the candidates' writes and snapshots
-- (ns_pieces): the namespaces, in order, take consecutive ranges of pieces in proportion to their rows, and the
-- objects (cluster, namespace, name) of a namespace are placed in its range by a hash of their name (ks_object_in_piece),
-- so that each piece gets its share of every namespace it meets (when a namespace was split evenly over the pieces it
-- met, a piece could hold 1.6 shares: 1,957 locks instead of 1,024 at 10M events). A piece reads the writes, snapshots
-- and Services of its objects, and meets the watches of its reported locks in a hash join. So a piece holds its share
-- of the locks however they are spread over namespaces (one namespace or many), yet a small namespace stays in one or
-- two pieces; its memory stays that of a small input however
-- large the audit log grows (without pieces it ran out of memory at 4M events under the default limit; what bounds a
-- piece is the evidence text of its reported locks, which an aggregate holds and never spills, and its locks' pairs
-- with the watches: in pieces of whole namespaces hashed together, a piece could not be smaller than its namespaces, and
-- 4M events ran out of memory under 300MB). Within a piece, the pairs of a
-- lock and a watcher (which grow with locks × watchers) stream from a join into per-lock aggregates of integers (a
-- count and the first 50); aggregates whose state is a string, a list or a DISTINCT set only see the reported locks'
-- own rows and at most 50 watchers of each.
WITH
-- the pieces of each namespace (its rows: stage_lock_namespaces): the namespaces in order take the share
-- [before, before + n) of all rows, which maps to pieces first .. first + span - 1 (at least one): a namespace larger
-- than a piece spans several, and a piece holds the whole namespaces within its share and, of the two that straddle
-- its bounds, the objects whose place falls in it (ks_object_in_piece)
ns_pieces AS MATERIALIZED (
    SELECT cluster, namespace, before, n, total, pieces, first,
           greatest(((before + n) * pieces + total - 1) // total - first, 1) AS span
    FROM (SELECT *, before * pieces // total AS first
          FROM (SELECT cluster, namespace, CAST(n AS BIGINT) AS n, CAST($pieces AS BIGINT) AS pieces,
                       CAST(coalesce(sum(n) OVER (ORDER BY cluster, namespace ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING), 0) AS BIGINT) AS before,
                       CAST(sum(n) OVER () AS BIGINT) AS total
                FROM stage_lock_namespaces))
),
-- the piece's share of the candidates' writes (stage_lock_writes), read by each of its three readers from the stage (in
-- the sandbox's memory; compressed when the rule runs in several pieces): copied once for them (materialized), the
-- piece took 1.20-1.31 s instead of 0.88-0.97 s on the real recordings replicated to 10M events, and with every slow
-- lock of 10M independent events reported the rule took 55 s instead of 45 s, at the same peak (BENCHMARKS.md). Only
-- the namespaces of the piece, and of a namespace that spans several pieces only the piece's place buckets, are joined:
-- in more than one piece the stage is sorted by cluster, namespace and bucket (sort_for_pieces), and the bounds of the
-- join's keys then skip the stage's other row groups (a piece at 10M events read 134,687 of 1,837,663 rows instead of
-- all of them, before the candidates; of the recordings at 10M, where one namespace holds 808,960 of them, a piece in
-- that namespace read all of them before the buckets)
writes AS NOT MATERIALIZED (
    SELECT w.* EXCLUDE (ns_key, place_bucket)
    FROM stage_lock_writes w
    JOIN (SELECT *, unnest(ks_piece_buckets(before, n, total, pieces, $piece)) AS place_bucket
          FROM ns_pieces WHERE CAST($piece AS BIGINT) BETWEEN first AND first + span - 1) p
      ON p.cluster = w.cluster AND p.namespace = w.ns_key AND p.place_bucket = w.place_bucket
    WHERE ks_object_in_piece(w.cluster, w.namespace, w.name, p.before, p.n, p.total, p.pieces, $piece)
),
-- ---------------------------------------------------------------- annotation locks (Endpoints, ConfigMap)
ann_raw AS (
    SELECT w.* EXCLUDE (uid, lease_holder, lease_transitions, identity_lease),
           CASE w.resource WHEN 'endpoints' THEN 'Endpoints' ELSE 'ConfigMap' END AS kind,
           CASE WHEN json_valid(w.rec) THEN json_extract_string(w.rec, '$.holderIdentity') END AS holder,
           CASE WHEN json_valid(w.rec) THEN TRY_CAST(json_extract_string(w.rec, '$.leaderTransitions') AS BIGINT) END AS transitions
    FROM writes w
    WHERE w.resource IN ('endpoints', 'configmaps')
),
-- each write with the record before it and that record's holder (read once, in ann_raw), and the holder before it
-- (one window: both share its partitions and order)
ann_parsed AS (
    SELECT r.*,
           lag(CASE WHEN r.rec IS NOT NULL THEN struct_pack(rec := r.rec, holder := r.holder) END IGNORE NULLS) OVER w AS prev_rec,
           lag(nullif(r.holder, '') IGNORE NULLS) OVER w AS prev_holder
    FROM ann_raw r
    WINDOW w AS (PARTITION BY r.cluster, r.kind, r.namespace, r.name ORDER BY r.ts, r.audit_id)
),
snap_ann AS (
    SELECT coalesce(l.cluster, '') AS cluster, l.kind, l.namespace, l.name, l.captured_at AS ts, l.source_file, l.source_line,
           l.holder, l.transitions, l.renew_time
    FROM leader_locks l
    JOIN ns_pieces p ON p.cluster = coalesce(l.cluster, '') AND p.namespace = coalesce(l.namespace, '')
    WHERE l.source = 'snapshot' AND l.lock_type = 'annotation' AND l.kind IN ('Endpoints', 'ConfigMap')
      AND ks_object_in_piece(l.cluster, l.namespace, l.name, p.before, p.n, p.total, p.pieces, $piece)
      AND l.captured_at >= ks_window_start($since) AND l.captured_at <= ks_window_end($until)
),
ann_locks AS (
    SELECT DISTINCT cluster, kind, namespace, name FROM ann_parsed WHERE in_win AND rec IS NOT NULL
    UNION
    SELECT DISTINCT cluster, kind, namespace, name FROM snap_ann
),
-- the lock writers: users that changed the annotation of that object (the candidates). lock_writers, lock_writes and
-- reportable_locks decide which locks are reported; stages/election-lock-churn-candidates.sql decides the same over all
-- the writes before the pieces, and a lock it leaves out never reaches them: change both together
lock_writers AS (
    SELECT DISTINCT cluster, kind, namespace, name, username
    FROM ann_parsed
    WHERE in_win AND rec IS NOT NULL AND rec IS DISTINCT FROM prev_rec.rec
),
-- the lock writes: every successful write of a lock object by one of its lock writers (client-go renews with
-- second-precision times, so two renewals within a second carry the same annotation), plus writes of a known lock
-- without a logged body (Metadata audit level) by anyone but the endpoints controllers
lock_writes AS (
    SELECT p.cluster, p.kind, p.namespace, p.name, p.audit_id, p.verb, p.username, p.user_agent, p.ts, p.source_file,
           p.source_line, p.holder, p.transitions, p.prev_holder,
           CASE WHEN p.rec IS NULL THEN 'write'
                WHEN coalesce(p.holder, '') = '' THEN 'release'
                WHEN p.prev_rec IS NULL OR p.holder IS DISTINCT FROM p.prev_rec.holder THEN 'acquire'
                WHEN p.rec = p.prev_rec.rec THEN 'write'
                ELSE 'renew' END AS action
    FROM ann_parsed p
    JOIN ann_locks k USING (cluster, kind, namespace, name)
    WHERE p.in_win
      AND ((p.rec IS NOT NULL AND EXISTS (SELECT 1 FROM lock_writers lw
                                        WHERE lw.cluster = p.cluster AND lw.kind = p.kind AND lw.namespace = p.namespace
                                          AND lw.name = p.name AND lw.username = p.username))
       OR (NOT p.has_body AND NOT list_contains(ks_usernames($endpoints_controller_usernames), p.username)))
),
lock_writes_flag AS (
    SELECT w.*,
           (coalesce(w.holder, '') <> '' AND w.prev_holder IS NOT NULL AND w.holder <> w.prev_holder) AS holder_change
    FROM lock_writes w
),
audit_agg AS (
    SELECT cluster, kind, namespace, name,
           count(*) FILTER (WHERE verb <> 'create') AS updates,
           count(*) FILTER (WHERE verb = 'create') AS creates,
           min(ts) AS first_at, max(ts) AS last_at,
           count(*) FILTER (WHERE holder_change) AS holder_changes,
           max(transitions) - min(transitions) AS transitions_delta,
           min(transitions) AS transitions_min, max(transitions) AS transitions_max,
           count(*) FILTER (WHERE action = 'release') AS releases,
           string_agg(DISTINCT username, ', ' ORDER BY username) AS writers
    FROM lock_writes_flag
    GROUP BY ALL
),
audit_holders AS (
    SELECT cluster, kind, namespace, name, string_agg(holder, ', ' ORDER BY first_at) AS holders, count(*) AS n_holders
    FROM (SELECT cluster, kind, namespace, name, holder, min(ts) AS first_at
          FROM lock_writes_flag WHERE coalesce(holder, '') <> '' GROUP BY ALL)
    GROUP BY ALL
),
snap_seq AS (
    SELECT s.*,
           lag(nullif(s.holder, '') IGNORE NULLS) OVER (PARTITION BY cluster, kind, namespace, name ORDER BY ts, source_file, source_line) AS prev_holder,
           lag(s.renew_time) OVER (PARTITION BY cluster, kind, namespace, name ORDER BY ts, source_file, source_line) AS prev_renew
    FROM snap_ann s
),
snap_agg AS (
    SELECT cluster, kind, namespace, name,
           count(DISTINCT renew_time) AS renewals,
           count(*) AS observations,
           min(ts) AS first_at, max(ts) AS last_at,
           count(*) FILTER (WHERE coalesce(holder, '') <> '' AND prev_holder IS NOT NULL AND holder <> prev_holder) AS holder_changes,
           max(transitions) - min(transitions) AS transitions_delta,
           min(transitions) AS transitions_min, max(transitions) AS transitions_max,
           string_agg(DISTINCT nullif(holder, ''), ', ' ORDER BY nullif(holder, '')) AS holders,
           count(DISTINCT nullif(holder, '')) AS n_holders
    FROM snap_seq
    GROUP BY ALL
),
lock_stats AS (
    SELECT k.cluster, k.kind, k.namespace, k.name,
           (coalesce(a.updates, 0) > 0) AS from_audit,
           CASE WHEN coalesce(a.updates, 0) > 0 THEN a.updates ELSE coalesce(s.renewals, 0) END AS updates,
           CASE WHEN coalesce(a.updates, 0) > 0 THEN a.first_at ELSE s.first_at END AS first_at,
           CASE WHEN coalesce(a.updates, 0) > 0 THEN a.last_at ELSE s.last_at END AS last_at,
           CASE WHEN coalesce(a.updates, 0) > 0
                THEN greatest(a.holder_changes, coalesce(a.transitions_delta, 0))
                ELSE greatest(coalesce(s.holder_changes, 0), coalesce(s.transitions_delta, 0)) END AS transitions,
           CASE WHEN coalesce(a.updates, 0) > 0 THEN a.transitions_min ELSE s.transitions_min END AS transitions_min,
           CASE WHEN coalesce(a.updates, 0) > 0 THEN a.transitions_max ELSE s.transitions_max END AS transitions_max,
           CASE WHEN coalesce(a.updates, 0) > 0 THEN coalesce(h.holders, '') ELSE coalesce(s.holders, '') END AS holders,
           CASE WHEN coalesce(a.updates, 0) > 0 THEN coalesce(h.n_holders, 0) ELSE coalesce(s.n_holders, 0) END AS n_holders,
           coalesce(a.releases, 0) AS releases,
           coalesce(a.creates, 0) AS creates,
           a.writers,
           coalesce(s.observations, 0) AS snapshot_observations
    FROM ann_locks k
    LEFT JOIN audit_agg a USING (cluster, kind, namespace, name)
    LEFT JOIN audit_holders h USING (cluster, kind, namespace, name)
    LEFT JOIN snap_agg s USING (cluster, kind, namespace, name)
),
-- the locks that are reported: enough updates and, from audit writes, often enough over the span they cover (a
-- holder renews every RetryPeriod, 2 to 26 s; an object whose annotation changed a few times a day floods no watcher).
-- Snapshots give a lower bound of the updates, one per capture at most, so they are held to the count alone
reportable_locks AS (
    SELECT *
    FROM lock_stats
    WHERE CASE WHEN from_audit
               THEN ks_lock_written_often(updates, epoch(last_at - first_at), $min_updates_count, $min_updates_per_min)
               ELSE updates >= CAST($min_updates_count AS BIGINT) END
),
-- only the reported locks need watchers and evidence
reported AS (
    SELECT cluster, kind, namespace, name, first_at, last_at, from_audit,
           CASE kind WHEN 'Endpoints' THEN 'endpoints' ELSE 'configmaps' END AS resource,
           row_number() OVER (ORDER BY cluster, kind, namespace, name) AS lock_id
    FROM reportable_locks
),
-- each reported lock under the four keys a watch of it may have: its namespace or all, its name or all
lock_keys AS (
    SELECT r.lock_id, r.cluster, r.resource, r.first_at, r.last_at, n.ns_key, k.name_key
    FROM reported r,
         unnest(list_distinct([r.namespace, ''])) AS n(ns_key),
         unnest(list_distinct([r.name, ''])) AS k(name_key)
),
-- each reported lock's watch requests: those under one of its keys that were open while it was written (inlined
-- into both of its readers below, never materialized: it grows with locks × watchers)
lock_requests AS NOT MATERIALIZED (
    SELECT k.lock_id, k.first_at, w.watcher_id, w.req_id, w.single_key, w.prev_ended_at
    FROM lock_keys k
    JOIN stage_watch_keys w
      ON w.cluster = k.cluster AND w.resource = k.resource AND w.ns_key = k.ns_key AND w.name_key = k.name_key
     AND w.started_at <= k.last_at AND w.ended_at >= k.first_at
),
-- the watchers of each lock (every one of them receives each lock write), with their first watch request open while
-- the lock was written: one row per lock and watcher. This grows with locks × watchers, so it is made without
-- grouping the pairs: a single-key watcher's first such request is the one whose earlier requests all ended
-- before the lock's first write (every earlier request started before it, hence before the lock's last write);
-- only the pairs of the other watchers (field selectors, or both cluster-wide and namespaced watches) are grouped
lock_watchers AS (
    SELECT lock_id, watcher_id, req_id AS first_req
    FROM lock_requests
    WHERE single_key AND (prev_ended_at IS NULL OR prev_ended_at < first_at)
    UNION ALL
    SELECT lock_id, watcher_id, min(req_id)
    FROM lock_requests
    WHERE NOT single_key
    GROUP BY ALL
),
-- per lock: how many watchers, and the first 50 (the evidence list's length) in the order they started watching:
-- aggregates whose state per lock is a count and at most 50 integers, the first requests' req_id (a request is one
-- watcher's, so it names the watcher; a top 50 of structs would keep each as a string sort key, at four times the time)
lock_watcher_stats AS (
    SELECT lock_id, count(*) AS watchers,
           min(first_req, 50) AS top
    FROM lock_watchers
    GROUP BY lock_id
),
-- the shown watchers of each lock, pos = 1, 2, … in that order, with the watcher of each first request
lock_watcher_top AS (
    SELECT t.lock_id, f.watcher_id, t.first_req, t.pos
    FROM (SELECT lock_id, unnest(list_transform(top, (r, i) -> struct_pack(first_req := r, pos := i)), recursive := true)
          FROM lock_watcher_stats) t
    JOIN stage_watch_reqs f ON f.req_id = t.first_req
),
watcher_agg AS (
    SELECT r.cluster, r.kind, r.namespace, r.name, s.watchers
    FROM lock_watcher_stats s JOIN reported r USING (lock_id)
),
-- the keys of the shown watchers' locks (materialized: joined to the watch requests on all keys at once, never on the
-- watcher alone, which would pair each shown watcher with its requests of every namespace)
shown_keys AS MATERIALIZED (
    SELECT t.lock_id, t.watcher_id, k.cluster, k.resource, k.ns_key, k.name_key, k.first_at, k.last_at
    FROM lock_watcher_top t JOIN lock_keys k USING (lock_id)
),
-- the shown watchers' watch requests open while their lock was written (joined again for them only), once each
shown_reqs AS (
    SELECT DISTINCT s.lock_id, s.watcher_id, w.req_id, w.user_agent
    FROM shown_keys s
    JOIN stage_watch_keys w
      ON w.watcher_id = s.watcher_id AND w.cluster = s.cluster AND w.resource = s.resource AND w.ns_key = s.ns_key
     AND w.name_key = s.name_key AND w.started_at <= s.last_at AND w.ended_at >= s.first_at
),
-- how many, and their distinct user agents in order (made distinct before the aggregates: DISTINCT aggregates over
-- every shown watcher of the piece would not spill; a list sorted after, not an ordered string_agg, which sorts each
-- of the 50 × locks groups on its own at five times the cost)
shown_requests AS (
    SELECT lock_id, watcher_id, sum(requests) AS requests, array_to_string(list_sort(list(user_agent)), ', ') AS user_agent
    FROM (SELECT lock_id, watcher_id, user_agent, count(*) AS requests FROM shown_reqs GROUP BY ALL)
    GROUP BY ALL
),
-- the watchers shown in evidence: the first watch request's details, how many requests and their user agents
shown_watchers AS (
    SELECT t.lock_id, t.pos, f.username, f.client_ip, f.started_at, f.audit_id, f.source_file, f.source_line,
           u.requests, u.user_agent
    FROM lock_watcher_top t
    JOIN shown_requests u USING (lock_id, watcher_id)
    JOIN stage_watch_reqs f ON f.req_id = t.first_req
),
svc_seen AS (
    SELECT DISTINCT coalesce(s.cluster, '') AS cluster, s.namespace, s.name FROM services s
    JOIN ns_pieces p ON p.cluster = coalesce(s.cluster, '') AND p.namespace = coalesce(s.namespace, '')
    WHERE NOT coalesce(s.deleted, false) AND ks_object_in_piece(s.cluster, s.namespace, s.name, p.before, p.n, p.total, p.pieces, $piece)
    UNION
    SELECT s.cluster, s.namespace, s.name FROM stage_audit_services s
    JOIN ns_pieces p ON p.cluster = s.cluster AND p.namespace = coalesce(s.namespace, '')
    WHERE s.seen AND ks_object_in_piece(s.cluster, s.namespace, s.name, p.before, p.n, p.total, p.pieces, $piece)
),
-- the clusters whose Services the evidence shows at all (else "no Service" cannot be told)
svc_knowledge AS (
    SELECT DISTINCT coalesce(cluster, '') AS cluster FROM services
    UNION
    SELECT DISTINCT cluster FROM stage_audit_services
),
ann_findings AS (
    SELECT l.*,
           coalesce(wa.watchers, 0) AS watchers,
           epoch(l.last_at - l.first_at) AS span_s,
           CASE WHEN epoch(l.last_at - l.first_at) > 0
                THEN l.updates * 60.0 / epoch(l.last_at - l.first_at) END AS updates_per_min,
           CASE WHEN l.kind <> 'Endpoints' THEN NULL
                WHEN NOT EXISTS (SELECT 1 FROM svc_knowledge k WHERE k.cluster = l.cluster) THEN NULL
                ELSE EXISTS (SELECT 1 FROM svc_seen s WHERE s.cluster = l.cluster AND s.namespace = l.namespace AND s.name = l.name) END AS has_service
    FROM reportable_locks l
    LEFT JOIN watcher_agg wa USING (cluster, kind, namespace, name)
),
ann_scored AS (
    SELECT f.*,
           f.updates * f.watchers AS fanout,
           coalesce(f.updates_per_min, 0) * f.watchers AS fanout_per_min
    FROM ann_findings f
),
-- evidence of the reported locks: the first 50 items (lock writes, then watchers, then snapshots) and how many
-- there are in all; pos numbers the items of each group of a lock in order
ann_evidence_rows AS (
    -- lock writes: the first 5, every acquisition, holder change and release, and the last one (numbered in the
    -- reported locks only)
    SELECT lock_id, 1 AS grp, pos,
           struct_pack(type := 'write', action := action, "at" := ks_time_us(ts),
                       audit_id := audit_id, verb := verb, file := source_file, line := source_line,
                       user_name := username, user_agent := user_agent, client_ip := NULL::VARCHAR,
                       holder := holder, leader_transitions := transitions, watch_requests := NULL::BIGINT) AS ev
    FROM (SELECT r.lock_id, w.*,
                 row_number() OVER (PARTITION BY r.lock_id ORDER BY w.ts, w.audit_id) AS pos,
                 count(*) OVER (PARTITION BY r.lock_id) AS n_writes
          FROM lock_writes_flag w
          JOIN reported r USING (cluster, kind, namespace, name))
    WHERE pos <= 5 OR pos = n_writes OR holder_change OR action IN ('acquire', 'release')
    UNION ALL
    -- the distinct watchers, with their first watch request in the window
    SELECT lock_id, 2, pos,
           struct_pack(type := 'watcher', action := 'watch', "at" := ks_time_us(started_at),
                       audit_id := audit_id, verb := 'watch', file := source_file, line := source_line,
                       user_name := username, user_agent := user_agent, client_ip := client_ip,
                       holder := NULL::VARCHAR, leader_transitions := NULL::BIGINT, watch_requests := requests)
    FROM shown_watchers
    UNION ALL
    -- snapshot-only locks: the observations where the holder changed
    SELECT r.lock_id, 3, row_number() OVER (PARTITION BY r.lock_id ORDER BY s.ts, s.source_file, s.source_line),
           struct_pack(type := 'snapshot', action := 'holder', "at" := ks_time_us(s.ts),
                       audit_id := NULL::VARCHAR, verb := NULL::VARCHAR, file := s.source_file, line := s.source_line,
                       user_name := NULL::VARCHAR, user_agent := NULL::VARCHAR, client_ip := NULL::VARCHAR,
                       holder := s.holder, leader_transitions := s.transitions, watch_requests := NULL::BIGINT)
    FROM snap_seq s
    JOIN reported r USING (cluster, kind, namespace, name)
    WHERE NOT r.from_audit
      AND (s.prev_holder IS NULL OR coalesce(s.holder, '') <> coalesce(s.prev_holder, ''))
),
-- the first 50 items of each lock (a window sort, which spills, and brings each lock's items together before the
-- aggregate) as JSON text joined in order: a list of structs would hold every item at several times its size in
-- aggregate state, which never spills
ann_evidence AS (
    SELECT e.lock_id,
           CAST('[' || string_agg(CAST(to_json(e.ev) AS VARCHAR), ',' ORDER BY e.grp, e.pos) || ']' AS JSON) AS items,
           any_value(coalesce(n.n_rows, 0)) + coalesce(any_value(wa.watchers), 0) AS n_items
    FROM (SELECT * FROM ann_evidence_rows
          QUALIFY row_number() OVER (PARTITION BY lock_id ORDER BY grp, pos) <= 50) e
    LEFT JOIN (SELECT lock_id, count(*) AS n_rows FROM ann_evidence_rows WHERE grp <> 2 GROUP BY ALL) n USING (lock_id)
    LEFT JOIN lock_watcher_stats wa USING (lock_id)
    GROUP BY e.lock_id
),
ann_out AS (
    SELECT 'election-lock-churn' AS rule,
           CASE WHEN f.fanout_per_min >= CAST($critical_fanout_per_min AS DOUBLE) THEN 'critical' ELSE 'warning' END AS severity,
           f.cluster, f.namespace, f.name,
           CASE WHEN f.writers IS NULL
                THEN 'holder' || CASE WHEN f.n_holders > 1 THEN 's ' ELSE ' ' END || f.holders
                ELSE f.writers || CASE WHEN f.holders <> '' THEN ' (holder' || CASE WHEN f.n_holders > 1 THEN 's ' ELSE ' ' END || f.holders || ')' ELSE '' END
           END ||
               CASE WHEN f.has_service = false THEN '; Endpoints lock with no Service' ELSE '' END AS subject,
           f.first_at AS first_seen, f.last_at AS last_seen,
           CAST(f.updates AS BIGINT) AS count,
           struct_pack(kind := f.kind, no_service := coalesce(f.has_service = false, false),
                       on_service := coalesce(f.has_service, false), from_audit := f.from_audit,
                       updates := CAST(f.updates AS BIGINT), creates := CAST(f.creates AS BIGINT),
                       span_s := CAST(f.span_s AS DOUBLE), updates_per_min := CAST(f.updates_per_min AS DOUBLE),
                       snapshot_observations := CAST(f.snapshot_observations AS BIGINT),
                       transitions := CAST(f.transitions AS BIGINT), transitions_min := CAST(f.transitions_min AS BIGINT),
                       transitions_max := CAST(f.transitions_max AS BIGINT), releases := CAST(f.releases AS BIGINT),
                       watchers := CAST(f.watchers AS BIGINT), fanout := CAST(f.fanout AS BIGINT),
                       fanout_per_min := CAST(f.fanout_per_min AS DOUBLE), max_in_window := NULL::BIGINT,
                       evidence_items := CAST(coalesce(e.n_items, 0) AS BIGINT)) AS facts,
           e.items AS evidence
    FROM ann_scored f
    LEFT JOIN (SELECT r.cluster, r.kind, r.namespace, r.name, e.items, e.n_items
               FROM ann_evidence e JOIN reported r USING (lock_id)) e USING (cluster, kind, namespace, name)
),
-- ---------------------------------------------------------------- Lease holder churn (info)
lease_obs AS (
    SELECT 'audit' AS src, w.cluster, w.namespace, w.name, w.uid,
           w.ts, w.in_win, w.audit_id, w.source_file, w.source_line, w.username,
           w.lease_holder AS holder, w.lease_transitions AS transitions
    FROM writes w
    WHERE w.resource = 'leases' AND w.has_body AND NOT w.identity_lease
    UNION ALL
    SELECT 'snapshot', coalesce(l.cluster, ''), l.namespace, l.name, NULL, l.captured_at, (l.captured_at >= ks_window_start($since)),
           NULL, l.source_file, l.source_line, NULL, l.holder, l.transitions
    FROM leader_locks l
    JOIN ns_pieces p ON p.cluster = coalesce(l.cluster, '') AND p.namespace = coalesce(l.namespace, '')
    WHERE l.source = 'snapshot' AND l.kind = 'Lease' AND ks_object_in_piece(l.cluster, l.namespace, l.name, p.before, p.n, p.total, p.pieces, $piece)
      AND l.captured_at >= ks_lookback_start($lookback_since, $since) AND l.captured_at <= ks_window_end($until)
      AND NOT EXISTS (SELECT 1 FROM writes w WHERE w.cluster = coalesce(l.cluster, '') AND w.resource = 'leases' AND w.has_body
                      AND w.namespace = l.namespace AND w.name = l.name)
),
-- node heartbeats (kube-node-lease) and kube-apiserver identity leases are not elections; a re-created Lease (new uid)
-- starts a new sequence
lease_seq AS (
    SELECT o.*,
           lag(nullif(o.holder, '') IGNORE NULLS) OVER (PARTITION BY cluster, namespace, name, uid ORDER BY ts, source_file, source_line) AS prev_holder
    FROM lease_obs o
    WHERE ks_election_lease(o.namespace, o.name)
),
lease_changes AS (
    SELECT * FROM lease_seq
    WHERE in_win AND coalesce(holder, '') <> '' AND prev_holder IS NOT NULL AND holder <> prev_holder
),
lease_changes_win AS (
    SELECT c.*,
           count(*) OVER (PARTITION BY cluster, namespace, name ORDER BY ts
                          RANGE BETWEEN to_microseconds(CAST(CAST($lease_window_minutes AS DOUBLE) * 60000000 AS BIGINT)) PRECEDING AND CURRENT ROW) AS in_window
    FROM lease_changes c
),
lease_agg AS (
    SELECT cluster, namespace, name,
           count(*) AS changes, max(in_window) AS max_in_window,
           min(ts) AS first_at, max(ts) AS last_at,
           array_to_string(list_sort(list_distinct(flatten(list([prev_holder, holder])))), ', ') AS holders,
           string_agg(DISTINCT username, ', ' ORDER BY username) AS writers,
           list(struct_pack(type := src, action := 'holder-change', "at" := ks_time_us(ts), audit_id := audit_id,
                            file := source_file, line := source_line, user_name := username,
                            previous_holder := prev_holder, holder := holder, transitions := transitions)
                ORDER BY ts, source_file, source_line) AS items
    FROM lease_changes_win
    GROUP BY ALL
    HAVING max(in_window) > CAST($lease_max_holder_changes_count AS BIGINT)
),
lease_out AS (
    SELECT 'election-lock-churn' AS rule, 'info' AS severity, cluster, namespace, name,
           coalesce(writers || ' ', '') || '(holders ' || holders || ')' AS subject,
           first_at AS first_seen, last_at AS last_seen, CAST(changes AS BIGINT) AS count,
           struct_pack(kind := 'Lease', no_service := false, on_service := false, from_audit := NULL::BOOLEAN,
                       updates := NULL::BIGINT, creates := NULL::BIGINT, span_s := NULL::DOUBLE, updates_per_min := NULL::DOUBLE,
                       snapshot_observations := NULL::BIGINT, transitions := NULL::BIGINT, transitions_min := NULL::BIGINT,
                       transitions_max := NULL::BIGINT, releases := NULL::BIGINT, watchers := NULL::BIGINT,
                       fanout := NULL::BIGINT, fanout_per_min := NULL::DOUBLE, max_in_window := CAST(max_in_window AS BIGINT),
                       evidence_items := CAST(len(items) AS BIGINT)) AS facts,
           to_json(items[1:50]) AS evidence
    FROM lease_agg
)
SELECT rule, severity, cluster, namespace, name, subject, first_seen, last_seen, count, facts, evidence
FROM (SELECT * FROM ann_out UNION ALL SELECT * FROM lease_out)
ORDER BY first_seen, cluster, namespace, name, subject
