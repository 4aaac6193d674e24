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
	"github.com/kubesift/kubesift/store"
)

// baselineColumns are the audit event's top-level fields as read_ndjson would read them
// with explicit columns: the bare DuckDB load kubesift's ingestion is measured against.
const baselineColumns = `{kind: 'VARCHAR', apiVersion: 'VARCHAR', level: 'VARCHAR', auditID: 'VARCHAR', stage: 'VARCHAR',
 requestURI: 'VARCHAR', verb: 'VARCHAR', user: 'STRUCT(username VARCHAR, uid VARCHAR, groups VARCHAR[])',
 impersonatedUser: 'STRUCT(username VARCHAR)', sourceIPs: 'VARCHAR[]', userAgent: 'VARCHAR',
 objectRef: 'STRUCT(resource VARCHAR, namespace VARCHAR, name VARCHAR, uid VARCHAR, apiGroup VARCHAR, apiVersion VARCHAR, resourceVersion VARCHAR, subresource VARCHAR)',
 responseStatus: 'STRUCT(code INTEGER, status VARCHAR, reason VARCHAR, message VARCHAR)',
 requestObject: 'JSON', responseObject: 'JSON', requestReceivedTimestamp: 'TIMESTAMPTZ', stageTimestamp: 'TIMESTAMPTZ',
 annotations: 'MAP(VARCHAR, VARCHAR)'}`

// The bare DuckDB loads kubesift is measured against: read_ndjson with explicit columns for
// audit logs, the lines of a conntrack dump into one VARCHAR column.
const (
	auditBaseline     = "CREATE TABLE baseline AS SELECT * FROM read_ndjson($1, columns = " + baselineColumns + ")"
	conntrackBaseline = `CREATE TABLE baseline AS SELECT * FROM read_csv($1, columns = {'line': 'VARCHAR'},
		delim = '\x1f', quote = '', escape = '', header = false, auto_detect = false)`
)

// The settings of a baseline load: DuckDB's defaults (a plain database file), or kubesift's own
// (store.Open: the attach options, row group size, buffer settings and --memory-limit).
const (
	settingsDefaults = "defaults"
	settingsProduct  = "product"
)

// runBaseline is the child process of a baseline load (see baselineArg): it loads path with
// statement into a new database file opened with settings, and checkpoints it.
func runBaseline(ctx context.Context, settings, memoryLimit, statement, dbPath, path string) error {
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
	_, err := db.ExecContext(ctx, statement, path)
	if err == nil {
		_, err = db.ExecContext(ctx, "CHECKPOINT")
	}
	if err != nil {
		return fmt.Errorf("baseline load of %s: %w", path, err)
	}
	return nil
}

// timeChild runs this program with args in a child process for its wall time and peak RSS. The
// peak is the child's VmHWM, sampled until it exits: the rusage of a child would also count the
// memory of this process at fork time.
func timeChild(ctx context.Context, self string, args []string) (time.Duration, int64, error) {
	cmd := exec.CommandContext(ctx, self, args...)
	cmd.Stderr = os.Stderr
	cmd.Env = os.Environ()
	if os.Getenv("GOMEMLIMIT") == "" {
		cmd.Env = append(cmd.Env, "GOMEMLIMIT="+childMemoryLimit)
	}
	start := time.Now()
	if err := cmd.Start(); err != nil {
		return 0, 0, err
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
				return 0, 0, fmt.Errorf("%s: %w", strings.Join(args, " "), err)
			}
			return time.Since(start), peak, nil
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
