-- probable-election-lock: the Metadata-level fallback of election-lock-churn. An Endpoints or ConfigMap object that one
-- client updates at a steady cadence (a median interval of min_interval_s..max_interval_s, nearly every interval at
-- most twice max_interval_s) for at least min_span_s, with no Service of that name, behaves like a
-- control-plane.alpha.kubernetes.io/leader lock renewed every RetryPeriod; without write bodies the annotation cannot
-- be confirmed, so the finding is info. Objects whose annotation can be read (a write with a body, or a snapshot of
-- an annotation lock) are left to election-lock-churn, so that no lock is reported twice.
WITH
-- the window's successful updates and patches of Endpoints and ConfigMaps that carry no body (has_body: the body
-- columns themselves cost a scan every body in its vectors). Read by a scan of their own, with the bodied events of
-- those objects by another (readable), not by one scan of every event of those objects for both: ingest keeps each
-- verb's events apart in a row group, so each scan skips the gets, lists and watches (on the recordings replicated to
-- 10M events the two scans keep 33,420 and 663,924 rows where the one kept 1.29M, and the rule took 0.82 s instead of
-- 0.92 s, medians of five alternating rounds; BENCHMARKS.md)
bare_writes AS MATERIALIZED (
    SELECT coalesce(a.cluster, '') AS cluster, a.resource, a.namespace, a.name, a.username,
           coalesce(a.user_agent, '') AS user_agent, a.verb, a.level, a.audit_id, a.source_file, a.source_line,
           a.stage_at AS ts
    FROM audit_events a
    WHERE a.stage_at >= ks_window_start($since) AND a.stage_at <= ks_window_end($until)
      -- coalesce(…) IN: a filter the scan evaluates, not a zone-map hint (macros.sql, above ks_advancing_write)
      AND coalesce(a.resource, '') IN ('endpoints', 'configmaps') AND coalesce(a.api_group, '') = ''
      AND coalesce(a.verb, '') IN ('update', 'patch') AND a.stage = 'ResponseComplete' AND a.code BETWEEN 200 AND 299
      AND coalesce(a.subresource, '') = '' AND a.name IS NOT NULL
      AND NOT a.has_body
      AND NOT list_contains(ks_usernames($endpoints_controller_usernames), a.username)
),
-- the objects whose annotation the window shows (a write with a body, or a snapshot of an annotation lock), which
-- election-lock-churn judges instead: what it reads of them is the window's, so this is too (an object whose body was
-- logged only before the window is no finding of that rule there, and its cadence is judged here); and a window's
-- findings do not depend on how much history the database holds, nor does their cost
readable AS (
    SELECT DISTINCT coalesce(a.cluster, '') AS cluster, a.resource, a.namespace, a.name
    FROM audit_events a
    WHERE a.stage_at >= ks_window_start($since) AND a.stage_at <= ks_window_end($until)
      AND coalesce(a.resource, '') IN ('endpoints', 'configmaps') AND coalesce(a.api_group, '') = ''
      AND a.has_body
    UNION
    SELECT DISTINCT coalesce(cluster, ''), CASE kind WHEN 'Endpoints' THEN 'endpoints' ELSE 'configmaps' END, namespace, name
    FROM leader_locks
    WHERE lock_type = 'annotation'
      AND captured_at >= ks_window_start($since) AND captured_at <= ks_window_end($until)
),
-- the Services known up to the window's end (whenever they were seen: a Service outlives the window it was created in;
-- audit_services, the Service requests of audit_events, holds their history)
services_seen AS (
    SELECT DISTINCT coalesce(cluster, '') AS cluster, namespace, name FROM services
    UNION
    SELECT DISTINCT coalesce(cluster, ''), namespace, name FROM audit_services
    WHERE coalesce(api_group, '') = '' AND name IS NOT NULL AND code BETWEEN 200 AND 299
      AND stage_at <= ks_window_end($until)
),
gaps AS (
    SELECT w.*,
           epoch(w.ts - lag(w.ts) OVER (PARTITION BY w.cluster, w.resource, w.namespace, w.name, w.username
                                        ORDER BY w.ts, w.audit_id)) AS gap_s
    FROM bare_writes w
    -- ANTI JOINs, not NOT EXISTS: DuckDB decorrelates a NOT EXISTS into a join on the distinct outer keys (IS NOT
    -- DISTINCT FROM), 1.4 of the rule's 4.9 s at 30M events of the independent mix in its profiler
    ANTI JOIN readable r ON r.cluster = w.cluster AND r.resource = w.resource AND r.namespace = w.namespace AND r.name = w.name
    ANTI JOIN services_seen s ON s.cluster = w.cluster AND s.namespace = w.namespace AND s.name = w.name
),
writers AS (
    SELECT cluster, resource, namespace, name, username,
           mode(user_agent) AS user_agent, mode(level) AS level,
           count(*) AS writes, min(ts) AS first_at, max(ts) AS last_at,
           epoch(max(ts) - min(ts)) AS span_s,
           median(gap_s) AS median_gap_s,
           count(gap_s) FILTER (WHERE gap_s <= 2 * CAST($max_interval_s AS DOUBLE)) / count(gap_s) AS steady_ratio
    FROM gaps
    GROUP BY ALL
    HAVING count(gap_s) > 0
),
object_writers AS (
    SELECT cluster, resource, namespace, name, count(DISTINCT username) AS n_writers
    FROM bare_writes
    GROUP BY ALL
),
locks AS (
    SELECT w.*, o.n_writers
    FROM writers w
    JOIN object_writers o USING (cluster, resource, namespace, name)
    WHERE w.median_gap_s BETWEEN CAST($min_interval_s AS DOUBLE) AND CAST($max_interval_s AS DOUBLE)
      AND w.steady_ratio >= CAST($min_steady_ratio AS DOUBLE)
      AND w.span_s >= CAST($min_span_s AS DOUBLE)
    QUALIFY row_number() OVER (PARTITION BY w.cluster, w.resource, w.namespace, w.name ORDER BY w.writes DESC, w.username) = 1
),
evidence AS (
    SELECT l.cluster, l.resource, l.namespace, l.name,
           list({audit_id: g.audit_id, file: g.source_file, line: g.source_line, "at": ks_time_ms(g.ts), verb: g.verb,
                 user_name: g.username, level: g.level, interval_s: round(g.gap_s, 3)}
                ORDER BY g.ts, g.audit_id)[1:50] AS items
    FROM locks l
    JOIN gaps g ON g.cluster = l.cluster AND g.resource = l.resource AND g.namespace = l.namespace
               AND g.name = l.name AND g.username = l.username
    GROUP BY ALL
)
SELECT 'probable-election-lock' AS rule, 'info' AS severity, l.cluster, l.namespace, l.name,
       l.username || CASE WHEN l.user_agent <> '' THEN ' (' || split_part(l.user_agent, ' ', 1) || ')' ELSE '' END AS subject,
       l.first_at AS first_seen, l.last_at AS last_seen, CAST(l.writes AS BIGINT) AS count,
       struct_pack(kind := CASE l.resource WHEN 'endpoints' THEN 'Endpoints' ELSE 'ConfigMap' END,
                   cluster := l.cluster, level := l.level,
                   span_s := CAST(l.span_s AS DOUBLE), median_interval_s := CAST(l.median_gap_s AS DOUBLE),
                   steady_ratio := CAST(l.steady_ratio AS DOUBLE), other_writers := CAST(l.n_writers - 1 AS BIGINT)) AS facts,
       to_json(e.items) AS evidence
FROM locks l
JOIN evidence e USING (cluster, resource, namespace, name)
ORDER BY l.first_at, l.cluster, l.namespace, l.name
