-- coverage of watch-parameters: per cluster, whether the watch requests in the window carry their resourceVersion
-- parameter. GKE's log entries (envelope gke-logentry) have no request URI, hence no query parameters at all: blind
-- when every watch is such an entry, or when no watch is logged at all; partial when some are.
WITH events AS (
    SELECT coalesce(cluster, '') AS cluster,
           count(*) FILTER (WHERE watch) AS watches,
           count(*) FILTER (WHERE watch AND envelope = 'gke-logentry') AS without_uri
    FROM audit_events
    WHERE stage_at >= ks_window_start($since) AND stage_at <= ks_window_end($until)
    GROUP BY ALL
)
SELECT cluster,
       CASE WHEN without_uri = watches THEN 'blind' ELSE 'partial' END AS coverage,
       CASE WHEN watches = 0 THEN 'no watch requests are in the audit log (excluded by the policy?)'
            WHEN without_uri = watches
            THEN format('{:,}', watches) || ' watch requests come from GKE log entries, which carry no request URI (no resourceVersion parameter)'
            ELSE format('{:,} of {:,}', without_uri, watches)
                 || ' watch requests come from GKE log entries, which carry no request URI (no resourceVersion parameter)' END AS reason
FROM events
WHERE without_uri > 0 OR watches = 0
