-- object-uris: the request URIs of each named object, 100 times each, in one string per object
SELECT 'object-uris' AS rule, 'info' AS severity, cluster, namespace, name, NULL::VARCHAR AS subject,
       first_seen, last_seen, count, struct_pack(uri_bytes := uri_bytes) AS facts, NULL::JSON AS evidence
FROM (SELECT coalesce(cluster, '') AS cluster, coalesce(namespace, '') AS namespace, resource || '/' || name AS name,
             min(stage_at) AS first_seen, max(stage_at) AS last_seen, count(*) AS count,
             len(string_agg(repeat(request_uri, 100), '')) AS uri_bytes
      FROM audit_events
      WHERE name IS NOT NULL AND resource IS NOT NULL AND request_uri IS NOT NULL
        AND stage_at >= ks_window_start($since) AND stage_at <= ks_window_end($until)
      GROUP BY ALL)
ORDER BY first_seen, cluster, namespace, name
