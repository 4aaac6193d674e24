-- timeline/addresses: for one Endpoints, EndpointSlice or Service ($resource, $ns, $name) of $cluster, the changes of
-- state of each address of its Service within $since..$until, per stream: its first state, each point where its
-- state differs from the one before, and its last row (the states endpoint-flapping follows, ks_address_states), for
-- the timeline's swimlane chart, where a lane's band lasts from one of its rows to the next (the last row keeps the
-- chart to the end of the observations, not the last change). An address's lane starts where the Service first showed
-- it (or, never shown but in a deleted object, absent at the Service's first point). Only the changes are read, from
-- the sparse states: the state of every address at every point of the Service is addresses × points rows, hundreds of
-- millions for a Service of 1,000 pods rolled 20 times.
SELECT ks_time_ms(s.ts) AS "at", s.stream, s.kind, s.ip, s.pod, s.state,
       s.source_file || ':' || s.source_line AS evidence
FROM ks_address_states($since, $until, dense := false) s
WHERE s.cluster = $cluster AND s.namespace = $ns
  AND s.svc IN (SELECT svc FROM ks_endpoint_observations()
                WHERE cluster = $cluster AND namespace = $ns
                  AND (($resource IN ('endpoints', 'endpointslices') AND name = $name) OR ($resource = 'services' AND svc = $name)))
WINDOW lane AS (PARTITION BY s.svc, s.stream, s.ip ORDER BY s.pt)
QUALIFY s.state IS DISTINCT FROM lag(s.state) OVER lane OR lead(s.pt) OVER lane IS NULL
ORDER BY s.stream, s.ip, s.pt
