-- probe-conntrack-exhaustion: per node, every captured snapshot of the conntrack table (conntrack_limits,
-- conntrack_entries, conntrack_stats, kernel_events, keyed by node + captured_at): usage = count / nf_conntrack_max,
-- TIME_WAIT share, new drops / insert failures since the previous snapshot, table-full kernel lines; one finding per
-- node about its worst snapshot, with the growth rate, the projected time to full, the top TIME_WAIT destinations
-- mapped to pods/Services, and (when pod specs are known) the probe connection rate that explains the steady state.
-- The window bounds are bound into the WHERE of what they filter (not a cross-joined CTE), so that they are
-- constants DuckDB can push down; rows without a capture time count only when no window is set. A node is a node of
-- one cluster (cluster + node everywhere): two clusters' nodes of the same name never mix.
-- Only the small per-capture tables (limits, counters, kernel lines) are read before the window: the entries are read for
-- the window's captures alone, so that a scheduled run over a window of a long database reads the entries of that
-- window, not of every capture it holds.
WITH
-- ---------------------------------------------------------------- per-capture facts
lim AS (
    SELECT coalesce(l.cluster, '') AS cluster, coalesce(l.node, '') AS node, l.captured_at AS ts,
           max(l.nf_conntrack_max) AS ct_max,
           -- conntrack -C is the exact count at capture; the sysctl is read a moment apart
           coalesce(max(l.nf_conntrack_count) FILTER (WHERE l.format = 'conntrack-C'),
                    max(l.nf_conntrack_count)) AS ct_count,
           max(l.nf_conntrack_tcp_timeout_time_wait) AS tw_timeout_s,
           min(l.source_file) FILTER (WHERE l.nf_conntrack_max IS NOT NULL) AS limits_file
    FROM conntrack_limits l
    GROUP BY ALL
),
-- the entries of the window's captures (those without a capture time only when no window is set). The window's
-- bounds are constants when DuckDB plans the query: with a window the OR's second half is false and the bounds filter
-- the scan itself. Not materialized: each reference reads only the columns it needs.
win_entries AS NOT MATERIALIZED (
    SELECT cluster, node, captured_at, format, state, source_file, orig_dst, orig_dport
    FROM conntrack_entries
    WHERE (captured_at >= ks_window_start($since) AND captured_at <= ks_window_end($until))
       OR (captured_at IS NULL AND CAST($since AS TIMESTAMPTZ) IS NULL AND CAST($until AS TIMESTAMPTZ) IS NULL)
),
entry_formats AS (
    -- one format per capture, in case the same table was dumped twice in different formats
    SELECT cluster, node, ts, arg_max(format, n) AS format, max(n) AS n
    FROM (SELECT coalesce(cluster, '') AS cluster, coalesce(node, '') AS node, captured_at AS ts, format, count(*) AS n
          FROM win_entries GROUP BY ALL)
    GROUP BY ALL
),
ent AS (
    SELECT coalesce(e.cluster, '') AS cluster, coalesce(e.node, '') AS node, e.captured_at AS ts, count(*) AS entries,
           count(*) FILTER (WHERE e.state = 'TIME_WAIT') AS time_wait,
           min(e.source_file) AS entries_file
    FROM win_entries e
    JOIN entry_formats f ON f.cluster = coalesce(e.cluster, '') AND f.node = coalesce(e.node, '') AND f.ts IS NOT DISTINCT FROM e.captured_at AND f.format = e.format
    GROUP BY ALL
),
stats_cpu AS (
    -- one capture time may hold several files of one format (two conntrack -S given the same --at, read a moment
    -- apart): their rows are all kept (they differ), and counters only grow, so a CPU's counter is the largest
    -- of them, not their sum
    SELECT coalesce(cluster, '') AS cluster, coalesce(node, '') AS node, captured_at AS ts, format, cpu,
           max("drop") AS "drop", max(insert_failed) AS insert_failed, max(early_drop) AS early_drop,
           max(entries) AS entries, min(source_file) AS stats_file
    FROM conntrack_stats
    GROUP BY ALL
),
stats_fmt AS (
    SELECT cluster, node, ts, format,
           sum("drop") AS drops, sum(insert_failed) AS insert_failed, sum(early_drop) AS early_drops,
           max(entries) AS entries, min(stats_file) AS stats_file
    FROM stats_cpu
    GROUP BY ALL
),
stats AS (
    -- the counters of the node's previous capture of them (also before --since), whatever was captured in between
    SELECT s.*,
           lag(s.drops) OVER w AS prev_drops,
           lag(s.insert_failed) OVER w AS prev_insert_failed,
           lag(s.early_drops) OVER w AS prev_early_drops
    FROM (
        -- conntrack -S and /proc/net/stat/nf_conntrack of one capture describe the same counters: take one, not the sum
        SELECT cluster, node, ts, max(drops) AS drops, max(insert_failed) AS insert_failed, max(early_drops) AS early_drops,
               max(entries) AS stat_entries, min(stats_file) AS stats_file
        FROM stats_fmt GROUP BY ALL
    ) s
    WINDOW w AS (PARTITION BY s.cluster, s.node ORDER BY s.ts)
),
kern AS (
    SELECT coalesce(cluster, '') AS cluster, coalesce(node, '') AS node, captured_at AS ts, count(*) AS table_full_lines,
           min(source_file) AS kernel_file, min(source_line) AS kernel_first_line,
           arg_min(raw, source_line) AS kernel_first_raw
    FROM kernel_events
    WHERE kind = 'table_full'
    GROUP BY ALL
),
caps AS (
    SELECT DISTINCT cluster, node, ts FROM (
        SELECT cluster, node, ts FROM lim UNION ALL SELECT cluster, node, ts FROM ent
        UNION ALL SELECT cluster, node, ts FROM stats UNION ALL SELECT cluster, node, ts FROM kern)
),
snap0 AS (
    SELECT c.cluster, c.node, c.ts,
           l.ct_max, l.tw_timeout_s, l.limits_file,
           coalesce(l.ct_count, s.stat_entries, e.entries) AS ct_count,
           e.entries, e.time_wait, e.entries_file,
           s.drops, s.insert_failed, s.early_drops, s.stats_file, s.prev_drops, s.prev_insert_failed, s.prev_early_drops,
           coalesce(k.table_full_lines, 0) AS table_full_lines, k.kernel_file, k.kernel_first_line, k.kernel_first_raw
    FROM caps c
    LEFT JOIN lim l ON l.cluster = c.cluster AND l.node = c.node AND l.ts IS NOT DISTINCT FROM c.ts
    LEFT JOIN ent e ON e.cluster = c.cluster AND e.node = c.node AND e.ts IS NOT DISTINCT FROM c.ts
    LEFT JOIN stats s ON s.cluster = c.cluster AND s.node = c.node AND s.ts IS NOT DISTINCT FROM c.ts
    LEFT JOIN kern k ON k.cluster = c.cluster AND k.node = c.node AND k.ts IS NOT DISTINCT FROM c.ts
),
snap1 AS (
    SELECT s.*,
           -- a capture without the sysctl uses the node's nearest known max
           coalesce(s.ct_max,
                    last_value(s.ct_max IGNORE NULLS) OVER (PARTITION BY s.cluster, s.node ORDER BY s.ts ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW),
                    first_value(s.ct_max IGNORE NULLS) OVER (PARTITION BY s.cluster, s.node ORDER BY s.ts ROWS BETWEEN CURRENT ROW AND UNBOUNDED FOLLOWING)) AS max_eff,
           coalesce(s.tw_timeout_s,
                    max(s.tw_timeout_s) OVER (PARTITION BY s.cluster, s.node),
                    CAST($time_wait_timeout_s AS BIGINT)) AS tw_timeout_eff
    FROM snap0 s
),
snap AS (
    SELECT s.*,
           CASE WHEN s.max_eff > 0 THEN 100.0 * s.ct_count / s.max_eff END AS usage_pct,
           CASE WHEN s.entries > 0 THEN 100.0 * s.time_wait / s.entries END AS tw_pct,
           -- counters are cumulative since boot: what is new since the previous capture of them (stats). The node's
           -- first capture is the baseline (its counters may be months old: nothing new); after a reset (reboot, other
           -- netns) the counters are new since it.
           CASE WHEN s.drops < s.prev_drops THEN s.drops ELSE s.drops - s.prev_drops END AS new_drops,
           CASE WHEN s.insert_failed < s.prev_insert_failed THEN s.insert_failed ELSE s.insert_failed - s.prev_insert_failed END AS new_insert_failed,
           CASE WHEN s.early_drops < s.prev_early_drops THEN s.early_drops ELSE s.early_drops - s.prev_early_drops END AS new_early_drops
    FROM snap1 s
    WHERE (s.ts IS NULL AND CAST($since AS TIMESTAMPTZ) IS NULL AND CAST($until AS TIMESTAMPTZ) IS NULL)
       OR (s.ts >= ks_window_start($since) AND s.ts <= ks_window_end($until))
),
snap_sev AS (
    SELECT s.*,
           -- insert_failed (and clash_resolve) count insertion races, mostly SNAT port or DNS clashes: not drops
           (coalesce(s.new_drops, 0) > 0 OR coalesce(s.new_early_drops, 0) > 0 OR s.table_full_lines > 0) AS has_drops,
           CASE WHEN coalesce(s.new_drops, 0) > 0 OR coalesce(s.new_early_drops, 0) > 0
                     OR s.table_full_lines > 0
                     OR s.usage_pct >= CAST($critical_usage_percent AS DOUBLE) THEN 2
                WHEN s.usage_pct >= CAST($warning_usage_percent AS DOUBLE) THEN 1
                ELSE 0 END AS level
    FROM snap s
),
node_worst AS (
    SELECT cluster, node,
           arg_max(ts, [level, coalesce(usage_pct, -1), epoch(coalesce(ts, '-infinity'::TIMESTAMPTZ))]) AS worst_ts,
           max(level) AS level,
           min(ts) FILTER (WHERE level > 0) AS first_bad, max(ts) FILTER (WHERE level > 0) AS last_bad,
           count(*) AS snapshots, count(*) FILTER (WHERE level > 0) AS bad_snapshots,
           sum(coalesce(new_drops, 0)) AS drops_total, sum(coalesce(new_insert_failed, 0)) AS insert_failed_total,
           sum(coalesce(new_early_drops, 0)) AS early_drops_total,
           max(table_full_lines) AS table_full_lines,
           max(usage_pct) AS max_usage_pct
    FROM snap_sev
    GROUP BY cluster, node
    HAVING max(level) > 0
),
worst AS (
    SELECT s.*, w.level AS node_level, w.first_bad, w.last_bad, w.snapshots, w.bad_snapshots, w.drops_total,
           w.insert_failed_total, w.early_drops_total, w.table_full_lines AS node_table_full_lines
    FROM node_worst w
    JOIN snap_sev s ON s.cluster = w.cluster AND s.node = w.node AND s.ts IS NOT DISTINCT FROM w.worst_ts
),
-- ---------------------------------------------------------------- growth: slope over the not-yet-full captures
growth AS (
    SELECT s.cluster, s.node,
           regr_slope(s.ct_count, epoch(s.ts)) AS per_s,
           count(*) AS points,
           arg_max(s.ts, s.ts) AS last_ts, arg_max(s.ct_count, s.ts) AS last_count, arg_max(s.max_eff, s.ts) AS last_max
    FROM snap_sev s
    JOIN node_worst w USING (cluster, node)
    WHERE s.ts IS NOT NULL AND s.ct_count IS NOT NULL AND s.max_eff IS NOT NULL
      AND s.ct_count < s.max_eff AND NOT s.has_drops
      AND s.ts <= w.worst_ts
      AND s.max_eff = (SELECT x.max_eff FROM snap_sev x WHERE x.cluster = s.cluster AND x.node = s.node AND x.ts IS NOT DISTINCT FROM w.worst_ts)
    GROUP BY s.cluster, s.node
    HAVING count(*) >= 2
),
-- ---------------------------------------------------------------- TIME_WAIT destinations of the worst capture
dest AS (
    SELECT w.cluster, w.node, e.orig_dst AS ip, e.orig_dport AS port, count(*) AS time_wait
    FROM win_entries e
    JOIN worst w ON w.cluster = coalesce(e.cluster, '') AND w.node = coalesce(e.node, '') AND w.ts IS NOT DISTINCT FROM e.captured_at
    JOIN entry_formats f ON f.cluster = w.cluster AND f.node = w.node AND f.ts IS NOT DISTINCT FROM w.ts AND f.format = e.format
    WHERE e.state = 'TIME_WAIT'
    GROUP BY ALL
),
-- who owns an address: the observation nearest in time to the capture (pod IPs are reused)
addr_owner AS (
    SELECT d.cluster, d.node, d.ip,
           arg_min(o.namespace || '/' || o.pod, abs(epoch(o.captured_at) - epoch(w.ts))) FILTER (WHERE o.pod IS NOT NULL) AS pod,
           arg_min(o.namespace || '/' || o.service, abs(epoch(o.captured_at) - epoch(w.ts))) FILTER (WHERE o.service IS NOT NULL) AS service
    FROM (SELECT DISTINCT cluster, node, ip FROM dest) d
    JOIN worst w ON w.cluster = d.cluster AND w.node = d.node
    JOIN (
        SELECT coalesce(cluster, '') AS cluster, ip, namespace, pod, service, captured_at FROM endpoint_addresses WHERE ip IS NOT NULL
        UNION ALL
        SELECT coalesce(cluster, ''), pod_ip, namespace, name, NULL, captured_at FROM pods WHERE pod_ip IS NOT NULL AND NOT coalesce(host_network, false)
        UNION ALL
        SELECT coalesce(cluster, ''), cluster_ip, namespace, NULL, name, captured_at FROM services WHERE cluster_ip IS NOT NULL AND cluster_ip NOT IN ('None', '')
    ) o ON o.cluster = d.cluster AND o.ip = d.ip
    GROUP BY ALL
),
dest_named AS (
    SELECT d.*, a.pod, a.service,
           row_number() OVER (PARTITION BY d.cluster, d.node ORDER BY d.time_wait DESC, d.ip, d.port) AS rk
    FROM dest d
    LEFT JOIN addr_owner a USING (cluster, node, ip)
),
dest_agg AS (
    SELECT cluster, node,
           count(*) AS destinations,
           list(struct_pack(type := 'destination', destination := ip || ':' || port, time_wait := time_wait,
                            pod := pod, service := service) ORDER BY rk)
               FILTER (WHERE rk <= CAST($top_destinations_count AS BIGINT)) AS items,
           string_agg(ip || ':' || port || ' ' || time_wait, ', ' ORDER BY rk) FILTER (WHERE rk <= 3) AS top3
    FROM dest_named
    GROUP BY cluster, node
),
svc_agg AS (
    SELECT cluster, node, service, sum(time_wait) AS time_wait, count(*) AS destinations, count(DISTINCT pod) AS pods,
           string_agg(DISTINCT CAST(port AS VARCHAR), ',' ORDER BY CAST(port AS VARCHAR)) AS ports,
           row_number() OVER (PARTITION BY cluster, node ORDER BY sum(time_wait) DESC, service) AS rk
    FROM dest_named
    WHERE service IS NOT NULL
    GROUP BY cluster, node, service
),
svc_top AS (
    SELECT cluster, node,
           string_agg(service || ' (' || time_wait || ' TIME_WAIT to ' || destinations || ' ip:port of ' || pods || ' pod' ||
                      CASE WHEN pods = 1 THEN '' ELSE 's' END || ', ports ' || ports || ')', '; ' ORDER BY rk) AS services,
           string_agg(service, ', ' ORDER BY rk) AS service_names
    FROM svc_agg WHERE rk <= 3
    GROUP BY cluster, node
),
-- ---------------------------------------------------------------- probe load of the node's pods (kubelet probes: TCP
-- connections from the node; exec probes open none; startup probes stop once the container started)
probe_obs AS (
    SELECT p.node AS pnode, p.captured_at, p.namespace, p.pod, p.container, p.probe, p.period_s, w.cluster, w.node, w.ts,
           dense_rank() OVER (PARTITION BY w.cluster, w.node ORDER BY abs(epoch(p.captured_at) - epoch(w.ts)), p.captured_at DESC) AS nearest
    FROM pod_probes p
    JOIN worst w ON coalesce(p.cluster, '') = w.cluster AND p.node = w.node
    WHERE p.type IN ('http', 'tcp', 'grpc') AND p.probe IN ('readiness', 'liveness') AND p.period_s > 0
),
probe_agg AS (
    SELECT cluster, node, count(DISTINCT namespace || '/' || pod) AS pods, count(*) AS probes,
           sum(1.0 / period_s) AS per_s, min(period_s) AS min_period_s, max(period_s) AS max_period_s,
           any_value(captured_at) AS spec_at
    FROM (SELECT DISTINCT cluster, node, captured_at, namespace, pod, container, probe, period_s FROM probe_obs WHERE nearest = 1)
    GROUP BY cluster, node
),
-- the node's first table-full kernel line in the window (dmesg is cumulative: later captures repeat it)
kern_first AS (
    SELECT coalesce(k.cluster, '') AS cluster, coalesce(k.node, '') AS node,
           arg_min(k.source_file, [epoch(coalesce(k.captured_at, '-infinity'::TIMESTAMPTZ)), k.source_line]) AS kernel_file,
           arg_min(k.source_line, [epoch(coalesce(k.captured_at, '-infinity'::TIMESTAMPTZ)), k.source_line]) AS kernel_line,
           arg_min(k.raw, [epoch(coalesce(k.captured_at, '-infinity'::TIMESTAMPTZ)), k.source_line]) AS kernel_raw
    FROM kernel_events k
    WHERE k.kind = 'table_full'
      AND ((k.captured_at IS NULL AND CAST($since AS TIMESTAMPTZ) IS NULL AND CAST($until AS TIMESTAMPTZ) IS NULL)
           OR (k.captured_at >= ks_window_start($since) AND k.captured_at <= ks_window_end($until)))
    GROUP BY ALL
),
-- ---------------------------------------------------------------- evidence: captures of the node (latest 24)
snap_items AS (
    SELECT cluster, node,
           list(struct_pack(type := 'snapshot',
                            captured_at := ks_time_s(ts),
                            count := ct_count, max := max_eff, usage_percent := round(usage_pct, 1),
                            entries := entries, time_wait := time_wait, time_wait_percent := round(tw_pct, 1),
                            drops := drops, new_drops := new_drops, insert_failed := insert_failed, early_drops := early_drops,
                            table_full_lines := table_full_lines,
                            file := coalesce(entries_file, limits_file, stats_file, kernel_file)) ORDER BY ts DESC) AS items,
           count(*) AS n
    FROM snap_sev s
    WHERE EXISTS (SELECT 1 FROM node_worst w WHERE w.cluster = s.cluster AND w.node = s.node)
    GROUP BY cluster, node
),
out AS (
    SELECT w.*, g.per_s, g.points, g.last_ts, g.last_count, g.last_max,
           da.destinations, da.items AS dest_items, da.top3, st.services, st.service_names,
           pa.pods AS probe_pods, pa.probes AS probe_count, pa.per_s AS probe_per_s, pa.min_period_s, pa.max_period_s,
           si.items AS snap_items_all, si.n AS snap_n,
           kf.kernel_file AS kf_file, kf.kernel_line AS kf_line, kf.kernel_raw AS kf_raw
    FROM worst w
    LEFT JOIN kern_first kf USING (cluster, node)
    LEFT JOIN growth g USING (cluster, node)
    LEFT JOIN dest_agg da USING (cluster, node)
    LEFT JOIN svc_top st USING (cluster, node)
    LEFT JOIN probe_agg pa USING (cluster, node)
    LEFT JOIN snap_items si USING (cluster, node)
)
SELECT 'probe-conntrack-exhaustion' AS rule,
       CASE WHEN o.node_level >= 2 THEN 'critical' ELSE 'warning' END AS severity,
       o.cluster,
       '' AS namespace,
       o.node AS name,
       coalesce(CASE WHEN o.services IS NOT NULL THEN o.service_names || ': ' END, '') ||
           coalesce(o.top3, 'no TIME_WAIT entries in the dump') AS subject,
       coalesce(o.first_bad, o.ts) AS first_seen,
       coalesce(o.last_bad, o.ts) AS last_seen,
       CAST(coalesce(o.ct_count, 0) AS BIGINT) AS count,
       struct_pack(level := o.node_level, table_count := CAST(o.ct_count AS BIGINT), table_max := CAST(o.max_eff AS BIGINT),
                   usage_percent := CAST(o.usage_pct AS DOUBLE), captured_at := o.ts,
                   drops := CAST(coalesce(o.drops_total, 0) AS BIGINT), early_drops := CAST(coalesce(o.early_drops_total, 0) AS BIGINT),
                   insert_failed := CAST(coalesce(o.insert_failed_total, 0) AS BIGINT),
                   table_full_lines := CAST(coalesce(o.node_table_full_lines, 0) AS BIGINT),
                   time_wait := CAST(o.time_wait AS BIGINT), entries := CAST(o.entries AS BIGINT),
                   time_wait_percent := CAST(o.tw_pct AS DOUBLE),
                   captures := CAST(coalesce(o.snapshots, 0) AS BIGINT), captures_over := CAST(o.bad_snapshots AS BIGINT),
                   growth_per_s := CAST(o.per_s AS DOUBLE), growth_points := CAST(o.points AS BIGINT),
                   full_already := coalesce(o.ct_count >= o.max_eff OR o.has_drops, false),
                   full_at := CASE WHEN o.per_s > 0
                                   THEN o.last_ts + to_microseconds(CAST((o.last_max - o.last_count) / o.per_s * 1e6 AS BIGINT)) END,
                   full_in_s := CASE WHEN o.per_s > 0 THEN CAST((o.last_max - o.last_count) / o.per_s AS DOUBLE) END,
                   last_count := CAST(o.last_count AS BIGINT), last_at := o.last_ts,
                   destinations := CAST(o.destinations AS BIGINT), top_destinations := o.top3, services := o.services,
                   probe_pods := CAST(o.probe_pods AS BIGINT), probes := CAST(o.probe_count AS BIGINT),
                   probes_per_s := CAST(o.probe_per_s AS DOUBLE),
                   min_period_s := CAST(o.min_period_s AS BIGINT), max_period_s := CAST(o.max_period_s AS BIGINT),
                   time_wait_timeout_s := CAST(o.tw_timeout_eff AS BIGINT),
                   capture_items := CAST(coalesce(o.snap_n, 0) AS BIGINT)) AS facts,
       to_json(list_concat(
           [to_json(x) FOR x IN o.snap_items_all[1:24]],
           [to_json(x) FOR x IN coalesce(o.dest_items, [])],
           CASE WHEN o.kf_raw IS NOT NULL
                THEN [to_json(struct_pack(type := 'kernel', file := o.kf_file, line := o.kf_line,
                                          first_table_full_line := o.kf_raw))]
                ELSE [] END
       )) AS evidence
FROM out o
ORDER BY first_seen, cluster, namespace, name, subject
