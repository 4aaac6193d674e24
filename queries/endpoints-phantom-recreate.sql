-- endpoints-phantom-recreate: Endpoints (or EndpointSlices) deleted and recreated while their Service existed
-- throughout: the observable damage of a client acting on replayed (rewound) watch events.
--
-- A cycle is a successful delete (2xx) of an Endpoints or EndpointSlice followed, within max_recreate_delay_s, by a
-- successful create (2xx) of the same object by another user (typically the endpoints / endpointslice controller).
-- Endpoints are matched by name (= the Service); EndpointSlices by their Service (kubernetes.io/service-name label,
-- from the create body, the delete response or any observation of that slice in endpoint_addresses), since a recreated
-- slice gets a new generated name. Each create closes the latest delete before it; each delete takes its first create.
-- The Service "existed throughout" when the latest thing known about it at the delete is not a deletion and it was
-- neither deleted nor created between the delete and the recreate. What is known about a Service: its audit create
-- (from stageTimestamp), delete (from requestReceivedTimestamp: a Service delete removes its Endpoints inside the
-- apiserver with no audit event of their own), successful get/update/patch, snapshot observations (services table,
-- deleted rows as deletions) and its creationTimestamp (rounded up to the next second). With nothing known before the
-- delete, a recreate by the endpoints controllers themselves (they only create for an existing Service) and no Service
-- delete or create up to the recreate still counts (evidence says so). The legitimate Service delete/re-create is never
-- a cycle: the Service delete sits between (or is the latest thing known before) the Endpoints removal.
-- One finding per object and deleting client (username + userAgent); count = cycles; critical from
-- critical_cycles_count cycles.
-- The window bounds are bound into each scan's WHERE (not a cross-joined CTE) so that DuckDB filters the scans
-- themselves; joins match on equalities only (kind included), so that they hash instead of looping. Every join and
-- partition includes the cluster: two clusters' objects of the same name never meet.
WITH
-- successful deletes and creates of Endpoints and EndpointSlices, one row per request
ep_writes AS (
    SELECT coalesce(a.cluster, '') AS cluster, a.audit_id, a.verb,
           CASE WHEN a.resource = 'endpoints' THEN 'Endpoints' ELSE 'EndpointSlice' END AS kind,
           a.namespace,
           -- what the write's body says, taken from it at ingest (audit_events.body_fields): the name and uid in the
           -- response (metadata, else a Status's details), the Service label of the response, else of the request
           coalesce(a.name, a.body_fields[8], a.body_fields[9]) AS obj_name,
           coalesce(a.body_fields[10], a.body_fields[11]) AS obj_uid,
           coalesce(a.body_fields[12], a.body_fields[13]) AS body_service,
           coalesce(a.username, '') AS username, coalesce(a.user_agent, '') AS user_agent,
           a.received_at, a.stage_at, a.code, a.source_file, a.source_line,
           -- a slice's addresses, from the endpoints the write logged (an endpoint whose addresses are no list adds none)
           list_distinct(flatten(list_transform(json_extract(a.body_fields[7], '$[*].addresses'),
                                                x -> TRY_CAST(x AS VARCHAR[])))) AS body_addrs
    FROM audit_events a
    WHERE a.stage = 'ResponseComplete'
      -- an IN list or an OR is only a zone-map hint to DuckDB's scan, which then fetches body_fields of every write
      -- (1.8M on the real recordings replicated to 10M events) for the filter above it to keep 44,000; the same lists
      -- over coalesce(…) filter in the scan (macros.sql, above ks_advancing_write)
      AND coalesce(a.verb, '') IN ('create', 'delete')
      AND a.code BETWEEN 200 AND 299
      AND ((a.resource = 'endpoints' AND coalesce(a.api_group, '') = '')
           OR (a.resource = 'endpointslices' AND a.api_group = 'discovery.k8s.io'))
      AND coalesce(a.resource, '') IN ('endpoints', 'endpointslices')
      AND coalesce(a.subresource, '') = ''
      AND a.namespace IS NOT NULL
      AND a.stage_at >= ks_window_start($since) AND a.stage_at <= ks_window_end($until)
),
-- the Service and the addresses of each EndpointSlice the window's writes name, from every observation of it
-- (snapshots, watch streams, audit bodies) in endpoint_objects (a row per load and slice): read from
-- endpoint_addresses (a row per observed address) for every slice, each window scanned every observation of every
-- slice, and beside a week of 15-minute snapshots the rule took 5 times as long as over the window alone
-- (BENCHMARKS.md)
slice_history AS (
    SELECT coalesce(o.cluster, '') AS cluster, o.kind, o.namespace, o.name, min(o.service) AS service,
           list_distinct(flatten(list(o.ips))) AS addrs
    FROM endpoint_objects o
    SEMI JOIN ep_writes w ON w.cluster = coalesce(o.cluster, '') AND w.kind = o.kind AND w.namespace = o.namespace
                         AND w.obj_name = o.name
    WHERE o.kind = 'EndpointSlice'
    GROUP BY ALL
),
ep_keyed AS (
    SELECT w.*,
           CASE WHEN w.kind = 'Endpoints' THEN w.obj_name ELSE coalesce(w.body_service, s.service) END AS service,
           CASE WHEN len(w.body_addrs) > 0 THEN w.body_addrs ELSE s.addrs END AS addrs
    FROM ep_writes w
    LEFT JOIN slice_history s ON s.cluster = w.cluster AND s.kind = w.kind AND s.namespace = w.namespace AND s.name = w.obj_name
),
dels AS (SELECT * FROM ep_keyed WHERE verb = 'delete' AND service IS NOT NULL),
creates AS (SELECT * FROM ep_keyed WHERE verb = 'create' AND service IS NOT NULL),
-- How long before a slice create a delete can have started and still be recreated by it within the delay (the reach):
-- max_recreate_delay_s plus the longest any slice delete took (requestReceived to stage). A Service's slices are
-- matched by addresses, not by one name, so the creates meet its deletes in a hash join on the Service and the bucket
-- of this width (a create's own and the one before): per create, the deletes within its reach, where joining every
-- earlier delete of the Service grew with the square of its history (2.9M pairs for 44,000 writes on the real
-- recordings replicated to 10M events); // truncates toward zero, which leaves the buckets around 1970 twice as wide,
-- never narrower. When the latest delete before a create lies beyond its reach, so do all the others: the create
-- closes none within the delay either way (cycles_raw).
slice_reach AS (
    SELECT greatest(1, CAST(CAST($max_recreate_delay_s AS DOUBLE) * 1000000 AS BIGINT)
                       + coalesce(max(epoch_us(stage_at) - epoch_us(received_at)), 0)) AS reach_us
    FROM dels
    WHERE kind = 'EndpointSlice'
),
-- each create closes the latest delete of the same object that started before it completed. An Endpoints keeps its
-- name: an ASOF join finds that delete in one sorted pass, where pairing every create with every earlier delete of a
-- name grows with the square of its history. Each pair carries the times and users cycles_raw judges it by: joined
-- back to the deletes and creates by auditID instead, 1.8 of the rule's 6.7 s at 30M events of the independent mix in
-- DuckDB's profiler (0.1 of 1.5 s at 10M)
create_of AS (
    SELECT c.cluster, c.audit_id AS create_id, c.stage_at AS create_at, c.username AS creator,
           d.audit_id AS delete_id, d.stage_at AS delete_at, d.username AS deleter
    FROM (SELECT * FROM creates WHERE kind = 'Endpoints') c
    ASOF JOIN (SELECT * FROM dels WHERE kind = 'Endpoints') d
      ON d.cluster = c.cluster AND d.namespace = c.namespace AND d.obj_name = c.obj_name AND d.received_at <= c.stage_at
    UNION ALL
    SELECT cluster, create_id, create_at, creator, latest.id, latest.at, latest.username
    FROM (SELECT c.cluster, c.audit_id AS create_id, any_value(c.stage_at) AS create_at, any_value(c.username) AS creator,
                 arg_max({'id': d.audit_id, 'at': d.stage_at, 'username': d.username}, d.received_at) AS latest
          FROM (SELECT c.*, unnest([epoch_us(c.stage_at) // b.reach_us, epoch_us(c.stage_at) // b.reach_us - 1]) AS bucket
                FROM creates c, slice_reach b
                WHERE c.kind = 'EndpointSlice') c
          JOIN (SELECT d.*, epoch_us(d.received_at) // b.reach_us AS bucket
                FROM dels d, slice_reach b
                WHERE d.kind = 'EndpointSlice') d
            ON d.cluster = c.cluster AND d.namespace = c.namespace AND d.service = c.service AND d.bucket = c.bucket
           AND d.received_at <= c.stage_at
           -- a recreated slice gets a new generated name, so it must hold some of the deleted one's addresses (a
           -- Service's other slices, or a rebalancing of them, are not its recreation)
           AND (d.obj_name = c.obj_name OR len(list_intersect(d.addrs, c.addrs)) > 0)
          GROUP BY c.cluster, c.audit_id)
),
-- each delete takes its first create, if it came soon enough and from someone else
cycles_raw AS (
    SELECT cluster, delete_id, arg_min(create_id, create_at) AS create_id
    FROM create_of
    WHERE create_at <= delete_at + to_microseconds(CAST(CAST($max_recreate_delay_s AS DOUBLE) * 1000000 AS BIGINT))
      AND creator <> deleter
    GROUP BY cluster, delete_id
),
-- the deletes that cycles_raw keeps, with their creates' auditIDs. Materialized, so that the join to the creates
-- (cycles_joined) has this one input: with the deletes, the creates and cycles_raw joined in one query, the cluster
-- each shares made DuckDB free to join every delete with every create of a cluster first, which its estimates over a
-- dataset's Parquet files chose (3.5M pairs for a day of 650,000 events, and more than 12 GB spilled for a day of
-- 5.5M, where the database's plan joined cycles_raw first; BENCHMARKS.md)
cycle_deletes AS MATERIALIZED (
    SELECT r.create_id, d.*
    FROM cycles_raw r
    JOIN dels d ON d.cluster = r.cluster AND d.audit_id = r.delete_id
),
-- the window's snapshot observations of Endpoints, in order per object (for the snapshots-only path below, which
-- needs the history of their Services too)
snap_obs AS (
    SELECT DISTINCT coalesce(e.cluster, '') AS cluster, e.namespace, e.name, e.uid, e.captured_at, e.source_file, e.object_seq
    FROM endpoint_addresses e
    WHERE e.source = 'snapshot' AND e.kind = 'Endpoints' AND e.uid IS NOT NULL
      AND NOT coalesce(e.deleted, false)
      AND e.captured_at >= ks_window_start($since) AND e.captured_at <= ks_window_end($until)
),
snap_seq AS (
    SELECT o.*,
           lag(o.uid) OVER w AS prev_uid,
           lag(o.captured_at) OVER w AS prev_at,
           lag(o.source_file) OVER w AS prev_file
    FROM snap_obs o
    WINDOW w AS (PARTITION BY o.cluster, o.namespace, o.name ORDER BY o.captured_at, o.source_file, o.object_seq)
),
-- the Services whose history a cycle or a snapshot uid change needs
svc_needed AS (
    SELECT cluster, namespace, service AS name
    FROM cycle_deletes
    UNION
    SELECT cluster, namespace, name
    FROM snap_seq
    WHERE prev_uid IS NOT NULL AND uid <> prev_uid
),
-- the snapshots of those Services: those since an hour before the window, and all of them only for the Services
-- without a snapshot with a uid in that hour before the earliest time the lookups below look back from (the window's
-- start, or the receipt of a delete that started before it). With such a snapshot every older record lies before it
-- and decides nothing: a lookup takes the latest record before a time in the window or the earliest after one, and a
-- Service's creationTimestamp comes before its snapshots. (The recent snapshots of the Services read whole come twice,
-- which changes no lookup.) Reading every snapshot of the needed Services took 0.26 s of the rule's 0.42 s beside a week
-- of 15-minute snapshots of 300 Services (BENCHMARKS.md). The hour's bound is a constant, so the row groups'
-- statistics filter the scan. The Services to read whole come first in their join, which DuckDB then builds its hash
-- table on: with none (the common case) the scan of services ends at once, and a few filter it by their names; built
-- on the services rows instead (a NOT EXISTS planned that way), the join hashed every snapshot of every Service.
svc_recent AS (
    SELECT s.cluster, s.namespace, s.name, s.uid, s.captured_at, s.deleted, s.creation_timestamp, s.source, s.source_file
    FROM services s
    SEMI JOIN svc_needed n ON n.cluster = coalesce(s.cluster, '') AND n.namespace = s.namespace AND n.name = s.name
    WHERE s.captured_at >= ks_window_start($since) - INTERVAL 1 HOUR
),
svc_older_needed AS (
    SELECT n.*
    FROM svc_needed n
    ANTI JOIN (SELECT coalesce(s.cluster, '') AS cluster, s.namespace, s.name
               FROM svc_recent s
               WHERE s.uid IS NOT NULL
                 AND s.captured_at <= least(ks_window_start($since), (SELECT min(received_at) FROM dels))) r
      ON r.cluster = n.cluster AND r.namespace = n.namespace AND r.name = n.name
),
svc_snapshots AS (
    SELECT * FROM svc_recent
    UNION ALL
    SELECT s.cluster, s.namespace, s.name, s.uid, s.captured_at, s.deleted, s.creation_timestamp, s.source, s.source_file
    FROM svc_older_needed n
    JOIN services s ON n.cluster = coalesce(s.cluster, '') AND n.namespace = s.namespace AND n.name = s.name
),
-- what is known about each of those Services over time: its audit records from the start, from audit_services (the
-- Service requests of audit_events, whose scan grows with them instead of with every event), and its snapshots. Without
-- any cycle or uid change (the common case) the semi joins' build side is empty and the scans stop at once, and
-- otherwise only those Services' records are sorted for the as-of joins below.
svc_events AS (
    SELECT coalesce(a.cluster, '') AS cluster, a.namespace, a.name,
           CASE a.verb WHEN 'delete' THEN a.received_at ELSE a.stage_at END AS at,
           CASE a.verb WHEN 'delete' THEN 'delete' WHEN 'create' THEN 'create' ELSE 'seen' END AS what,
           a.uid, -- the response's metadata.uid, else details.uid
           'audit ' || a.verb || ' ' || a.audit_id AS source
    FROM audit_services a
    SEMI JOIN svc_needed n ON n.cluster = coalesce(a.cluster, '') AND n.namespace = a.namespace AND n.name = a.name
    WHERE coalesce(a.api_group, '') = ''
      AND coalesce(a.subresource, '') IN ('', 'status')
      AND a.stage = 'ResponseComplete' AND a.code BETWEEN 200 AND 299
      -- coalesce(…) IN: a filter the scan evaluates, not a zone-map hint (macros.sql, above ks_advancing_write)
      AND coalesce(a.verb, '') IN ('create', 'delete', 'get', 'update', 'patch')
      AND a.namespace IS NOT NULL AND a.name IS NOT NULL
    UNION ALL
    SELECT coalesce(s.cluster, ''), s.namespace, s.name, s.captured_at,
           CASE WHEN coalesce(s.deleted, false) THEN 'delete' ELSE 'seen' END,
           s.uid, s.source || ' ' || s.source_file
    FROM svc_snapshots s
    WHERE s.captured_at IS NOT NULL
    UNION ALL
    SELECT DISTINCT coalesce(s.cluster, ''), s.namespace, s.name, s.creation_timestamp + INTERVAL 1 SECOND, 'created', s.uid,
           'creationTimestamp ' || ks_time_s(s.creation_timestamp)
    FROM svc_snapshots s
    WHERE s.creation_timestamp IS NOT NULL AND NOT coalesce(s.deleted, false)
),
cycles_joined AS (
    SELECT d.cluster, d.kind, d.namespace, d.service,
           d.audit_id AS delete_id, d.obj_name AS deleted_name, d.obj_uid AS deleted_uid,
           d.username AS deleter, d.user_agent AS deleter_agent,
           d.received_at AS delete_received, d.stage_at AS delete_at, d.code AS delete_code,
           d.source_file AS delete_file, d.source_line AS delete_line,
           c.audit_id AS create_id, c.obj_name AS created_name, c.obj_uid AS created_uid,
           c.username AS creator, c.user_agent AS creator_agent,
           c.stage_at AS create_at, c.code AS create_code,
           c.source_file AS create_file, c.source_line AS create_line,
           epoch_ms(c.stage_at) - epoch_ms(d.stage_at) AS recreate_ms
    FROM cycle_deletes d
    JOIN creates c ON c.cluster = d.cluster AND c.audit_id = d.create_id
),
-- what was known about the Service: each cycle meets the Service's records by ASOF joins, one sorted pass each
-- instead of every record of the Service paired with every cycle
cycles AS (
    SELECT y.*,
           -- the latest record at the delete, and the latest with a uid
           l.what AS svc_last_what, l.source AS svc_last_source, lu.uid AS svc_last_uid,
           -- a Service delete or create between the delete and the recreate
           coalesce(ch.at > y.delete_received, false) AS svc_changed,
           -- uid of the Service seen after the recreate (the same one when it existed throughout)
           nx.uid AS svc_next_uid
    FROM cycles_joined y
    ASOF LEFT JOIN svc_events l
      ON l.cluster = y.cluster AND l.namespace = y.namespace AND l.name = y.service AND l.at <= y.delete_received
    ASOF LEFT JOIN (SELECT * FROM svc_events WHERE uid IS NOT NULL) lu
      ON lu.cluster = y.cluster AND lu.namespace = y.namespace AND lu.name = y.service AND lu.at <= y.delete_received
    ASOF LEFT JOIN (SELECT * FROM svc_events WHERE what IN ('delete', 'create')) ch
      ON ch.cluster = y.cluster AND ch.namespace = y.namespace AND ch.name = y.service AND ch.at <= y.create_at
    ASOF LEFT JOIN (SELECT * FROM svc_events WHERE uid IS NOT NULL) nx
      ON nx.cluster = y.cluster AND nx.namespace = y.namespace AND nx.name = y.service AND nx.at > y.create_at
),
phantoms AS (
    SELECT c.*,
           CASE WHEN c.svc_last_what IN ('create', 'seen', 'created')
                THEN 'Service ' || c.namespace || '/' || c.service || ' known to exist before the delete (' || c.svc_last_source || ')'
                ELSE 'no Service information before the delete; recreated by ' || c.creator ||
                     ', which only creates them for an existing Service, and no Service delete or create in between'
           END AS service_evidence,
           coalesce(c.svc_last_uid, c.svc_next_uid) AS service_uid
    FROM cycles c
    WHERE NOT c.svc_changed
      AND (c.svc_last_what IN ('create', 'seen', 'created')
           OR (c.svc_last_what IS NULL
               -- the garbage collector deletes them only once their Service is gone
               AND NOT list_contains(ks_usernames($garbage_collector_usernames), c.deleter)
               AND list_contains(ks_usernames($endpoints_controller_usernames), c.creator)))
      -- a Service seen with another uid after the recreate was replaced in between
      AND (c.svc_last_uid IS NULL OR c.svc_next_uid IS NULL OR c.svc_last_uid = c.svc_next_uid)
),
numbered AS (
    SELECT p.*,
           row_number() OVER (PARTITION BY cluster, kind, namespace, service, deleter, deleter_agent ORDER BY delete_at, delete_id) AS cycle
    FROM phantoms p
),
ev_items AS (
    SELECT cluster, kind, namespace, service, deleter, deleter_agent, delete_at AS ts, 1 AS ord, delete_id AS id,
           struct_pack(cycle := cycle,
                       "at" := ks_time_us(delete_at),
                       audit_id := delete_id, file := delete_file, line := delete_line,
                       verb := 'delete', code := delete_code,
                       kind := kind, object := namespace || '/' || deleted_name, uid := deleted_uid,
                       user_name := deleter, user_agent := deleter_agent,
                       recreate_ms := NULL::BIGINT,
                       service_uid := service_uid, service_evidence := service_evidence) AS item
    FROM numbered
    UNION ALL
    SELECT cluster, kind, namespace, service, deleter, deleter_agent, create_at, 2, create_id,
           struct_pack(cycle := cycle,
                       "at" := ks_time_us(create_at),
                       audit_id := create_id, file := create_file, line := create_line,
                       verb := 'create', code := create_code,
                       kind := kind, object := namespace || '/' || created_name, uid := created_uid,
                       user_name := creator, user_agent := creator_agent,
                       recreate_ms := CAST(recreate_ms AS BIGINT),
                       service_uid := NULL::VARCHAR, service_evidence := NULL::VARCHAR)
    FROM numbered
),
ev AS (
    SELECT cluster, kind, namespace, service, deleter, deleter_agent,
           list(item ORDER BY ts, ord, id) AS items
    FROM ev_items
    GROUP BY ALL
),
findings AS (
    SELECT n.cluster, n.kind, n.namespace, n.service, n.deleter, n.deleter_agent,
           count(*) AS cycles,
           min(n.delete_at) AS first_at, max(n.create_at) AS last_at,
           max(n.delete_at) AS last_delete_at,
           min(n.recreate_ms) AS min_ms, max(n.recreate_ms) AS max_ms,
           string_agg(DISTINCT n.creator, ', ' ORDER BY n.creator) AS creators,
           arg_max(n.service_uid, n.delete_at) AS service_uid,
           bool_and(n.svc_last_what IS NOT NULL) AS service_seen
    FROM numbered n
    GROUP BY ALL
    HAVING count(*) >= CAST($min_cycles_count AS BIGINT)
),
-- ---------------------------------------------------------------- snapshots only (no audit record of the deletes)
-- Endpoints whose uid changes between two consecutive snapshot observations while the Service seen just before and
-- just after is the same object (same uid, not deleted, no Service delete/create known in between), and no audit
-- delete/create of those Endpoints around that time (the audit path above reports those).
snap_changes AS (
    SELECT c.*,
           (SELECT arg_max(e.uid, e.at) FROM svc_events e
             WHERE e.cluster = c.cluster AND e.namespace = c.namespace AND e.name = c.name AND e.at <= c.prev_at AND e.what <> 'created') AS svc_before_uid,
           (SELECT arg_max(e.what, e.at) FROM svc_events e
             WHERE e.cluster = c.cluster AND e.namespace = c.namespace AND e.name = c.name AND e.at <= c.prev_at AND e.what <> 'created') AS svc_before_what,
           (SELECT arg_min(e.uid, e.at) FROM svc_events e
             WHERE e.cluster = c.cluster AND e.namespace = c.namespace AND e.name = c.name AND e.at >= c.captured_at AND e.what <> 'created') AS svc_after_uid,
           (SELECT arg_min(e.what, e.at) FROM svc_events e
             WHERE e.cluster = c.cluster AND e.namespace = c.namespace AND e.name = c.name AND e.at >= c.captured_at AND e.what <> 'created') AS svc_after_what,
           EXISTS (SELECT 1 FROM svc_events e
                    WHERE e.cluster = c.cluster AND e.namespace = c.namespace AND e.name = c.name AND e.what IN ('delete', 'create')
                      AND e.at > c.prev_at AND e.at < c.captured_at) AS svc_changed,
           EXISTS (SELECT 1 FROM ep_keyed w
                    WHERE w.cluster = c.cluster AND w.kind = 'Endpoints' AND w.namespace = c.namespace AND w.obj_name = c.name
                      AND w.stage_at >= c.prev_at - INTERVAL 2 SECOND AND w.stage_at <= c.captured_at + INTERVAL 2 SECOND) AS in_audit
    FROM snap_seq c
    WHERE c.prev_uid IS NOT NULL AND c.uid <> c.prev_uid
),
snap_phantoms AS (
    SELECT * FROM snap_changes
    WHERE NOT in_audit AND NOT svc_changed
      AND svc_before_what = 'seen' AND svc_after_what = 'seen'
      AND svc_before_uid IS NOT NULL AND svc_before_uid = svc_after_uid
),
snap_findings AS (
    SELECT cluster, namespace, name,
           count(*) AS cycles, min(prev_at) AS first_at, max(captured_at) AS last_at,
           arg_max(svc_after_uid, captured_at) AS service_uid,
           list(struct_pack(cycle := NULL::BIGINT,
                            "at" := ks_time_us(captured_at),
                            previous_at := ks_time_us(prev_at),
                            file := source_file, previous_file := prev_file,
                            kind := 'Endpoints', object := namespace || '/' || name,
                            previous_uid := prev_uid, uid := uid, service_uid := svc_after_uid)
                ORDER BY captured_at, source_file) AS items
    FROM snap_phantoms
    GROUP BY ALL
    HAVING count(*) >= CAST($min_cycles_count AS BIGINT)
)
SELECT rule, severity, cluster, namespace, name, subject, first_seen, last_seen, count, facts, evidence
FROM (
SELECT 'endpoints-phantom-recreate' AS rule,
       CASE WHEN f.cycles >= CAST($critical_cycles_count AS BIGINT) THEN 'critical' ELSE 'warning' END AS severity,
       f.cluster,
       f.namespace,
       f.service AS name,
       trim(f.deleter || ' ' || f.deleter_agent) AS subject,
       f.first_at AS first_seen,
       f.last_at AS last_seen,
       CAST(f.cycles AS BIGINT) AS count,
       struct_pack(seen_in := 'audit', kind := f.kind, deleter := f.deleter, creators := f.creators,
                   min_recreate_ms := CAST(f.min_ms AS DOUBLE), max_recreate_ms := CAST(f.max_ms AS DOUBLE),
                   service_uid := f.service_uid, service_seen := f.service_seen) AS facts,
       to_json(e.items) AS evidence
FROM findings f
JOIN ev e USING (cluster, kind, namespace, service, deleter, deleter_agent)
UNION ALL
SELECT 'endpoints-phantom-recreate' AS rule,
       CASE WHEN f.cycles >= CAST($critical_cycles_count AS BIGINT) THEN 'critical' ELSE 'warning' END AS severity,
       f.cluster,
       f.namespace, f.name,
       'unknown client (no audit record of the deletes)' AS subject,
       f.first_at AS first_seen, f.last_at AS last_seen,
       CAST(f.cycles AS BIGINT) AS count,
       struct_pack(seen_in := 'snapshots', kind := 'Endpoints', deleter := NULL::VARCHAR, creators := NULL::VARCHAR,
                   min_recreate_ms := NULL::DOUBLE, max_recreate_ms := NULL::DOUBLE,
                   service_uid := f.service_uid, service_seen := true) AS facts,
       to_json(f.items) AS evidence
    FROM snap_findings f
)
ORDER BY first_seen, cluster, namespace, name, subject
