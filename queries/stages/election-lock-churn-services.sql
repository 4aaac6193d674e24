-- election-lock-churn, stage stage_audit_services: the Services the audit log names (audit_services, the Service
-- requests of audit_events), once for every piece of the rule; seen: one that a successful write or get shows. Only
-- the clusters of candidate Endpoints locks (stage_lock_candidates) are read: the rule asks for the Service of a
-- reported Endpoints lock only, and whether its cluster's Services are known at all.
SELECT coalesce(a.cluster, '') AS cluster, a.namespace, a.name,
       bool_or(coalesce(a.api_group, '') = '' AND coalesce(a.subresource, '') = ''
               AND a.verb IN ('create', 'update', 'patch', 'get') AND a.code BETWEEN 200 AND 299 AND a.name IS NOT NULL) AS seen
FROM audit_services a
SEMI JOIN (SELECT DISTINCT cluster FROM stage_lock_candidates WHERE resource = 'endpoints') c ON c.cluster = coalesce(a.cluster, '')
GROUP BY ALL
