package store

// kubesift's own tables: what each load and run did, and the lines it rejected.

var ingestErrorsTable = Table{
	Name: "ingest_errors",
	Doc: "One row per input line (or document) that could not be loaded; the good lines around it are kept. " +
		"Also, with kind endpoints, audit events that were loaded but whose Endpoints/EndpointSlice body gave no endpoint states.",
	Columns: []Column{
		{"source_file", "VARCHAR", "file the line was read from"},
		{"line", "BIGINT", "1-based line number"},
		{"byte_offset", "BIGINT", "offset of the line's first byte in the (decompressed) file"},
		{"reason", "VARCHAR", "why it was rejected, e.g. unexpected end of JSON input"},
		{"excerpt", "VARCHAR", "the start of the line (at most 200 bytes), for a first look"},
		{"kind", "VARCHAR", "evidence kind being loaded: audit, conntrack or endpoints"},
		{"load_id", "BIGINT", "ingest_files.load_id of the load"},
	},
}

var ingestFilesTable = Table{
	Name:       "ingest_files",
	TimeColumn: "finished_at",
	Doc:        "One row per loaded file: what was read, how much and how it went. Written in the same transaction as the file's rows.",
	Columns: []Column{
		{"load_id", "BIGINT", "identifies the load; audit_events.load_id and ingest_errors.load_id refer to it"},
		{"kind", "VARCHAR", "evidence kind: audit, conntrack or endpoints"},
		{"source_file", "VARCHAR", "path as given (- for stdin)"},
		{"size_bytes", "BIGINT", "size of the file on disk (compressed size for .gz)"},
		{"read_bytes", "BIGINT", "bytes read after decompression"},
		{"identity", "VARCHAR", "xxh3 of the file's first line: the same while the file grows and after rotation renames or compresses it"},
		{"start_offset", "BIGINT", "decompressed byte offset the load started at (0, or where the previous load of the same file stopped)"},
		{"end_offset", "BIGINT", "decompressed byte offset after the last complete line read: where the next load of this file starts"},
		{"end_line", "BIGINT", "number of the last complete line read"},
		{"lines", "BIGINT", "lines read"},
		{"rows", "BIGINT", "rows added (after removing duplicates)"},
		{"rejected", "BIGINT", "lines rejected into ingest_errors"},
		{"duplicates", "BIGINT", "rows skipped because an identical (audit_id, stage) was already loaded"},
		{"started_at", "TIMESTAMPTZ", "when the load started"},
		{"finished_at", "TIMESTAMPTZ", "when the load committed"},
		{"note", "VARCHAR", "what went wrong with the file as a whole, e.g. a corrupt gzip member after which reading stopped"},
	},
}

var runsTable = Table{
	Name:       "runs",
	TimeColumn: "started_at",
	Doc:        "One row per kubesift run with a database file: when it ran, the window it analyzed and what it found. A run without --since analyzes from the previous run's start.",
	Columns: []Column{
		{"started_at", "TIMESTAMPTZ", "when the run started"},
		{"finished_at", "TIMESTAMPTZ", "when it finished"},
		{"since", "TIMESTAMPTZ", "start of the analyzed window (NULL: unbounded)"},
		{"until", "TIMESTAMPTZ", "end of the analyzed window (NULL: unbounded)"},
		{"files", "BIGINT", "files loaded"},
		{"rows", "BIGINT", "rows added"},
		{"rejected", "BIGINT", "lines rejected into ingest_errors"},
		{"critical", "BIGINT", "critical findings"},
		{"warning", "BIGINT", "warning findings"},
		{"info", "BIGINT", "info findings"},
		{"exit_code", "INTEGER", "the run's exit code"},
	},
}
