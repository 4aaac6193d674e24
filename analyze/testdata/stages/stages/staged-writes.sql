-- staged-writes, stage stage_writes: the audit writes of the window, each with a random number
SELECT cluster, namespace, random() AS drawn
FROM audit_events
WHERE verb IN ('create', 'update', 'patch') AND stage_at >= ks_window_start($since) AND stage_at <= ks_window_end($until)
