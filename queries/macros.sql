-- Macros shared by the rules' queries (and available to user rules): created as TEMP macros (and one TEMP view) on the
-- analysis connection before the rules run. Names start with ks_.

-- the analysis window: $since/$until (NULL = unbounded) as TIMESTAMPTZ bounds
CREATE OR REPLACE TEMP MACRO ks_window_start(since) AS coalesce(CAST(since AS TIMESTAMPTZ), '-infinity'::TIMESTAMPTZ);
CREATE OR REPLACE TEMP MACRO ks_window_end(until) AS coalesce(CAST(until AS TIMESTAMPTZ), 'infinity'::TIMESTAMPTZ);

-- times in evidence: RFC3339 UTC with microseconds, milliseconds or seconds
CREATE OR REPLACE TEMP MACRO ks_time_us(t) AS strftime(t AT TIME ZONE 'UTC', '%Y-%m-%dT%H:%M:%S.%fZ');
CREATE OR REPLACE TEMP MACRO ks_time_ms(t) AS strftime(t AT TIME ZONE 'UTC', '%Y-%m-%dT%H:%M:%S.%gZ');
CREATE OR REPLACE TEMP MACRO ks_time_s(t) AS strftime(t AT TIME ZONE 'UTC', '%Y-%m-%dT%H:%M:%SZ');

-- a rule that runs in pieces ($piece of $pieces, see rules.Pieces) reads only the rows whose cluster and namespace
-- hash to its piece: no finding of such a rule spans two namespaces. The pieces are equal ranges of the 64-bit hash,
-- computed in integers, so that piece p of P holds exactly the rows of pieces p*k .. p*k + k - 1 of P*k (a piece that
-- runs out of memory is run again as those, see analyze)
CREATE OR REPLACE TEMP MACRO ks_hash_in_piece(h, piece, pieces) AS
    (CAST(h AS HUGEINT) * CAST(pieces AS HUGEINT)) >> 64 = CAST(piece AS HUGEINT);
CREATE OR REPLACE TEMP MACRO ks_in_piece(cluster, namespace, piece, pieces) AS
    ks_hash_in_piece(hash(coalesce(cluster, ''), coalesce(namespace, '')), piece, pieces);
-- or, for watch-rewind, the requests of the watch streams (a client's list/watch loop on one collection: see
-- queries/watch-rewind.sql) that hash to its piece; in one piece no key is hashed. ks_stream_key is the hash of a
-- stream's key
CREATE OR REPLACE TEMP MACRO ks_stream_key(cluster, username, user_agent, client_ip, api_group, api_version, resource,
                                           namespace, name, label_selector, field_selector) AS
    hash(coalesce(cluster, ''), coalesce(username, ''), coalesce(user_agent, ''), coalesce(client_ip, ''),
         coalesce(api_group, ''), coalesce(api_version, ''), coalesce(resource, ''), coalesce(namespace, ''),
         coalesce(name, ''), coalesce(label_selector, ''), coalesce(field_selector, ''));
CREATE OR REPLACE TEMP MACRO ks_stream_in_piece(cluster, username, user_agent, client_ip, api_group, api_version, resource,
                                                namespace, name, label_selector, field_selector, piece, pieces) AS
    CAST(pieces AS BIGINT) = 1
    OR ks_hash_in_piece(ks_stream_key(cluster, username, user_agent, client_ip, api_group, api_version, resource,
                                      namespace, name, label_selector, field_selector), piece, pieces);
