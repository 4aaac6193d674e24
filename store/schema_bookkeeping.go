package store

// kubesift's own tables: what each load and run did, and the lines it rejected.

var ingestErrorsTable = Table{
	Name: "ingest_errors",
	Doc: "One row per input line (or document) that could not be loaded (severity error), or that was loaded with a field it could not read (severity warning); the good lines around it are kept. " +
		"Also, with kind endpoints, audit events that were loaded but whose Endpoints/EndpointSlice body gave no endpoint states.",
	Columns: []Column{
		{Name: "source_file", Type: "VARCHAR", Doc: "file the line was read from"},
		{Name: "line", Type: "BIGINT", Doc: "1-based line number"},
		{Name: "byte_offset", Type: "BIGINT", Doc: "offset of the line's first byte in the (decompressed) file"},
		{Name: "reason", Type: "VARCHAR", Doc: "why it was rejected, e.g. unexpected end of JSON input"},
		{Name: "excerpt", Type: "VARCHAR", Doc: "the start of the line (at most 200 bytes), for a first look"},
		{Name: "kind", Type: "VARCHAR", Doc: "evidence kind being loaded: audit, conntrack or endpoints"},
		{Name: "load_id", Type: "BIGINT", Doc: "ingest_files.load_id of the load"},
		{Name: "severity", Type: "VARCHAR", Doc: "error: the line was rejected (counted in ingest_files.rejected); warning: the row was kept but a field of it could not be read and is NULL (counted in ingest_files.warnings)",
			// every row of before warnings is an error
			Backfill: "'error'"},
	},
}

var ingestFilesTable = Table{
	Name:       "ingest_files",
	TimeColumn: "finished_at",
	Doc:        "One row per loaded file: what was read, how much and how it went, written in the same transaction as the file's rows; and one row per input that was not loaded, with the reason in skipped.",
	Columns: []Column{
		{Name: "load_id", Type: "BIGINT", Doc: "identifies the load; audit_events.load_id and ingest_errors.load_id refer to it; NULL for an input that was not loaded"},
		{Name: "kind", Type: "VARCHAR", Doc: "evidence kind: audit, conntrack or endpoints"},
		{Name: "source_file", Type: "VARCHAR", Doc: "path as given (- for stdin)"},
		{Name: "size_bytes", Type: "BIGINT", Doc: "size of the file on disk (compressed size for .gz)"},
		{Name: "read_bytes", Type: "BIGINT", Doc: "bytes read after decompression"},
		{Name: "identity", Type: "VARCHAR", Doc: "xxh3 of the file's first line (decompressed): the same while the file grows and after rotation renames or compresses it; finds the loads a file may continue"},
		{Name: "start_offset", Type: "BIGINT", Doc: "decompressed byte offset the load started at (0, or where the previous load of the same file stopped)"},
		{Name: "end_offset", Type: "BIGINT", Doc: "decompressed byte offset after the last complete line read: where the next load of this file starts"},
		{Name: "end_line", Type: "BIGINT", Doc: "number of the last complete line read"},
		{Name: "lines", Type: "BIGINT", Doc: "lines read"},
		{Name: "rows", Type: "BIGINT", Doc: "rows added (after removing duplicates)"},
		{Name: "rejected", Type: "BIGINT", Doc: "lines rejected into ingest_errors"},
		{Name: "warnings", Type: "BIGINT", Doc: "rows kept with a field that could not be read (NULL), each a warning in ingest_errors"},
		{Name: "duplicates", Type: "BIGINT", Doc: "rows skipped because a row of the same dedupe key (for audit events: audit_id, stage, cluster) was already loaded"},
		{Name: "started_at", Type: "TIMESTAMPTZ", Doc: "when the load started"},
		{Name: "finished_at", Type: "TIMESTAMPTZ", Doc: "when the load committed"},
		{Name: "note", Type: "VARCHAR", Doc: "what went wrong with the file as a whole, e.g. a read error after which reading stopped"},
		{Name: "skipped", Type: "VARCHAR", Doc: "why the input was not loaded (not evidence, empty, already loaded, no new data, or the error that stopped it); NULL for a load"},
		{Name: "device", Type: "BIGINT", Doc: "device of the file on disk (NULL for a stream or where the system has none)"},
		{Name: "inode", Type: "BIGINT", Doc: "inode of the file on disk: the same while it grows and after a rename"},
		{Name: "cluster", Type: "VARCHAR", Doc: "cluster the load was given (--cluster, --cluster-per-dir, a snapshot's recorded cluster); NULL when none: a file is continued only by a load for the same cluster"},
		{Name: "head_bytes", Type: "BIGINT", Doc: "how many decompressed bytes from the start head_hash covers (the first 64 KiB, at most end_offset)"},
		{Name: "head_hash", Type: "VARCHAR", Doc: "xxh3 of the first head_bytes decompressed bytes: a later load continues this one only when its file starts the same"},
		{Name: "tail_hash", Type: "VARCHAR", Doc: "xxh3 of the 4 KiB of decompressed bytes before end_offset: checked before a later load continues from end_offset"},
	},
}

var runsTable = Table{
	Name:       "runs",
	TimeColumn: "started_at",
	Doc:        "One row per kubesift run with a database file: when it ran, the window it analyzed and what it found. A run without --since and --until analyzes the time span of the evidence loaded since the previous successful run.",
	Columns: []Column{
		{Name: "started_at", Type: "TIMESTAMPTZ", Doc: "when the run started"},
		{Name: "finished_at", Type: "TIMESTAMPTZ", Doc: "when it finished"},
		{Name: "since", Type: "TIMESTAMPTZ", Doc: "start of the analyzed window (NULL: unbounded)"},
		{Name: "until", Type: "TIMESTAMPTZ", Doc: "end of the analyzed window (NULL: unbounded)"},
		{Name: "files", Type: "BIGINT", Doc: "files loaded"},
		{Name: "rows", Type: "BIGINT", Doc: "rows added"},
		{Name: "rejected", Type: "BIGINT", Doc: "lines rejected into ingest_errors"},
		{Name: "critical", Type: "BIGINT", Doc: "critical findings"},
		{Name: "warning", Type: "BIGINT", Doc: "warning findings"},
		{Name: "info", Type: "BIGINT", Doc: "info findings"},
		{Name: "exit_code", Type: "INTEGER", Doc: "the run's exit code"},
	},
}
