-- resource-uris: per resource, the length of all its request URIs, 300 times each, held in one string
SELECT 'resource-uris' AS rule, 'info' AS severity, coalesce(cluster, '') AS cluster, NULL::VARCHAR AS namespace,
       resource AS name, NULL::VARCHAR AS subject, min(stage_at) AS first_seen, max(stage_at) AS last_seen,
       count(*) AS count, struct_pack(uri_bytes := len(string_agg(repeat(request_uri, 300), ''))) AS facts,
       NULL::JSON AS evidence
FROM audit_events
WHERE resource IS NOT NULL AND request_uri IS NOT NULL
  AND stage_at >= ks_window_start($since) AND stage_at <= ks_window_end($until)
GROUP BY coalesce(cluster, ''), resource
ORDER BY first_seen, cluster, name