-- or, for a rule whose findings are each about one object, only the rows of the objects (cluster, namespace, name) of
-- its piece, when the namespaces in order take consecutive shares of all the rows (total): a namespace's rows are
-- [before, before + n), each of its objects stands at a point of that range set by a hash of its name, and the object
-- is in the piece of that point (of pieces equal shares of total), which lies within the pieces the namespace's range
-- meets (before * pieces // total .. ceil((before + n) * pieces / total) - 1). So every piece gets its share of each
-- namespace it meets: a namespace smaller than a piece stays in one or two pieces, a large one is spread over its
-- range, and the pieces stay equal however the namespaces fall on their bounds (see queries/election-lock-churn.sql).
-- The point is before + n * hash / 2^64, in integers scaled by 2^64, so that the pieces nest as ks_in_piece's do
-- (with one piece, every object without the arithmetic: 0.6 CPU-s of election-lock-churn's 882,244 writes on the real
-- recordings replicated to 10M events)
CREATE OR REPLACE TEMP MACRO ks_object_in_piece(cluster, namespace, name, before, n, total, pieces, piece) AS
    CAST(pieces AS BIGINT) = 1
    OR ((CAST(before AS HUGEINT) << 64) + CAST(n AS HUGEINT) * CAST(hash(coalesce(cluster, ''), coalesce(namespace, ''), coalesce(name, '')) AS HUGEINT))
        * CAST(pieces AS HUGEINT) // (CAST(total AS HUGEINT) << 64)
        = CAST(piece AS HUGEINT);

-- the place of an object in 256 buckets (0-255), and the buckets that a piece's share of a namespace covers (with one
-- bucket of slack each side, for rounding; ks_object_in_piece decides): a staged table sorted by namespace and bucket,
-- joined on both, lets a piece's scan skip the row groups of the other pieces of a namespace that spans several
CREATE OR REPLACE TEMP MACRO ks_place_bucket(cluster, namespace, name) AS
    CAST(hash(coalesce(cluster, ''), coalesce(namespace, ''), coalesce(name, '')) >> 56 AS BIGINT);
CREATE OR REPLACE TEMP MACRO ks_piece_buckets(before, n, total, pieces, piece) AS
    range(greatest(CAST(floor((CAST(piece AS DOUBLE) * CAST(total AS DOUBLE) / CAST(pieces AS DOUBLE) - CAST(before AS DOUBLE))
                              / CAST(n AS DOUBLE) * 256) AS BIGINT) - 1, 0),
          least(CAST(floor((CAST(piece + 1 AS DOUBLE) * CAST(total AS DOUBLE) / CAST(pieces AS DOUBLE) - CAST(before AS DOUBLE))
                           / CAST(n AS DOUBLE) * 256) AS BIGINT) + 1, 255) + 1);

-- whether an annotation lock's audit writes make it a reported lock (election-lock-churn, and the coverage of its
-- endpoints watches): at least min_count updates, written at min_per_min or faster over span_s, the seconds from its
-- first to its last write (all at once counts as fast enough)
CREATE OR REPLACE TEMP MACRO ks_lock_written_often(updates, span_s, min_count, min_per_min) AS
    updates >= CAST(min_count AS BIGINT)
    AND (span_s = 0 OR updates * 60.0 / span_s >= CAST(min_per_min AS DOUBLE));

-- a *_usernames parameter (comma-separated users, e.g. the endpoints controllers) as a list
CREATE OR REPLACE TEMP MACRO ks_usernames(csv) AS list_filter(string_split(csv, ','), u -> u <> '');

-- election-lock-churn: whether a Lease can be an election: node heartbeats (kube-node-lease) and kube-apiserver
-- identity leases are not
CREATE OR REPLACE TEMP MACRO ks_election_lease(namespace, name) AS
    namespace <> 'kube-node-lease' AND NOT (namespace = 'kube-system' AND name LIKE 'apiserver-%');

-- ks_endpoint_watch_files: the snapshot files that are watch streams (kubectl get -w: a file holding several
-- observations of one object), each load of one, with the first and last time of its observations. Decided over
-- endpoint_objects, a row per load and object, not over every observation in endpoint_addresses, which every window
-- read whole: all rules over a 15-minute window beside a week of 15-minute snapshots took twice the time of the window
-- alone (BENCHMARKS.md). Per load (each load of a file is judged by its own observations) and cluster (a dataset
-- holds the loads of many databases).
CREATE OR REPLACE TEMP VIEW ks_endpoint_watch_files AS
SELECT source, coalesce(cluster, '') AS cluster, source_file, load_id, min(first_at) AS first_at, max(last_at) AS last_at
FROM endpoint_objects
WHERE source = 'snapshot'
GROUP BY ALL
HAVING bool_or(repeated);

