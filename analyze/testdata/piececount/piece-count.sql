-- piece-count: one finding per piece the query ran in, naming it ($piece of $pieces); its audit events
-- are those of the window that hash to the piece (ks_in_piece)
SELECT 'piece-count' AS rule, 'info' AS severity, '' AS cluster, NULL::VARCHAR AS namespace, NULL::VARCHAR AS name,
       format('piece {} of {}', $piece + 1, $pieces) AS subject,
       coalesce(min(stage_at), TIMESTAMPTZ '2026-01-01 00:00:00Z') AS first_seen,
       coalesce(max(stage_at), TIMESTAMPTZ '2026-01-01 00:00:00Z') AS last_seen,
       count(*) AS count, struct_pack(pieces := $pieces) AS facts, '[]' AS evidence
FROM audit_events
WHERE stage_at >= coalesce($lookback_since, ks_window_start($since)) AND stage_at <= ks_window_end($until)
  AND ks_in_piece(cluster, namespace, $piece, $pieces)
