-- Loads one Arrow stream of audit event lines, of the files of a run, into audit_events; each row's
-- file is its number in the run's lists of load ids, names, envelopes, clusters and apiservers.
-- Every stream column is used (see streamSchema). Rows that are not audit events keep their raw
-- text in load_problem and are moved to ingest_errors before the transaction commits. Every line
-- reaches DuckDB as JSON that Go's encoding/json reads (asGoReads: lines Go cannot read are
-- rejected in Go, lone surrogates rewritten), which json_transform parses without error, so it is
-- not wrapped in try(): that wrapper cost about 40% of the transform on events with bodies.
-- drop_bodies says the event's bodies are dropped: unless --keep-secrets, those of a sensitive
-- event, which Go's isSensitiveEvent tells from the objectRef and from the bodies' own kinds.
-- response_rv_text is what ResponseRV's expression (tables.go, which fills an older database's
-- rows) reads of the event, taken by Go (responseRVText). body_fields' expression is put in by Go
-- (BodyFields in tables.go, over the event's fields).
INSERT INTO audit_events BY NAME
SELECT
    CASE WHEN ok THEN e.auditID END AS audit_id,
    e.stage AS stage,
    e.level AS level,
    e.verb AS verb,
    e.requestURI AS request_uri,
    e."user".username AS username,
    e."user".uid AS user_uid,
    e."user".groups AS groups,
    e.impersonatedUser.username AS impersonated_user,
    e.userAgent AS user_agent,
    e.sourceIPs AS source_ips,
    e.objectRef.resource AS resource,
    e.objectRef.subresource AS subresource,
    e.objectRef.apiGroup AS api_group,
    e.objectRef.apiVersion AS api_version,
    e.objectRef.namespace AS namespace,
    e.objectRef.name AS name,
    e.objectRef.uid AS object_uid,
    e.objectRef.resourceVersion AS object_rv,
    e.responseStatus.code AS code,
    e.responseStatus.reason AS status_reason,
    e.responseStatus.message AS status_message,
    received_at,
    coalesce(stage_ts, legacy_ts) AS stage_at,
    e.verb = 'watch' OR coalesce(q_watch, false) AS watch,
    q_rv AS resource_version,
    q_rv_match AS resource_version_match,
    q_timeout AS timeout_seconds,
    q_label AS label_selector,
    q_field AS field_selector,
    q_bookmarks AS allow_watch_bookmarks,
    q_initial AS send_initial_events,
    q_limit AS list_limit,
    q_continue AS list_continue,
    e.annotations AS annotations,
    CASE WHEN NOT sensitive THEN e.requestObject END AS request_object,
    CASE WHEN NOT sensitive THEN e.responseObject END AS response_object,
    CASE WHEN NOT sensitive THEN TRY_CAST(response_rv_text AS BIGINT) END AS response_rv,
    NOT sensitive AND (e.requestObject IS NOT NULL OR e.responseObject IS NOT NULL) AS has_body,
    CASE WHEN NOT sensitive THEN BODY_FIELDS END AS body_fields,
    sensitive AND (e.requestObject IS NOT NULL OR e.responseObject IS NOT NULL) AS redacted,
    coalesce(e.apiVersion, nullif(list_api_version, '')) AS audit_api_version,
    coalesce(nullif(($clusters::VARCHAR[])[file], ''), cluster) AS cluster,
    coalesce(nullif(($apiservers::VARCHAR[])[file], ''), nullif(apiserver, ''), ($path_apiservers::VARCHAR[])[file]) AS apiserver,
    ($envelopes::VARCHAR[])[file] AS envelope,
    ($source_files::VARCHAR[])[file] AS source_file,
    line AS source_line,
    byte_offset AS source_offset,
    ($load_ids::BIGINT[])[file] AS load_id,
    -- A field of the wrong type is read as NULL: the event is kept, and the field is named here
    -- to become a warning in ingest_errors (field_types is computed only when a field came out empty).
    -- A row that is not an event (its audit_id NULL) keeps its raw text here instead. The list is
    -- built only for a row that may have a problem (0.7% of a load's CPU when built for every row).
    CASE WHEN NOT ok THEN raw
        WHEN field_types IS NULL AND received_at IS NOT NULL AND (e.requestReceivedTimestamp IS NULL OR received_ts IS NOT NULL)
            AND coalesce(stage_ts, legacy_ts) IS NOT NULL AND (e.stageTimestamp IS NULL OR stage_ts IS NOT NULL) THEN NULL
        ELSE nullif(concat_ws('; ',
            CASE WHEN field_types[1] NOT IN ('NULL', 'OBJECT') THEN 'user is ' || field_types[1] || ', not OBJECT' END,
            CASE WHEN field_types[2] NOT IN ('NULL', 'ARRAY') THEN 'user.groups is ' || field_types[2] || ', not ARRAY' END,
            CASE WHEN field_types[3] NOT IN ('NULL', 'OBJECT') THEN 'impersonatedUser is ' || field_types[3] || ', not OBJECT' END,
            CASE WHEN field_types[4] NOT IN ('NULL', 'ARRAY') THEN 'sourceIPs is ' || field_types[4] || ', not ARRAY' END,
            CASE WHEN field_types[5] NOT IN ('NULL', 'OBJECT') THEN 'objectRef is ' || field_types[5] || ', not OBJECT' END,
            CASE WHEN field_types[6] NOT IN ('NULL', 'OBJECT') THEN 'responseStatus is ' || field_types[6] || ', not OBJECT' END,
            CASE WHEN field_types[7] <> 'NULL' AND e.responseStatus.code IS NULL
                THEN 'responseStatus.code ' || json_extract(raw, '$.responseStatus.code') || ' is not a 32-bit integer' END,
            CASE WHEN field_types[8] NOT IN ('NULL', 'OBJECT') THEN 'annotations is ' || field_types[8] || ', not OBJECT' END,
            CASE WHEN e.requestReceivedTimestamp IS NOT NULL AND received_ts IS NULL
                THEN 'requestReceivedTimestamp ' || to_json(e.requestReceivedTimestamp) || ' is not an RFC 3339 time' END,
            CASE WHEN e.stageTimestamp IS NOT NULL AND stage_ts IS NULL
                THEN 'stageTimestamp ' || to_json(e.stageTimestamp) || ' is not an RFC 3339 time' END,
            -- an event without its times is kept, but the rules cannot place it: said, not silent
            CASE WHEN e.requestReceivedTimestamp IS NULL AND legacy_ts IS NULL THEN 'no requestReceivedTimestamp' END,
            CASE WHEN e.stageTimestamp IS NULL AND legacy_ts IS NULL THEN 'no stageTimestamp: the rules cannot place the event in time' END), '') END AS load_problem
FROM (
    SELECT *,
        coalesce(coalesce(e.kind, CASE WHEN list_api_version <> '' THEN 'Event' END) = 'Event'
            AND starts_with(coalesce(e.apiVersion, nullif(list_api_version, '')), 'audit.k8s.io/')
            AND e.auditID <> '' AND e.stage <> '', false) AS ok,
        drop_bodies AS sensitive,
        -- RFC 3339 allows a lowercase t and z, which DuckDB's timestamp parser does not: a time
        -- it cannot read is read again in upper case (coalesce evaluates that only for those rows;
        -- upper() on every time cost twice the parse). Events of pre-1.10 v1beta1 logs carry only
        -- the legacy "timestamp": it stands for both times.
        coalesce(try_cast(e."timestamp" AS TIMESTAMPTZ), try_cast(upper(e."timestamp") AS TIMESTAMPTZ)) AS legacy_ts,
        coalesce(try_cast(e.requestReceivedTimestamp AS TIMESTAMPTZ), try_cast(upper(e.requestReceivedTimestamp) AS TIMESTAMPTZ)) AS received_ts,
        coalesce(received_ts, legacy_ts) AS received_at,
        coalesce(try_cast(e.stageTimestamp AS TIMESTAMPTZ), try_cast(upper(e.stageTimestamp) AS TIMESTAMPTZ)) AS stage_ts,
        CASE WHEN e."user".username IS NULL OR e."user".groups IS NULL OR e.sourceIPs IS NULL OR e.annotations IS NULL
                OR (e.impersonatedUser IS NOT NULL AND e.impersonatedUser.username IS NULL)
                OR (e.objectRef IS NOT NULL AND e.objectRef.resource IS NULL)
                OR (e.responseStatus IS NOT NULL AND e.responseStatus.code IS NULL)
            THEN try(json_type(raw, ['$.user', '$.user.groups', '$.impersonatedUser', '$.sourceIPs', '$.objectRef',
                '$.responseStatus', '$.responseStatus.code', '$.annotations'])) END AS field_types
    FROM (
        SELECT raw, line, byte_offset, q_watch, q_rv, q_rv_match, q_timeout, q_label, q_field,
            q_bookmarks, q_initial, q_limit, q_continue, response_rv_text, drop_bodies, list_api_version, cluster, apiserver, file,
            json_transform(raw, '{
                "kind": "VARCHAR", "apiVersion": "VARCHAR", "level": "VARCHAR", "auditID": "VARCHAR",
                "stage": "VARCHAR", "requestURI": "VARCHAR", "verb": "VARCHAR",
                "user": {"username": "VARCHAR", "uid": "VARCHAR", "groups": ["VARCHAR"]},
                "impersonatedUser": {"username": "VARCHAR"},
                "sourceIPs": ["VARCHAR"], "userAgent": "VARCHAR",
                "objectRef": {"resource": "VARCHAR", "namespace": "VARCHAR", "name": "VARCHAR", "uid": "VARCHAR",
                    "apiGroup": "VARCHAR", "apiVersion": "VARCHAR", "resourceVersion": "VARCHAR", "subresource": "VARCHAR"},
                "responseStatus": {"code": "INTEGER", "status": "VARCHAR", "reason": "VARCHAR", "message": "VARCHAR"},
                "requestObject": "JSON", "responseObject": "JSON",
                "requestReceivedTimestamp": "VARCHAR", "stageTimestamp": "VARCHAR", "timestamp": "VARCHAR",
                "annotations": "MAP(VARCHAR, VARCHAR)"
            }') AS e
        FROM STREAM_VIEW
    )
)