-- ks_endpoint_observations(): the addresses of every observation of an Endpoints or EndpointSlice
-- (endpoint_addresses), with svc, the Service the object belongs to, and stream, where it was seen: 'audit',
-- 'watch FILE' (a load of ks_endpoint_watch_files, is_watch, with its first and last time: watch_first_at,
-- watch_last_at) or 'snapshots' (plain snapshots, ordered by capture time). Streams are never mixed, and neither are
-- clusters (cluster: "" when unknown). Shared by endpoint-flapping and the timeline.
CREATE OR REPLACE TEMP MACRO ks_endpoint_observations() AS TABLE
SELECT e.* REPLACE (coalesce(e.cluster, '') AS cluster),
       coalesce(e.service, e.name) AS svc,
       CASE WHEN e.source = 'audit' THEN 'audit'
            WHEN wf.source_file IS NOT NULL THEN 'watch ' || e.source_file
            ELSE 'snapshots' END AS stream,
       (wf.source_file IS NOT NULL) AS is_watch,
       wf.first_at AS watch_first_at, wf.last_at AS watch_last_at
FROM endpoint_addresses e
-- equalities only, so that it hashes instead of looping (a load id is NULL only in rows not loaded by an ingest: rule
-- tests)
LEFT JOIN ks_endpoint_watch_files wf
  ON wf.source = e.source AND wf.cluster = coalesce(e.cluster, '') AND wf.source_file = e.source_file
 AND wf.load_id IS NOT DISTINCT FROM e.load_id;

