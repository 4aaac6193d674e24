-- watch-rewind: clients that re-watch from a stale or decreasing resourceVersion.
--
-- A stream is one client's list/watch loop on one collection in one cluster: cluster + username + userAgent + client address
-- (sourceIPs[0], so replicas of one Deployment behind distinct pod IPs stay apart) + API group/version/resource +
-- namespace + objectRef.name (set by the apiserver from fieldSelector=metadata.name=X) + label and field selector,
-- within one server epoch (a new cluster or an etcd restore starts resourceVersions over; see epochs).
-- The apiserver that logged a request is not part of the stream: resourceVersions are global per etcd, and an HA
-- client's watches land on whichever apiserver its connection reaches, so its requests are followed across the logs
-- of every apiserver of the cluster. Each apiserver's watch cache lags etcd by its own delay (seconds under load) and
-- their clocks are skewed, so where two requests (or a write and a watch) were logged by different apiservers, their
-- times are trusted only to within cross_apiserver_grace_ms.
-- Its watch requests (one row per audit ID, whatever stages are logged; ordered by requestReceivedTimestamp) with
-- resourceVersion > 0 form the sequence of requested versions (0 or absent = "any/from the cache": never a rewind).
-- A watch is a rewind when:
--   backwards          its resourceVersion is lower than one the same stream already watched from;
--   repeat-after-write it repeats the stream's newest version although a successful write in the stream's scope
--                      happened while the previous watch was open (so the client was sent a newer version and must
--                      have resumed from it): a write whose logged resourceVersion (response body, or objectRef's)
--                      is newer, or, when the write logged none, a create/delete and the same version as the
--                      previous watch. Writes in the last write_delivery_grace_ms of the previous watch do not
--                      count (the event may not have reached the client), nor, for a write logged by another
--                      apiserver than the previous watch (the one whose watch cache streamed the event, and whose
--                      clock logged that watch's end), in its last write_delivery_grace_ms + cross_apiserver_grace_ms;
--                      the re-watch's own apiserver does not matter. Streams with a label selector or a field
--                      selector other than metadata.name are never judged by writes (the event may not match);
--   expired-again      it asks for a version the apiserver already answered 410 Expired to this stream.
-- Stale-version answers: the real apiserver logs a watch from a version that fell out of its watch cache as an
-- HTTP 200 watch ending within milliseconds (the 410 travels inside the stream); the reflector then lists with that
-- version and only that list is logged 410 Expired. A list answered 410 (not a continue page) that follows, within
-- stale_list_window_s, a watch of the stream from the same version that lasted at most stale_watch_max_ms is one
-- stale-version answer.
-- Healthy reflectors never fire: they resume from the newest version they were sent, repeat a version only while
-- nothing in their scope changed, and after a 410 relist and watch from the newer version the list returned.
-- A stream is reported with at least min_rewinds_count rewinds, counting those in the rule's lookback before the
-- window, when at least one of them lies in the window; only the window's rewinds are counted and listed as evidence.
-- Critical from critical_rewinds_count rewinds in the window or when any stale-version answer (410 Expired list) follows.
-- The window bounds are bound into each scan's WHERE (not a cross-joined CTE) so that DuckDB filters the
-- scans themselves; the rule's lookback (ks_lookback_start) reads requests before the window, to judge the
-- first ones inside it.
WITH RECURSIVE
-- successful writes that advance a collection's resourceVersion. Inlined into its reader (materialized, it held
-- every write of the database: 5.7M rows at 10M events). The resourceVersion a write returned is read from
-- response_rv, which ingest took from its body: parsing the bodies here was the rule's largest cost (a quarter of
-- its time on the real recordings at 10M events).
writes AS NOT MATERIALIZED (
    SELECT coalesce(a.cluster, '') AS cluster, coalesce(a.apiserver, '') AS apiserver,
           a.audit_id, a.verb, coalesce(a.api_group, '') AS api_group, a.resource,
           coalesce(a.namespace, '') AS namespace, coalesce(a.name, '') AS name,
           a.stage_at AS at, a.source_file, a.source_line, a.response_rv, a.object_rv,
           -- creates and deletes always change the store; an update or patch may be a no-op
           a.verb IN ('create', 'delete', 'deletecollection') AS always_writes
    FROM audit_events a
    WHERE ks_advancing_write(a.stage, a.verb, a.code, a.resource, a.subresource)
      AND a.stage_at >= ks_lookback_start($lookback_since, $since) AND a.stage_at <= ks_window_end($until)
),
-- server epochs: a new cluster (or an etcd restore) starts its resourceVersions over, and streams never span two
-- epochs. Where each starts is staged once for all the pieces (stage_rewind_epochs: queries/stages/watch-rewind-epochs.sql);
-- a request's epoch is the number of epoch starts before it (usually none)
epoch_starts AS (
    SELECT cluster, t, t_ms, epoch FROM stage_rewind_epochs
),
-- the minutes in which an epoch starts
epoch_start_minutes AS (
    SELECT DISTINCT cluster, t_ms // 60000 AS minute FROM epoch_starts
),
-- the lists answered 410 Expired (the only lists the rule follows), so that only their events are grouped into
-- requests with the watches' (in the independent benchmark mix half of the list and watch events are lists, none
-- answered 410)
gone_list_ids AS (
    SELECT DISTINCT coalesce(a.cluster, '') AS cluster, a.audit_id
    FROM audit_events a
    WHERE a.verb = 'list' AND a.code = 410 AND coalesce(a.stage, '') IN ('ResponseComplete', 'Panic')
      AND a.resource IS NOT NULL
      AND coalesce(a.subresource, '') = ''
      AND a.received_at >= ks_lookback_start($lookback_since, $since) AND a.received_at <= ks_window_end($until)
),
-- the events of the watch requests and of the lists answered 410 Expired of collections, read in two scans whose verb
-- equality DuckDB pushes into the scan (an IN list it does not: it scans every row and filters above). All the events
-- of a kept list are read: it has one answered 410
req_events AS NOT MATERIALIZED (
    SELECT a.*
    FROM audit_events a
    WHERE a.verb = 'watch'
      AND a.resource IS NOT NULL
      AND coalesce(a.subresource, '') = ''
      AND a.received_at >= ks_lookback_start($lookback_since, $since) AND a.received_at <= ks_window_end($until)
      AND ks_stream_in_piece(a.cluster, a.username, a.user_agent, a.source_ips[1], a.api_group, a.api_version, a.resource,
                             a.namespace, a.name, a.label_selector, a.field_selector, $piece, $pieces)
    UNION ALL
    SELECT a.*
    FROM audit_events a
    SEMI JOIN gone_list_ids g ON g.cluster = coalesce(a.cluster, '') AND g.audit_id = a.audit_id
    -- the events of a list answered 410 answer 410 or nothing (RequestReceived): read in the scan, the code spares
    -- fetching the other columns of every list (on the real recordings replicated to 10M events, 1.17M lists: 3.3 of
    -- the rule's 55 CPU-s in DuckDB's profiler). A code above 410 is kept, so that reqs sees it (and drops the list).
    WHERE a.verb = 'list' AND (a.code IS NULL OR a.code >= 410)
      AND a.resource IS NOT NULL
      AND coalesce(a.subresource, '') = ''
      AND a.received_at >= ks_lookback_start($lookback_since, $since) AND a.received_at <= ks_window_end($until)
      AND ks_stream_in_piece(a.cluster, a.username, a.user_agent, a.source_ips[1], a.api_group, a.api_version, a.resource,
                             a.namespace, a.name, a.label_selector, a.field_selector, $piece, $pieces)
),
-- one row per request (cluster and auditID): what its events say together, and what its first event says (its first
-- stage: one event per stage, as ingest keeps them), in numbers: its auditID (req_id, see shown_reqs), its stream's key
-- (the dozen strings of the stream key, below, the same in every event of a request) and apiserver as hashes, and its
-- scope as hashes too (the writes that may prove a repeat are hashed the same way, write_keys). The strings are read
-- again only for what the findings show (req_strings): the stream keys' strings, carried with every request (they were
-- joined back from its first event) through the joins, windows and materialized tables below, took a third of the
-- rule's time on the real recordings replicated to 10M events (BENCHMARKS.md). No aggregate state holds a long string
-- (verb and status reason are words DuckDB keeps inline), not even the first event's file (a hash, looked up for the
-- evidence: ev_files): such strings take memory DuckDB does not spill (any_value of a dozen strings per request ran out
-- of it at 10M events under 350-500MB; the file alone made the pieces under 200MB run out of it on the real recordings
-- at 10M events and run again split)
req_stats AS (
    SELECT e.cluster, e.req_id,
           min(e.key_hash) AS key_hash,
           -- the request's scope, for the writes that may prove a repeat: its collection, namespace and name as hashes
           -- (as write_keys hashes the writes'), and whether writes may judge it at all (no label selector, no field
           -- selector but its name)
           min(e.resource_hash) AS resource_hash, min(e.namespace_hash) AS namespace_hash, min(e.name_hash) AS name_hash,
           bool_and(e.judged_by_writes) AS judged_by_writes,
           arg_min(e.apiserver, e.t) AS apiserver,
           arg_min(e.verb, e.t) AS verb,
           arg_min(e.watch_rv, e.t) AS rv,
           arg_min(e.timeout_seconds, e.t) AS timeout_s,
           arg_min(e.file_hash, e.t) AS file_hash,
           arg_min(e.source_line, e.t) AS source_line,
           min(e.received_at) AS recv,
           max(e.stage_at) FILTER (WHERE e.complete) AS ended,
           max(e.latency_ms) FILTER (WHERE e.complete) AS latency_ms,
           max(e.code) FILTER (WHERE e.complete) AS code,
           max(e.status_reason) FILTER (WHERE e.complete) AS status_reason,
           -- a WatchList request (sendInitialEvents with NotOlderThan) asks for a state at least that new: never a replay
           bool_or(coalesce(e.send_initial_events, false) AND e.resource_version_match = 'NotOlderThan') AS watch_list,
           bool_or(coalesce(e.list_continue, false)) AS is_continue
    FROM (SELECT coalesce(a.cluster, '') AS cluster, hash(a.audit_id) AS req_id,
                 hash(coalesce(a.api_group, ''), a.resource) AS resource_hash,
                 hash(coalesce(a.namespace, '')) AS namespace_hash, hash(coalesce(a.name, '')) AS name_hash,
                 coalesce(a.label_selector, '') = ''
                     AND (coalesce(a.field_selector, '') = ''
                          OR a.field_selector IN ('metadata.name=' || coalesce(a.name, ''), 'metadata.name==' || coalesce(a.name, '')))
                     AS judged_by_writes,
                 ks_stream_key(a.cluster, a.username, a.user_agent, a.source_ips[1], a.api_group, a.api_version, a.resource,
                               a.namespace, a.name, a.label_selector, a.field_selector) AS key_hash,
                 hash(coalesce(a.apiserver, '')) AS apiserver,
                 a.verb, a.watch_rv, a.timeout_seconds, hash(a.source_file) AS file_hash, a.source_line, a.received_at, a.stage_at,
                 a.latency_ms, a.code, a.status_reason, a.send_initial_events, a.resource_version_match, a.list_continue,
                 coalesce(a.stage_at, a.received_at, 'infinity'::TIMESTAMPTZ) AS t,
                 a.stage IN ('ResponseComplete', 'Panic') AS complete
          FROM req_events a) e
    GROUP BY e.cluster, e.req_id
),
-- only watches from a resourceVersion and lists answered 410 Expired (not a continue page) are followed; from here on
-- a request's verb is is_watch (a list otherwise): a boolean where each of the tables held to the end of the query
-- (reqs, reqs_win, watch_reqs and what follows them) carried a string
reqs AS (
    SELECT cluster, req_id, key_hash, resource_hash, namespace_hash, name_hash, judged_by_writes, apiserver,
           verb = 'watch' AS is_watch, recv, ended, latency_ms, code, status_reason, rv, timeout_s, file_hash, source_line
    FROM req_stats
    WHERE ((verb = 'watch' AND rv > 0 AND NOT watch_list) OR (verb = 'list' AND rv > 0 AND code = 410 AND NOT is_continue))
),
-- the epoch at the start of each minute in which a cluster whose resourceVersions started over has requests
minute_epochs AS (
    SELECT m.cluster, m.minute, coalesce(e.epoch, 0) AS epoch
    FROM (SELECT DISTINCT cluster, epoch_ms(recv) // 60000 AS minute, epoch_ms(recv) // 60000 * 60000 AS minute_ms
          FROM reqs WHERE cluster IN (SELECT cluster FROM epoch_starts)) m
    ASOF LEFT JOIN epoch_starts e ON e.cluster = m.cluster AND m.minute_ms > e.t_ms
),
-- a request's epoch: the number of epoch starts of its cluster before it. A request in a minute without an epoch start
-- (in a cluster without any, every request) takes its minute's epoch in a hash join; only the requests in a minute
-- with one go through the as-of join, which sorts all its input with every column (on the real recordings replicated
-- to 10M events, whose one cluster starts 44,680 epochs, all 1.14M requests took 6 s). Inlined (not materialized)
-- into its one use below.
reqs_epoch AS NOT MATERIALIZED (
    SELECT r.*, coalesce(m.epoch, 0) AS epoch
    FROM reqs r
    LEFT JOIN minute_epochs m ON m.cluster = r.cluster AND m.minute = epoch_ms(r.recv) // 60000
    ANTI JOIN epoch_start_minutes s ON s.cluster = r.cluster AND s.minute = epoch_ms(r.recv) // 60000
    UNION ALL
    SELECT r.*, coalesce(e.epoch, 0) AS epoch
    FROM (SELECT r.* FROM reqs r
          SEMI JOIN epoch_start_minutes s ON s.cluster = r.cluster AND s.minute = epoch_ms(r.recv) // 60000) r
    ASOF LEFT JOIN epoch_starts e ON e.cluster = r.cluster AND r.recv >= e.t
),
-- the stream is the key's hash with the epoch, one number (the dozen strings compared once, not in every join and
-- window): two of a million streams share a number with a chance of about 3 in 100 million. Their rank among the keys
-- (dense_rank) sorted every request by the dozen strings: 4.8 s of the rule's 40 on the real recordings replicated to
-- 10M events
reqs_win AS (
    SELECT r.cluster, r.req_id,
           hash(r.key_hash, r.epoch) AS stream,
           r.apiserver, r.is_watch, r.recv, r.ended, r.latency_ms, r.code, r.rv,
           (r.recv >= ks_window_start($since)) AS in_win
    FROM reqs_epoch r
),
-- the streams that can hold a rewind: each kind of rewind is a watch asking for a version no higher than one its
-- stream asked for before it (backwards: lower than the highest before it in its loop; repeat-after-write: the same
-- as the watch before it; expired-again: the same as a list answered 410 before it), and a loop is a part of its
-- stream in the same order, so a stream whose every watch asks for more than every request before it never rewinds.
-- Only the other streams' requests go on (in a stream of one request there is nothing to compare: those are counted
-- first, on the number alone). In the independent benchmark mix at 10M events every one of 1.43M watch requests is a
-- stream of its own; healthy reflectors on a busy collection resume from ever newer versions
stream_cands AS (
    SELECT DISTINCT stream
    FROM (SELECT r.stream, r.is_watch,
                 r.rv <= max(r.rv) OVER (PARTITION BY r.stream ORDER BY r.recv, r.req_id
                                         ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING) AS not_higher
          FROM reqs_win r
          SEMI JOIN (SELECT stream FROM reqs_win GROUP BY stream HAVING count(*) > 1) m ON m.stream = r.stream)
    WHERE is_watch AND not_higher
),
watch_reqs AS (
    SELECT r.* FROM reqs_win r SEMI JOIN stream_cands c ON c.stream = r.stream WHERE r.is_watch
),
-- A stream whose watches each start after the one before it ended (in order of start; every watch but the last logged
-- as ended, and not before it started) is one loop: each watch's predecessor below would be the watch before it, and
-- the chain of them the whole stream. Most streams are such (a reflector runs one watch at a time), so only the watches
-- of the other streams go through the predecessors and the pointer jumping below (on the real recordings replicated to
-- 10M events those took a fifth of the rule's CPU time, for every watch)
stream_shapes AS (
    SELECT stream, bool_and(follows) AS one_loop
    FROM (SELECT stream,
                 coalesce(ended >= recv, lead(recv) OVER s IS NULL)
                 AND coalesce(recv > lag(ended) OVER s, true) AS follows
          FROM watch_reqs
          WINDOW s AS (PARTITION BY stream ORDER BY recv, req_id))
    GROUP BY stream
),
-- the watches of the streams that may run several loops at once
overlapping_reqs AS (
    SELECT w.* FROM watch_reqs w SEMI JOIN stream_shapes s ON s.stream = w.stream AND NOT s.one_loop
),
-- Watch loops. One client may run several watches of one collection at once (an unfiltered and a
-- metadata-only informer, two controllers in one process): their versions interleave, and only
-- each loop's own sequence says whether it went back. A client re-watches when its previous watch
-- ends, so a loop is a chain of non-overlapping watches: a watch continues the watch of its stream
-- that ended last before it started (up to watch_handover_ms later, as the end is logged after
-- the client saw it), and each watch is continued by one watch at most (the first).
-- The predecessor is the watch with the latest end among those that ended before the watch started (an ASOF
-- join) or, preferred as they ended later, that started before it and ended within the handover time after its start
-- (plus cross_apiserver_grace_ms when another apiserver logged it): joined on the stream and the slot of the end
-- (slots as wide as that longest handover, so a watch meets the ends of its own slot and the next), so that the cost
-- stays per watch, not per pair of a stream's watches (the stream key holds the cluster; audit IDs
-- are unique per cluster only, so every join on a request is keyed by cluster too).
handover_buckets AS (
    SELECT w.cluster, w.req_id, w.stream, w.recv, w.apiserver,
           unnest([epoch_ms(w.recv) // CAST(greatest(1, ceil(CAST($watch_handover_ms AS DOUBLE) + CAST($cross_apiserver_grace_ms AS DOUBLE))) AS BIGINT), epoch_ms(w.recv) // CAST(greatest(1, ceil(CAST($watch_handover_ms AS DOUBLE) + CAST($cross_apiserver_grace_ms AS DOUBLE))) AS BIGINT) + 1]) AS slot
    FROM overlapping_reqs w
),
ended_watches AS (
    SELECT stream, cluster, req_id, apiserver, recv, ended, epoch_ms(ended) // CAST(greatest(1, ceil(CAST($watch_handover_ms AS DOUBLE) + CAST($cross_apiserver_grace_ms AS DOUBLE))) AS BIGINT) AS slot
    FROM overlapping_reqs
    -- a watch logged as ending before it started (a broken clock or log) continues no other: so every link goes
    -- forward in time, the links never close a cycle, and the pointer jumping of loops ends
    WHERE ended IS NOT NULL AND ended >= recv
),
pred_handover AS (
    SELECT w.cluster, w.req_id, arg_max(p.req_id, p.ended) AS prev_id
    FROM handover_buckets w
    JOIN ended_watches p
      ON p.stream = w.stream AND p.slot = w.slot
     AND p.recv < w.recv AND p.ended >= w.recv
     AND p.ended <= w.recv + to_microseconds(CAST((CAST($watch_handover_ms AS DOUBLE)
                            + CASE WHEN p.apiserver <> w.apiserver THEN CAST($cross_apiserver_grace_ms AS DOUBLE) ELSE 0 END) * 1000 AS BIGINT))
    GROUP BY w.cluster, w.req_id
),
pred_before AS (
    SELECT w.cluster, w.req_id, p.req_id AS prev_id
    FROM overlapping_reqs w
    ASOF JOIN ended_watches p
      ON p.stream = w.stream AND p.ended < w.recv
),
pred AS (
    SELECT coalesce(h.cluster, b.cluster) AS cluster, coalesce(h.req_id, b.req_id) AS req_id,
           coalesce(h.prev_id, b.prev_id) AS prev_id
    FROM pred_handover h
    FULL JOIN pred_before b ON b.cluster = h.cluster AND b.req_id = h.req_id
),
links AS (
    SELECT p.cluster, p.prev_id, arg_min(p.req_id, w.recv) AS req_id
    FROM pred p JOIN overlapping_reqs w ON w.cluster = p.cluster AND w.req_id = p.req_id
    GROUP BY p.cluster, p.prev_id
),
-- Each watch's loop is named by the loop's first watch, found by pointer jumping: every watch starts at its
-- predecessor, and each round replaces the watch it points at by where that one points, until it points at the
-- first watch of its loop (which has no predecessor). A loop of L watches is resolved in about log2(L) rounds, each
-- over the watches still on their way; walking the chain one link per round instead took L rounds, each joining
-- the whole link table (quadratic in a long-lived client's loop). USING KEY keeps one row per watch, which a round
-- overwrites, and lets it read every watch's current row (recurring.loops).
-- Only the watches with a link take part (a watch that neither continues nor is continued is a loop of its own, and
-- those are most watches of short-lived clients): a continued watch that continues none is the first of its loop.
-- A round's join is written with the watches on their way on the right, so that DuckDB builds its hash table on them
-- (its estimates of both sides are equal): built on the recurring table, every watch was hashed again in every round
-- (41M rows on the real recordings replicated to 10M events, 5-10 s of the rule's 25).
loops(cluster, req_id, loop_id, at_first) USING KEY (cluster, req_id) AS (
    SELECT l.cluster, l.req_id, l.prev_id, false
    FROM links l
    UNION ALL
    SELECT l.cluster, l.prev_id, l.prev_id, true
    FROM links l
    ANTI JOIN links c ON c.cluster = l.cluster AND c.req_id = l.prev_id
    UNION
    SELECT c.cluster, c.req_id, p.loop_id, p.at_first
    FROM recurring.loops p
    JOIN loops c ON c.cluster = p.cluster AND c.loop_id = p.req_id
    WHERE NOT c.at_first
),
-- the sequence of watch requests of each loop, with what came before (a stream of one loop is one partition: its loop
-- key is NULL)
watches AS (
    SELECT w.cluster, w.req_id, w.stream, w.apiserver, w.recv, w.ended, w.latency_ms, w.code, w.rv, w.in_win,
           max(w.rv) OVER (PARTITION BY w.stream, w.loop_key ORDER BY w.recv, w.req_id
                           ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING) AS prev_max_rv,
           lag(w.rv) OVER s AS prev_rv,
           lag(w.req_id) OVER s AS prev_req_id,
           lag(w.recv) OVER s AS prev_recv,
           lag(w.ended) OVER s AS prev_ended,
           lag(w.apiserver) OVER s AS prev_apiserver
    FROM (SELECT w.*, CASE WHEN NOT k.one_loop THEN coalesce(c.loop_id, w.req_id) END AS loop_key
          FROM watch_reqs w
          JOIN stream_shapes k ON k.stream = w.stream
          LEFT JOIN loops c ON c.cluster = w.cluster AND c.req_id = w.req_id) w
    WINDOW s AS (PARTITION BY w.stream, w.loop_key ORDER BY w.recv, w.req_id)
),
-- lists answered 410 (a stale resourceVersion), not later pages of a paginated list
gone_lists AS (
    SELECT l.*
    FROM reqs_win l
    SEMI JOIN stream_cands c ON c.stream = l.stream
    WHERE NOT l.is_watch
),
-- stale-version answers: a watch from version V that ended within milliseconds, then a list with V answered 410
stale AS (
    SELECT l.cluster, l.stream, l.req_id, l.recv, l.rv, l.in_win,
           arg_max(w.req_id, w.recv) AS watch_req_id
    FROM gone_lists l
    JOIN watches w
      ON w.stream = l.stream AND w.rv = l.rv
     AND w.recv <= l.recv
     AND l.recv <= w.recv + to_microseconds(CAST(CAST($stale_list_window_s AS DOUBLE) * 1000000 AS BIGINT))
     AND coalesce(w.code, 200) = 200
     AND w.latency_ms <= CAST($stale_watch_max_ms AS DOUBLE)
    GROUP BY ALL
),
-- the watches that repeat their stream's newest version, where a write may prove a rewind: the window [lo, hi] in
-- which a write logged by the previous watch's apiserver proves it (one logged by another apiserver must fall
-- cross_apiserver_grace_ms before hi), cut into minutes (bucket), so that the writes meet them in a hash join on
-- their cluster, scope and minute instead of every write of the resource
repeat_cands AS (
    SELECT w.cluster, w.req_id, k.resource_hash, k.namespace_hash, k.name_hash, w.rv, w.prev_apiserver,
           w.prev_recv AS lo,
           least(coalesce(w.prev_ended, w.recv), w.recv)
               - to_microseconds(CAST(CAST($write_delivery_grace_ms AS DOUBLE) * 1000 AS BIGINT)) AS hi
    FROM watches w
    JOIN reqs k ON k.cluster = w.cluster AND k.req_id = w.req_id
    WHERE w.rv = w.prev_rv
      AND w.rv >= w.prev_max_rv
      AND k.judged_by_writes
),
-- A window of a day or more (a watch asked to stay open for days, or times years apart in a damaged log: a billion
-- minutes from year 1 to 2026) is cut only into the minutes in which an event of its resource was logged (write_keys
-- then reads the writes among them), found by a join on the resource. DuckDB builds that join on the long windows in the
-- rule's plan, so it stops at once when there are none (an empty build side); in other plans of this query (a prefix
-- of it, or with the requests grouped differently) it built on the 10M events instead (1.8 s, and out of memory under
-- 250MB: BENCHMARKS.md, "watch-rewind in less than half the memory"). It reads audit_events, not writes: another reader
-- of writes made DuckDB materialize the scan under it, every event (1.9 s at 10M events)
repeat_buckets AS (
    SELECT c.*, unnest(generate_series(epoch_ms(c.lo) // 60000, epoch_ms(c.hi) // 60000)) AS bucket
    FROM repeat_cands c
    WHERE c.hi >= c.lo AND epoch_ms(c.hi) // 60000 - epoch_ms(c.lo) // 60000 < 1440
    UNION ALL
    SELECT DISTINCT c.*, epoch_ms(a.stage_at) // 60000 AS bucket
    FROM repeat_cands c
    JOIN audit_events a ON coalesce(a.cluster, '') = c.cluster AND hash(coalesce(a.api_group, ''), a.resource) = c.resource_hash
                       AND a.stage_at >= c.lo AND a.stage_at <= c.hi
                       -- the bounds of writes: a long window of a short run reads no more than its lookback
                       AND a.stage_at >= ks_lookback_start($lookback_since, $since) AND a.stage_at <= ks_window_end($until)
    WHERE epoch_ms(c.hi) // 60000 - epoch_ms(c.lo) // 60000 >= 1440
),
-- each write under the scopes of the watches it is delivered to (its namespace or all, its name or all), unnested
-- in the select list (no lateral join), and only the writes in a minute where a watch of their resource waits for
-- proof: joined to those minutes made distinct, so that DuckDB builds its hash table on them, not on the millions of
-- writes (a semi join built it on the writes: 7 of the rule's 55 s on the real recordings at 10M events), and stops
-- reading the writes at once when no watch repeats its version (an empty build side)
-- (the writes' apiserver, collection and scopes hashed as reqs has the watches')
write_keys AS (
    SELECT x.cluster, hash(x.apiserver) AS apiserver, x.audit_id, x.verb, b.resource_hash, x.namespace, x.name, x.at,
           greatest(TRY_CAST(x.object_rv AS BIGINT), x.response_rv) AS rv_seen,
           x.always_writes, epoch_ms(x.at) // 60000 AS bucket,
           -- a write with no namespace (or name) has the same scope twice: repeat_proof's minimums take it twice alike,
           -- where dropping the repeats (list_distinct) took 0.35 s of the rule on the real recordings at 10M events
           unnest([{'ns': hash(x.namespace), 'name': hash(x.name)}, {'ns': hash(x.namespace), 'name': hash('')},
                   {'ns': hash(''), 'name': hash(x.name)}, {'ns': hash(''), 'name': hash('')}]) AS scope
    FROM writes x
    JOIN (SELECT DISTINCT cluster, resource_hash, bucket FROM repeat_buckets) b
      ON b.cluster = x.cluster AND b.resource_hash = hash(x.api_group, x.resource) AND b.bucket = epoch_ms(x.at) // 60000
),
-- the first write that proves the client was sent a newer version than the one it repeats
repeat_proof AS (
    SELECT w.cluster, w.req_id,
           arg_min(x.audit_id, x.at) AS write_audit_id,
           arg_min(x.verb || ' ' || CASE WHEN x.namespace <> '' THEN x.namespace || '/' ELSE '' END || x.name, x.at) AS write_what,
           arg_min(x.rv_seen, x.at) AS write_rv,
           min(x.at) AS write_at
    FROM repeat_buckets w
    JOIN write_keys x
      ON x.cluster = w.cluster AND x.resource_hash = w.resource_hash
     AND x.scope.ns = w.namespace_hash AND x.scope.name = w.name_hash AND x.bucket = w.bucket
     AND x.at >= w.lo
     AND x.at <= w.hi - to_microseconds(CAST(CASE WHEN x.apiserver <> w.prev_apiserver
                                                  THEN CAST($cross_apiserver_grace_ms AS DOUBLE) * 1000 ELSE 0 END AS BIGINT))
     AND (x.rv_seen > w.rv OR (x.rv_seen IS NULL AND x.always_writes))
    GROUP BY w.cluster, w.req_id
),
-- the watches that ask again for a version already answered 410 Expired to their stream (a join, where a correlated
-- EXISTS had DuckDB group every watch by stream, version and time to look them up)
expired_again AS (
    SELECT w.cluster, w.req_id
    FROM watches w
    SEMI JOIN gone_lists g ON g.stream = w.stream AND g.rv = w.rv AND g.recv < w.recv
),
-- the rewinds, in the window or its lookback: only the watches with a reason are kept (all watches were, 698K rows on
-- the real recordings replicated to 10M events, held to the end of the query for the 64K rewinds among them and the
-- evidence's look-ups); the evidence finds the watch before a rewind, and the watch of a stale-version answer, in
-- watches, and leaves out those that are rewinds themselves (listed as such) by an anti join on classified
classified AS (
    SELECT w.*,
           p.write_audit_id, p.write_what, p.write_rv,
           CASE WHEN w.rv < w.prev_max_rv THEN 'backwards'
                WHEN e.req_id IS NOT NULL THEN 'expired-again'
                WHEN p.req_id IS NOT NULL THEN 'repeat-after-write'
           END AS reason
    FROM watches w
    LEFT JOIN repeat_proof p ON p.cluster = w.cluster AND p.req_id = w.req_id
    LEFT JOIN expired_again e ON e.cluster = w.cluster AND e.req_id = w.req_id
    WHERE reason IS NOT NULL
),
-- only what happened inside the window is reported; the lookback before it only informs
rewinds AS (
    SELECT * FROM classified WHERE in_win
),
-- rewinds counting the lookback: a stream whose threshold is reached only with the rewinds just before the
-- window is reported when one of them lies in the window
lookback_rewinds AS (
    SELECT stream, count(*) AS n_all
    FROM classified
    GROUP BY stream
),
streams AS (
    SELECT r.stream,
           any_value(r.cluster) AS cluster,
           -- a request of the stream, whose key (client, collection, selectors) names the stream
           any_value(r.req_id) AS key_req_id,
           count(*) AS rewinds,
           any_value(lr.n_all) AS rewinds_with_lookback,
           count(*) FILTER (WHERE r.reason = 'backwards') AS n_backwards,
           count(*) FILTER (WHERE r.reason = 'repeat-after-write') AS n_repeat,
           count(*) FILTER (WHERE r.reason = 'expired-again') AS n_expired_again,
           min(r.recv) AS first_at, max(r.recv) AS last_at,
           -- the first rewind of each kind, as an example in the summary
           arg_min(r.prev_max_rv, r.recv) FILTER (WHERE r.reason = 'backwards') AS back_from,
           arg_min(r.rv, r.recv) FILTER (WHERE r.reason = 'backwards') AS back_to,
           min(r.recv) FILTER (WHERE r.reason = 'backwards') AS back_at,
           arg_min(r.rv, r.recv) FILTER (WHERE r.reason = 'repeat-after-write') AS repeat_rv,
           min(r.recv) FILTER (WHERE r.reason = 'repeat-after-write') AS repeat_at,
           arg_min(r.write_what, r.recv) FILTER (WHERE r.reason = 'repeat-after-write') AS repeat_write,
           list_sort(list_distinct(list(r.rv))) AS rewound_to
    FROM rewinds r
    JOIN lookback_rewinds lr USING (stream)
    GROUP BY r.stream
    HAVING any_value(lr.n_all) >= CAST($min_rewinds_count AS BIGINT)
),
stream_stale AS (
    SELECT s.stream, count(*) AS n_stale, min(s.recv) AS first_at, max(s.recv) AS last_at
    FROM stale s
    WHERE s.in_win
    GROUP BY s.stream
),
stream_max AS (
    SELECT w.stream, max(w.rv) AS max_rv, count(*) FILTER (WHERE w.in_win) AS n_watches
    FROM watches w
    GROUP BY w.stream
),
-- evidence: every rewind with the watch before it, and the stale-version answers (watch + 410 list); what the
-- request itself logged (code, latency, file and line) is looked up for these rows only
ev_rows AS (
    SELECT cluster, stream, recv, req_id, 'watch' AS verb, reason, rv, prev_rv, prev_max_rv, prev_req_id,
           write_audit_id, write_what, write_rv
    FROM rewinds
    UNION
    SELECT p.cluster, p.stream, p.recv, p.req_id, 'watch', NULL, p.rv, p.prev_rv, p.prev_max_rv, p.prev_req_id,
           NULL, NULL, NULL
    FROM watches p
    JOIN rewinds r ON r.stream = p.stream AND r.prev_req_id = p.req_id
    ANTI JOIN classified c ON c.cluster = p.cluster AND c.req_id = p.req_id
    UNION
    SELECT w.cluster, w.stream, w.recv, w.req_id, 'watch', NULL, w.rv, w.prev_rv, w.prev_max_rv, w.prev_req_id,
           NULL, NULL, NULL
    FROM watches w
    JOIN stale s ON s.stream = w.stream AND s.watch_req_id = w.req_id
    ANTI JOIN classified c ON c.cluster = w.cluster AND c.req_id = w.req_id
    WHERE s.in_win
    UNION
    SELECT s.cluster, s.stream, s.recv, s.req_id, 'list', NULL, s.rv, NULL, NULL, s.watch_req_id,
           NULL, NULL, NULL
    FROM stale s
    WHERE s.in_win
),
-- the files the evidence cites, by the hash each request carries: the window's files grouped by their hash first, and
-- only then joined to the cited ones; a semi join on the hash probed it for every event (alone at 10M events, 0.03 s
-- grouped first against 0.19 s joined)
ev_files AS (
    SELECT f.file_hash, f.source_file
    FROM (SELECT hash(a.source_file) AS file_hash, any_value(a.source_file) AS source_file
          FROM audit_events a
          WHERE a.received_at >= ks_lookback_start($lookback_since, $since) AND a.received_at <= ks_window_end($until)
          GROUP BY 1) f
    SEMI JOIN (SELECT DISTINCT k.file_hash
               FROM ev_rows e JOIN reqs k ON k.cluster = e.cluster AND k.req_id = e.req_id) c
      ON c.file_hash = f.file_hash
),
-- Up to here a request is named by the hash of its cluster's auditID (req_id): grouped, joined and sorted as a number,
-- where the 36-character strings took nearly a third of the rule's CPU time on the real recordings replicated to 10M
-- events (BENCHMARKS.md). Two of 10M requests share a number with a chance of about 3 in a million; an auditID the
-- client chose (the Audit-ID header) may be shared by two requests anyway. The strings are read again only for the
-- requests a finding shows (its evidence items, the watch before each, each reported stream's key request) from their
-- events (shown_events): the watches' in a scan of them, the lists' among the lists answered 410 (gone_list_ids): no
-- finding, no scan (an empty build side)
shown_reqs AS (
    SELECT e.cluster, e.req_id FROM ev_rows e SEMI JOIN streams s USING (stream)
    UNION
    SELECT e.cluster, e.prev_req_id FROM ev_rows e SEMI JOIN streams s USING (stream) WHERE e.prev_req_id IS NOT NULL
    UNION
    SELECT cluster, key_req_id FROM streams
),
-- the events of those requests, with the stream key's strings as each logged them
shown_events AS (
    SELECT coalesce(a.cluster, '') AS cluster, hash(a.audit_id) AS req_id, a.audit_id,
           coalesce(a.stage_at, a.received_at, 'infinity'::TIMESTAMPTZ) AS t,
           a.username, a.user_agent, a.source_ips[1] AS client_ip, a.api_group, a.api_version, a.resource,
           a.namespace, a.name, a.label_selector, a.field_selector
    FROM audit_events a
    SEMI JOIN shown_reqs r ON r.cluster = coalesce(a.cluster, '') AND r.req_id = hash(a.audit_id)
    WHERE a.verb = 'watch'
      AND a.received_at >= ks_lookback_start($lookback_since, $since) AND a.received_at <= ks_window_end($until)
    UNION ALL
    -- every list the rule follows is one of these, found before
    SELECT g.cluster, hash(g.audit_id), g.audit_id, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL
    FROM gone_list_ids g
    SEMI JOIN shown_reqs r ON r.cluster = g.cluster AND r.req_id = hash(g.audit_id)
),
req_strings AS (
    SELECT cluster, req_id, min(audit_id) AS audit_id FROM shown_events GROUP BY cluster, req_id
),
-- each finding's evidence in time order: each stream's list is sorted once built, on (recv, audit ID) carried beside
-- the item (neither is NULL here: the scans and joins above drop such requests), not by an ordered aggregate
-- (list(... ORDER BY ...)), which buffered so much per stream that on the samples mix at 10M events (5,759 streams
-- with findings) the rule ran out of memory at 850MB
ev AS (
    SELECT e.stream,
           count(*) AS n_items,
           list_transform(list_sort(list({'recv': e.recv, 'audit_id': i.audit_id, 'item': struct_pack(
                    "at" := ks_time_us(e.recv),
                    audit_id := i.audit_id,
                    file := f.source_file,
                    line := k.source_line,
                    verb := e.verb,
                    resource_version := e.rv,
                    code := k.code,
                    latency_ms := round(k.latency_ms, 1),
                    timeout_seconds := CASE WHEN e.verb = 'watch' THEN k.timeout_s END,
                    rewind := CASE WHEN e.verb = 'list' THEN 'stale-version answer: ' || coalesce(k.status_reason, 'Gone')
                                   ELSE e.reason END,
                    previous_resource_version := e.prev_rv,
                    highest_previous_resource_version := e.prev_max_rv,
                    previous_audit_id := p.audit_id,
                    write_audit_id := e.write_audit_id,
                    write := e.write_what,
                    write_resource_version := e.write_rv)})), x -> x.item) AS items
    FROM ev_rows e
    JOIN streams s USING (stream)
    JOIN reqs k ON k.cluster = e.cluster AND k.req_id = e.req_id
    LEFT JOIN req_strings i ON i.cluster = e.cluster AND i.req_id = e.req_id
    LEFT JOIN req_strings p ON p.cluster = e.cluster AND p.req_id = e.prev_req_id
    LEFT JOIN ev_files f ON f.file_hash = k.file_hash
    GROUP BY e.stream
),
-- the strings of each reported stream's key, as the first event of its key request logged them (one struct per stream
-- in the aggregate: one per shown request ran out of memory under 200MB on the real recordings replicated to 10M events)
stream_keys AS (
    SELECT stream, key.username, key.user_agent, key.client_ip, key.api_group, key.api_version, key.resource,
           key.namespace, key.obj_name, key.label_selector, key.field_selector
    FROM (SELECT s.stream,
           arg_min({'username': coalesce(e.username, ''), 'user_agent': coalesce(e.user_agent, ''),
                    'client_ip': coalesce(e.client_ip, ''), 'api_group': coalesce(e.api_group, ''),
                    'api_version': coalesce(e.api_version, ''), 'resource': e.resource,
                    'namespace': coalesce(e.namespace, ''), 'obj_name': coalesce(e.name, ''),
                    'label_selector': coalesce(e.label_selector, ''), 'field_selector': coalesce(e.field_selector, '')},
                   e.t) AS key
          FROM streams s
          JOIN shown_events e ON e.cluster = s.cluster AND e.req_id = s.key_req_id
          GROUP BY s.stream)
),
findings AS (
    SELECT s.*,
           k.username, k.user_agent, k.client_ip, k.api_group, k.resource, k.namespace, k.obj_name, k.label_selector,
           k.field_selector,
           coalesce(st.n_stale, 0) AS n_stale,
           st.first_at AS stale_first_at,
           least(s.first_at, st.first_at) AS first_seen,
           greatest(s.last_at, st.last_at) AS last_seen,
           m.max_rv, m.n_watches,
           e.items, e.n_items
    FROM streams s
    JOIN stream_keys k USING (stream)
    LEFT JOIN stream_stale st USING (stream)
    LEFT JOIN stream_max m USING (stream)
    LEFT JOIN ev e USING (stream)
)
SELECT 'watch-rewind' AS rule,
       CASE WHEN f.rewinds >= CAST($critical_rewinds_count AS BIGINT) OR f.n_stale > 0 THEN 'critical' ELSE 'warning' END AS severity,
       f.cluster,
       f.namespace,
       f.resource || CASE WHEN f.api_group <> '' THEN '.' || f.api_group ELSE '' END ||
           CASE WHEN f.obj_name <> '' AND f.field_selector NOT IN ('metadata.name=' || f.obj_name, 'metadata.name==' || f.obj_name)
                THEN '/' || f.obj_name ELSE '' END ||
           CASE WHEN f.label_selector <> '' THEN ' labelSelector=' || f.label_selector ELSE '' END ||
           CASE WHEN f.field_selector <> '' THEN ' fieldSelector=' || f.field_selector ELSE '' END AS name,
       trim(f.username || ' ' || f.user_agent) AS subject,
       f.first_seen,
       f.last_seen,
       CAST(f.rewinds AS BIGINT) AS count,
       struct_pack(username := f.username, client_ip := f.client_ip, resource := f.resource, api_group := f.api_group,
                   object_name := f.obj_name, watches := CAST(f.n_watches AS BIGINT),
                   backwards := CAST(f.n_backwards AS BIGINT), back_from := f.back_from, back_to := f.back_to, back_at := f.back_at,
                   repeats := CAST(f.n_repeat AS BIGINT), repeat_rv := f.repeat_rv, repeat_at := f.repeat_at, repeat_write := f.repeat_write,
                   expired_again := CAST(f.n_expired_again AS BIGINT),
                   rewinds_with_lookback := CAST(f.rewinds_with_lookback AS BIGINT), rewound_to := f.rewound_to, max_rv := f.max_rv,
                   stale_answers := CAST(f.n_stale AS BIGINT), stale_first_at := f.stale_first_at,
                   evidence_items := CAST(f.n_items AS BIGINT)) AS facts,
       to_json(f.items[1:100]) AS evidence
FROM findings f
ORDER BY first_seen, f.cluster, namespace, name, subject, f.client_ip
