-- not a need: the loaded audit events (ResponseComplete) that one rule of `kubesift policy` matches ($verbs and
-- $resources: comma-separated, '' for all; resources as GROUP/RESOURCE or RESOURCE for the core group), with how many
-- lack bodies now and the average size of the bodies of those that have them, over the days the audit log spans:
-- what the policy's volume per day is estimated from.
WITH matched AS (
    SELECT (request_object IS NULL AND response_object IS NULL) AS bare,
           coalesce(strlen(CAST(request_object AS VARCHAR)), 0)
             + coalesce(strlen(CAST(response_object AS VARCHAR)), 0) AS body_bytes
    FROM audit_events
    WHERE stage = 'ResponseComplete'
      AND ($verbs = '' OR list_contains(string_split($verbs, ','), verb))
      AND ($resources = '' OR list_contains(string_split($resources, ','),
                                            CASE WHEN coalesce(api_group, '') = '' THEN resource
                                                 ELSE api_group || '/' || resource END))
)
SELECT count(*) AS events,
       count(*) FILTER (WHERE bare) AS bare,
       coalesce(avg(body_bytes) FILTER (WHERE NOT bare), 0) AS avg_body_bytes,
       (SELECT greatest(coalesce(epoch(max(stage_at) - min(stage_at)), 0), 1) / 86400.0 FROM audit_events) AS days
FROM matched
