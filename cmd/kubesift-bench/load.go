package main

import (
	"context"
	"database/sql"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"time"

	_ "github.com/duckdb/duckdb-go/v2" // the duckdb driver of the baseline loads

	"github.com/kubesift/kubesift/ingest"
	"github.com/kubesift/kubesift/ingest/audit"
	"github.com/kubesift/kubesift/store"
)

// narrowColumns are the audit event's top-level fields as read_ndjson would read them with
// explicit columns (17 columns, nested ones as structs): the first bare DuckDB load kubesift's
// ingestion is measured against.
const narrowColumns = `{kind: 'VARCHAR', apiVersion: 'VARCHAR', level: 'VARCHAR', auditID: 'VARCHAR', stage: 'VARCHAR',
 requestURI: 'VARCHAR', verb: 'VARCHAR', user: 'STRUCT(username VARCHAR, uid VARCHAR, groups VARCHAR[])',
 impersonatedUser: 'STRUCT(username VARCHAR)', sourceIPs: 'VARCHAR[]', userAgent: 'VARCHAR',
 objectRef: 'STRUCT(resource VARCHAR, namespace VARCHAR, name VARCHAR, uid VARCHAR, apiGroup VARCHAR, apiVersion VARCHAR, resourceVersion VARCHAR, subresource VARCHAR)',
 responseStatus: 'STRUCT(code INTEGER, status VARCHAR, reason VARCHAR, message VARCHAR)',
 requestObject: 'JSON', responseObject: 'JSON', requestReceivedTimestamp: 'TIMESTAMPTZ', stageTimestamp: 'TIMESTAMPTZ',
 annotations: 'MAP(VARCHAR, VARCHAR)'}`

// auditTableBaseline selects the rows of the table kubesift stores, audit_events, with
// read_ndjson alone: every column that comes from a JSON field, with audit_events' name and type;
// the derived columns computed by the SQL expressions of ingest/audit/load.sql (watch, has_body,
// body_fields, redacted, the redacted bodies, response_rv, audit_api_version), and watch's query
// test as a regular expression; the bookkeeping columns kubesift writes as constants for one file
// (cluster, apiserver, envelope, source_file, load_id, load_problem) as the same constants. 39 of
// the 50 columns audit_events stores: left out are source_line and source_offset (read_ndjson has
// no line numbers) and the nine query parameter columns kubesift parses from the request URI in Go
// (resource_version through list_continue). latency_ms and watch_rv, computed when read, are
// stored by neither.
var auditTableBaseline = `SELECT
    auditID AS audit_id, stage, level, verb, requestURI AS request_uri,
    "user".username AS username, "user".uid AS user_uid, "user".groups AS groups,
    impersonatedUser.username AS impersonated_user, userAgent AS user_agent, sourceIPs AS source_ips,
    objectRef.resource AS resource, objectRef.subresource AS subresource, objectRef.apiGroup AS api_group,
    objectRef.apiVersion AS api_version, objectRef.namespace AS namespace, objectRef.name AS name,
    objectRef.uid AS object_uid, objectRef.resourceVersion AS object_rv,
    responseStatus.code AS code, responseStatus.reason AS status_reason, responseStatus.message AS status_message,
    requestReceivedTimestamp AS received_at, stageTimestamp AS stage_at,
    verb = 'watch' OR coalesce(regexp_matches(requestURI, '[?&]watch=(1|t|T|true|TRUE|True)(&|$)'), false) AS watch,
    annotations,
    CASE WHEN NOT sensitive THEN requestObject END AS request_object,
    CASE WHEN NOT sensitive THEN responseObject END AS response_object,
    CASE WHEN NOT sensitive THEN ` + audit.ResponseRV("verb", "responseObject") + ` END AS response_rv,
    NOT sensitive AND (requestObject IS NOT NULL OR responseObject IS NOT NULL) AS has_body,
    CASE WHEN NOT sensitive THEN ` + audit.BodyFields("objectRef.resource", "objectRef.subresource", "objectRef.namespace", "verb", "stage",
	"responseObject", "requestObject") + ` END AS body_fields,
    sensitive AND (requestObject IS NOT NULL OR responseObject IS NOT NULL) AS redacted,
    apiVersion AS audit_api_version,
    '' AS cluster, '' AS apiserver, 'json-lines' AS envelope, $1 AS source_file, 1::BIGINT AS load_id,
    NULL::VARCHAR AS load_problem
FROM (
    SELECT *, coalesce(objectRef.resource IN ('secrets', 'tokenreviews', 'tokenrequests')
        OR (objectRef.resource = 'serviceaccounts' AND objectRef.subresource = 'token'), false) AS sensitive
    FROM read_ndjson($1, columns = ` + narrowColumns + `)
)`

