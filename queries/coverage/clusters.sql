-- the clusters of the loaded audit events ("" when unknown), over which every rule's coverage is reported; not a
-- need of any rule. The other tables do not name their cluster yet.
SELECT DISTINCT coalesce(cluster, '') AS cluster FROM audit_events ORDER BY 1
