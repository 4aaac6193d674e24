-- timeline/clusters: the clusters ("" when unknown) in which the object ($resource, $ns, $name) was seen:
-- audit events on it, its Endpoints/EndpointSlice observations (or its Service's), Service and Pod snapshots.
SELECT DISTINCT cluster FROM (
    SELECT coalesce(cluster, '') AS cluster FROM audit_events
    WHERE namespace = $ns AND name = $name AND resource = $resource
    UNION ALL
    SELECT cluster FROM ks_endpoint_observations()
    WHERE namespace = $ns AND (($resource IN ('endpoints', 'endpointslices') AND name = $name) OR ($resource = 'services' AND svc = $name))
    UNION ALL
    SELECT coalesce(cluster, '') FROM services WHERE $resource = 'services' AND namespace = $ns AND name = $name
    UNION ALL
    SELECT coalesce(cluster, '') FROM pods WHERE $resource = 'pods' AND namespace = $ns AND name = $name
)
ORDER BY cluster