// The bare DuckDB loads kubesift is measured against, by name, each a query whose rows the load
// stores: the audit_events table and the 17 top-level fields of audit logs with read_ndjson, the
// lines of a conntrack dump into one VARCHAR column with read_csv.
var baselineStatements = map[string]string{
	"audit-table": auditTableBaseline,
	"audit-17":    "SELECT * FROM read_ndjson($1, columns = " + narrowColumns + ")",
	"conntrack": `SELECT * FROM read_csv($1, columns = {'line': 'VARCHAR'},
		delim = '\x1f', quote = '', escape = '', header = false, auto_detect = false)`,
}

// productTables names the baselines whose rows are a table kubesift stores: with kubesift's
// settings such a baseline inserts them into that table as store.Open declares it, with its
// columns' compressions (the bodies zstd, the vocabularies dict_fsst; store.Column.Compression).
// Every other load creates a table of its own, baseline, whose compressions DuckDB chooses: with
// the bodies left uncompressed it wrote 907 MB of the bench mix's 1 GB where audit_events holds
// 55 MB, and loaded it in 5.9-6.0 s against 5.2-5.3 s (BENCHMARKS.md).
var productTables = map[string]string{"audit-table": "audit_events"}

// baselineTable is the table the baseline load name stores its rows in with settings.
func baselineTable(name, settings string) string {
	if table, ok := productTables[name]; ok && settings == settingsProduct {
		return table
	}
	return "baseline"
}

// The settings of a baseline load: DuckDB's defaults (a plain database file), or kubesift's own
// (store.Open: the attach options, row group size, buffer settings and --memory-limit, and the
// tables as kubesift declares them: productTables).
const (
	settingsDefaults = "defaults"
	settingsProduct  = "product"
)

// runBaseline is the child process of a baseline load (see baselineArg): it loads path with
// the baseline statement of that name into a new database file opened with settings, into the
// table baselineTable names, and checkpoints it.
func runBaseline(ctx context.Context, settings, memoryLimit, name, dbPath, path string) error {
	statement, ok := baselineStatements[name]
	if !ok {
		return fmt.Errorf("unknown baseline %q", name)
	}
	var db *sql.DB
	switch settings {
	case settingsDefaults:
		var err error
		if db, err = sql.Open("duckdb", dbPath); err != nil {
			return err
		}
	case settingsProduct:
		sdb, err := store.Open(ctx, dbPath, ingest.Schema(), store.Options{MemoryLimit: memoryLimit})
		if err != nil {
			return err
		}
		db = sdb.DB
	default:
		return fmt.Errorf("unknown baseline settings %q (want %s or %s)", settings, settingsDefaults, settingsProduct)
	}
	defer db.Close()
	if table := baselineTable(name, settings); table != "baseline" {
		statement = "INSERT INTO " + table + " BY NAME " + statement
	} else {
		statement = "CREATE TABLE baseline AS " + statement
	}
	_, err := db.ExecContext(ctx, statement, path)
	if err == nil {
		_, err = db.ExecContext(ctx, "CHECKPOINT")
	}
	if err != nil {
		return fmt.Errorf("baseline load of %s: %w", path, err)
	}
	return nil
}

// childRun is what timeChild measured of a child process.
type childRun struct {
	wall, cpu time.Duration // cpu: user and system time
	peak      int64         // bytes
}

// timeChild runs this program with args in a child process for its wall time, CPU time and peak
// RSS. The peak is the child's VmHWM, sampled until it exits: the rusage of a child would also
// count the memory of this process at fork time.
func timeChild(ctx context.Context, self string, args []string) (childRun, error) {
	cmd := exec.CommandContext(ctx, self, args...)
	cmd.Stderr = os.Stderr
	start := time.Now()
	if err := cmd.Start(); err != nil {
		return childRun{}, err
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	var peak int64
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case err := <-done:
			if err != nil {
				return childRun{}, fmt.Errorf("%s: %w", strings.Join(args, " "), err)
			}
			cpu := cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()
			return childRun{wall: time.Since(start), cpu: cpu, peak: peak}, nil
		case <-tick.C:
			if hwm := vmHWM(cmd.Process.Pid); hwm > peak {
				peak = hwm
			}
		}
	}
}

// vmHWM returns the peak resident set size of a running process in bytes (0 if unknown).
func vmHWM(pid int) int64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			kb, _ := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
			return kb * 1024
		}
	}
	return 0
}

func removeDB(path string) {
	os.Remove(path)
	os.Remove(path + ".wal")
}
