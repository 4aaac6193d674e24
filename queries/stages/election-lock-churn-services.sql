-- election-lock-churn, stage stage_audit_services: the Services the audit log names, once for every piece of the rule;
-- seen: one that a successful write or get shows
SELECT coalesce(cluster, '') AS cluster, namespace, name,
       bool_or(coalesce(api_group, '') = '' AND coalesce(subresource, '') = ''
               AND verb IN ('create', 'update', 'patch', 'get') AND code BETWEEN 200 AND 299 AND name IS NOT NULL) AS seen
FROM audit_events
WHERE resource = 'services'
GROUP BY ALL
