-- election-lock-churn, stage stage_lock_writes: the writes of the candidates (stage_lock_candidates), each object's
-- every write from the start of the lookback (ks_lock_writes_all, queries/macros.sql), which the pieces share out. When
-- the rule runs in more than one piece, analyze sorts it by cluster, namespace (ns_key: '' for cluster-scoped objects)
-- and the place of the object (place_bucket: sort_for_pieces in the rule's YAML), so that a piece, which joins only its
-- own namespaces and, of a namespace it shares with other pieces, only its buckets, skips the others' row groups. In
-- one piece the sort bought nothing and took half the stage's time: 1.14-1.26 s against 0.66-0.73 s on the real
-- recordings replicated to 10M events, whose 7 candidates have 882,244 writes (BENCHMARKS.md).
SELECT w.*
FROM ks_lock_writes_all($lookback_since, $since, $until) w
SEMI JOIN stage_lock_candidates c
  ON c.cluster = w.cluster AND c.resource = w.resource
 AND c.namespace IS NOT DISTINCT FROM w.namespace AND c.name IS NOT DISTINCT FROM w.name
