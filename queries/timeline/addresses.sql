-- timeline/addresses: for one Endpoints, EndpointSlice or Service ($resource, $ns, $name) of $cluster, the state of each
-- address of its Service at every observation point within $since..$until, per stream: the rows
-- endpoint-flapping follows (ks_address_states), for the timeline's swimlane chart.
SELECT ks_time_ms(s.ts) AS "at", s.stream, s.kind, s.ip, s.pod, s.state,
       s.source_file || ':' || s.source_line AS evidence
FROM ks_address_states($since, $until) s
WHERE s.cluster = $cluster AND s.namespace = $ns
  AND s.svc IN (SELECT svc FROM ks_endpoint_observations()
                WHERE cluster = $cluster AND namespace = $ns
                  AND (($resource IN ('endpoints', 'endpointslices') AND name = $name) OR ($resource = 'services' AND svc = $name)))
ORDER BY s.stream, s.ip, s.pt
