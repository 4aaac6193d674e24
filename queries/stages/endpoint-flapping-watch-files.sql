-- endpoint-flapping, stage stage_endpoint_watch_files: the snapshot files that are watch streams
-- (ks_endpoint_watch_files), decided once over all their rows for every piece of the rule: a piece's Services may lie
-- in any file, and which files are watch streams decides the streams of all of them.
SELECT source, source_file
FROM ks_endpoint_watch_files