-- ks_address_states(since, until, dense := true): per cluster, stream, Service and address, its state at each
-- observation point of the Service within the window: ready / terminating / notReady / absent, the Service's
-- combined state (the latest observation of each of its Endpoints and EndpointSlices taken together),
-- with the point's time (ts), order (pt) and evidence (source_file, seq, source_line). A plain
-- snapshot file is one point of all the objects in it; an audit write or a watch event is one point.
-- dense gives every address ever seen at every point of its Service: addresses × points, hundreds of millions of
-- rows for a Service of 1,000 pods rolled 20 times. dense := false (endpoint-flapping, the timeline) gives the same
-- sequences with runs of absence cut to their first point: the points where an address is present, the point after
-- each of its runs (absent there, unless present), and one absent row at the first point for an address never
-- present at any (so that it still counts among the Service's addresses); as many rows as the observations hold
-- addresses. Both give the same changes of state at the same points, but for an address's absence before it first
-- appears, which only dense shows. piece of pieces (from 0; see ks_hash_in_piece) keeps only the Services (cluster,
-- namespace, Service) that hash to it, each with all its objects: endpoint-flapping runs in such pieces.
CREATE OR REPLACE TEMP MACRO ks_address_states(since, until, dense := true, piece := 0, pieces := 1) AS TABLE
WITH
-- the observations that may fall in the window: a plain snapshot's or an audit write's time is its capture time, so
-- those outside the window are left out before anything is grouped or ordered (a short window of a long database reads
-- its own observations, not all of them); a watch file's times come from the events before in the file, so its
-- observations are all read, but only of the watch loads whose observations span a time in the window (a time is the
-- latest of those before, so none lies before the load's first or after its last)
-- (obs_key and svc_id: the observation's key and the stream's Service (cluster, stream, namespace, svc) as one number
-- each, hashes of their columns, by which they are grouped and joined below: two of a million share one with a chance
-- of about 3 in 100 million. Joined on the eight columns of an observation, endpoint-flapping took 3.46-3.54 s instead
-- of 2.99-3.13 s on the real recordings replicated to 10M events, and 12.55-12.78 s instead of 11.73-11.82 s beside
-- 3.84M snapshot rows; partitioned and joined on the Service's four strings, its process took 4.25-4.37 s instead of
-- 3.89 s on the recordings, 4.29-4.55 s instead of 4.00-4.15 s on 10M independent events: BENCHMARKS.md)
r0 AS (
    SELECT *, hash(cluster, stream, kind, namespace, name, source_file, coalesce(object_seq, 0), source_line) AS obs_key,
           hash(cluster, stream, namespace, svc) AS svc_id
    FROM (
        -- two scans, not one under (is_watch OR …): only alone do the window's bounds filter the scan itself
        SELECT * FROM ks_endpoint_observations()
        WHERE NOT is_watch AND captured_at >= ks_window_start(since) AND captured_at <= ks_window_end(until)
        UNION ALL
        SELECT * FROM ks_endpoint_observations()
        WHERE is_watch AND watch_last_at >= ks_window_start(since) AND watch_first_at <= ks_window_end(until)
    )
    WHERE CAST(pieces AS BIGINT) = 1 OR ks_hash_in_piece(hash(cluster, coalesce(namespace, ''), svc), piece, pieces)
),
-- one row per observation of an object
obs0 AS (
    SELECT cluster, stream, is_watch, kind, namespace, svc, name AS obj, source_file,
           coalesce(object_seq, 0) AS seq, source_line, any_value(obs_key) AS obs_key, any_value(svc_id) AS svc_id,
           any_value(captured_at) AS captured_at, any_value(change_time) AS change_time, bool_or(deleted) AS deleted
    FROM r0
    GROUP BY ALL
),
-- order: capture time (plain snapshots, audit), or position in the stream (watch files, whose times come from the
-- events before in the file: a window over the watch files' observations only, not over every audit write)
obs1 AS (
    SELECT o.*, o.captured_at AS ord_t, o.captured_at AS ts
    FROM obs0 o
    WHERE NOT o.is_watch
    UNION ALL
    SELECT o.*, NULL::TIMESTAMPTZ AS ord_t,
           max(coalesce(o.change_time, o.captured_at)) OVER (
               PARTITION BY o.cluster, o.stream, o.kind, o.namespace, o.obj ORDER BY o.seq, o.source_line
               ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW) AS ts
    FROM obs0 o
    WHERE o.is_watch
),
obs AS (
    SELECT o.*,
           -- an observation point of the Service: one capture (all objects of a plain snapshot file at
           -- once), or one write / one watch event (audit, watch files)
           dense_rank() OVER (PARTITION BY o.svc_id
                              ORDER BY o.ord_t NULLS FIRST, o.source_file,
                                       CASE WHEN o.stream = 'snapshots' THEN 0 ELSE o.seq END,
                                       CASE WHEN o.stream = 'snapshots' THEN 0 ELSE o.source_line END) AS pt
    FROM obs1 o
    WHERE o.ts >= ks_window_start(since) AND o.ts <= ks_window_end(until)
),
points AS (
    SELECT svc_id, pt, any_value(cluster) AS cluster, any_value(stream) AS stream, any_value(namespace) AS namespace,
           any_value(svc) AS svc, min(ts) AS ts, min(ord_t) AS ord_t,
           min(source_file) AS source_file, min(seq) AS seq, min(source_line) AS source_line
    FROM obs
    GROUP BY svc_id, pt
),
-- the objects of each Service, numbered, so that the as-of join below partitions on one number, not on the Service,
-- kind and name (on six strings, before svc_id, it took 0.8-1.4 s more of endpoint-flapping's 8.3-8.8 s on 10M
-- independent events)
objs AS (
    SELECT o.*, row_number() OVER () AS oid
    FROM (SELECT DISTINCT svc_id, kind, obj FROM obs) o
),
-- at each point, the latest observation of every object of the Service (Endpoints and all its
-- EndpointSlices): the Service's combined state, so that an address moving between slices
-- (rebalancing) or missing from a truncated Endpoints (1,000 addresses) is no removal. Each point
-- meets each object of its Service once, in an ASOF join on the object's last observation (the
-- last in the file when one point observed it twice): linear in points × objects, where joining
-- every earlier observation grew with the square of the observations of a Service.
obs_last AS (
    SELECT b.oid, o.pt, o.obs_key, o.deleted
    FROM obs o
    JOIN objs b ON b.svc_id = o.svc_id AND b.kind = o.kind AND b.obj = o.obj
    QUALIFY row_number() OVER (PARTITION BY b.oid, o.pt ORDER BY o.seq DESC, o.source_line DESC) = 1
),
point_objs AS (
    SELECT p.svc_id, p.pt, o.oid
    FROM points p
    JOIN objs o ON o.svc_id = p.svc_id
),
latest AS (
    SELECT p.svc_id, p.pt, o.obs_key, o.deleted
    FROM point_objs p
    ASOF JOIN obs_last o ON o.oid = p.oid AND o.pt <= p.pt
),
-- addresses ever seen in each stream/Service (in the window)
universe AS (
    SELECT DISTINCT r.svc_id, r.ip
    FROM r0 r
    SEMI JOIN obs o ON o.obs_key = r.obs_key
    WHERE r.ip IS NOT NULL
),
-- the combined state of each address at each point: ready in any object; else serving while
-- terminating (a pod shutting down gracefully); else present but not ready
present AS (
    SELECT l.svc_id, l.pt, r.ip,
           bool_or(r.ready) AS ready,
           bool_or(coalesce(r.serving, false) AND coalesce(r.terminating, false)) AS terminating,
           any_value(r.pod) AS pod
    FROM latest l
    JOIN r0 r ON r.obs_key = l.obs_key
    WHERE NOT l.deleted AND r.ip IS NOT NULL
    GROUP BY ALL
),
stream_kinds AS (
    SELECT svc_id, string_agg(DISTINCT kind, '+' ORDER BY kind) AS kind
    FROM obs
    GROUP BY svc_id
)
SELECT p.cluster, p.stream, k.kind, p.namespace, p.svc, p.svc AS obj, u.ip, p.pt, p.ts, p.ord_t, p.source_file, p.seq, p.source_line,
       x.pod,
       CASE WHEN x.ip IS NULL THEN 'absent' WHEN x.ready THEN 'ready' WHEN x.terminating THEN 'terminating'
            ELSE 'notReady' END AS state
FROM universe u
JOIN points p ON p.svc_id = u.svc_id
JOIN stream_kinds k ON k.svc_id = u.svc_id
LEFT JOIN present x ON x.svc_id = p.svc_id AND x.pt = p.pt AND x.ip = u.ip
WHERE dense
UNION ALL
-- not dense: the points where an address is present, and the point after each of its runs where it is not
SELECT p.cluster, p.stream, k.kind, p.namespace, p.svc, p.svc AS obj, x.ip, p.pt, p.ts, p.ord_t, p.source_file, p.seq, p.source_line,
       CASE WHEN x.after THEN NULL ELSE x.pod END AS pod,
       CASE WHEN x.after THEN 'absent' WHEN x.ready THEN 'ready' WHEN x.terminating THEN 'terminating'
            ELSE 'notReady' END AS state
FROM (SELECT x.*, false AS after FROM present x
      UNION ALL
      SELECT x.* REPLACE (x.pt + 1 AS pt), true AS after FROM present x
      -- an ANTI JOIN, not NOT EXISTS: DuckDB decorrelates the NOT EXISTS into a join on the distinct outer keys
      -- (IS NOT DISTINCT FROM), a tenth of endpoint-flapping's time on the real recordings replicated to 10M events
      ANTI JOIN present y ON y.svc_id = x.svc_id AND y.pt = x.pt + 1 AND y.ip = x.ip) x
JOIN points p ON p.svc_id = x.svc_id AND p.pt = x.pt
JOIN stream_kinds k ON k.svc_id = x.svc_id
WHERE NOT dense
UNION ALL
-- not dense: an address never present at any point, absent at the first
SELECT p.cluster, p.stream, k.kind, p.namespace, p.svc, p.svc AS obj, u.ip, p.pt, p.ts, p.ord_t, p.source_file, p.seq, p.source_line,
       NULL AS pod, 'absent' AS state
FROM universe u
JOIN points p ON p.svc_id = u.svc_id AND p.pt = 1
JOIN stream_kinds k ON k.svc_id = u.svc_id
ANTI JOIN present y ON y.svc_id = u.svc_id AND y.ip = u.ip
WHERE NOT dense;

-- whether an audit event is a successful write that advances its collection's resourceVersion (watch-rewind's writes
-- and the epochs it finds in them, queries/stages/watch-rewind-epochs.sql): a completed create, update, patch or delete
-- of an object, or of a subresource stored with it.
-- An IN list of a bare column is only a zone-map hint to DuckDB's scan, which then returns every column of the rows
-- its other filters keep for a filter above it; the same list over coalesce(column, '') is a filter the scan
-- evaluates itself, and a vector in which it keeps no row is skipped. Ingest orders each row group's events by kind
-- (writes, watches, lists, gets; then stage and resource: ingest/audit/layout.go), so that the events of other
-- kinds fill vectors of their own. The queries' scans of audit_events (rules, coverage, charts) write their IN lists
-- so.
CREATE OR REPLACE TEMP MACRO ks_advancing_write(stage, verb, code, resource, subresource) AS
    stage = 'ResponseComplete'
    AND coalesce(verb, '') IN ('create', 'update', 'patch', 'delete', 'deletecollection')
    AND code BETWEEN 200 AND 299
    AND resource IS NOT NULL
    AND coalesce(subresource, '') IN ('', 'status', 'scale', 'binding', 'ephemeralcontainers', 'resize', 'eviction');

-- the start of a rule's lookback: $lookback_since, else $since (NULL = unbounded)
CREATE OR REPLACE TEMP MACRO ks_lookback_start(lookback_since, since) AS coalesce(CAST(lookback_since AS TIMESTAMPTZ), CAST(since AS TIMESTAMPTZ), '-infinity'::TIMESTAMPTZ);

-- coverage queries: per cluster, the successful writes (create, update, patch) of `resources` (a list) in the window
-- by anyone but `skip_usernames` (a list), how many carry no body, and the level most of those were logged at
CREATE OR REPLACE TEMP MACRO ks_bare_writes(resources, skip_usernames, since, until) AS TABLE
SELECT coalesce(cluster, '') AS cluster, count(*) AS writes,
       count(*) FILTER (WHERE NOT has_body) AS bare,
       mode(level) FILTER (WHERE NOT has_body) AS bare_level
FROM audit_events
WHERE list_contains(resources, resource) AND coalesce(subresource, '') = ''
  AND coalesce(verb, '') IN ('create', 'update', 'patch') AND stage = 'ResponseComplete' AND code BETWEEN 200 AND 299
  AND NOT list_contains(skip_usernames, username)
  AND stage_at >= ks_window_start(since) AND stage_at <= ks_window_end(until)
GROUP BY ALL;

-- election-lock-churn's lock-capable writes: the successful writes of Endpoints, ConfigMaps and Leases, one row per
-- request, from the start of the lookback up to the end of the window (the previous state of an object is needed at the
-- start of the window; in_win marks the writes inside it; a lock whose last write before the window is older than the
-- lookback starts with an acquisition), with what their body says: the bodies themselves are not read (the rule's window
-- functions would hold every body in memory at once), and the name of a create without one in its objectRef is in its
-- body. What the rule reads of a body was taken from it at ingest (audit_events.body_fields). Read twice, not staged:
-- stage_lock_candidates takes the few columns its decision needs, stage_lock_writes every column of the candidates'
-- writes. A stage of all of them, read by both, took 1.6-2.9 s to make on the real recordings replicated to 10M events
-- (1.17M writes), more than the two scans (BENCHMARKS.md).
CREATE OR REPLACE TEMP MACRO ks_lock_writes_all(lookback_since, since, until) AS TABLE
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
             (a.stage_at >= ks_window_start(since)) AS in_win
      FROM audit_events a
      WHERE a.stage_at >= ks_lookback_start(lookback_since, since) AND a.stage_at <= ks_window_end(until)
        -- coalesce(…) IN: a filter the scan evaluates, not a zone-map hint (above ks_advancing_write)
        AND coalesce(a.resource, '') IN ('endpoints', 'configmaps', 'leases')
        AND coalesce(a.api_group, '') IN ('', 'coordination.k8s.io')
        AND coalesce(a.subresource, '') = ''
        AND coalesce(a.verb, '') IN ('create', 'update', 'patch')
        AND a.stage = 'ResponseComplete'
        AND a.code BETWEEN 200 AND 299
        -- node heartbeats are no election (the rule leaves kube-node-lease out), and a real cluster's bulk of Leases
        AND NOT (a.resource = 'leases' AND coalesce(a.namespace, '') = 'kube-node-lease')) b;
