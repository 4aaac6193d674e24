-- staged-writes: one finding per piece the query ran in, naming it ($piece of $pieces), with its writes (those of
-- stage_writes that hash to the piece), all the staged writes and the sum of their random numbers
SELECT 'staged-writes' AS rule, 'info' AS severity, '' AS cluster, NULL::VARCHAR AS namespace, NULL::VARCHAR AS name,
       format('piece {} of {}', $piece + 1, $pieces) AS subject,
       TIMESTAMPTZ '2026-01-01 00:00:00Z' AS first_seen, TIMESTAMPTZ '2026-01-01 00:00:00Z' AS last_seen,
       count(*) FILTER (WHERE ks_in_piece(cluster, namespace, $piece, $pieces)) AS count,
       struct_pack(staged := count(*), drawn := sum(drawn)) AS facts, '[]' AS evidence
FROM stage_writes
