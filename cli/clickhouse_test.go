package cli

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/kubesift/kubesift/internal/testutil"
	"github.com/kubesift/kubesift/tabular"
)

// chdbRunner runs each SQL statement of a JSON array on stdin in chdb (ClickHouse in-process)
// and prints a JSON array of their CSV results or errors.
const chdbRunner = `
const { query } = require('chdb');
const out = [];
for (const sql of JSON.parse(require('fs').readFileSync(0, 'utf8'))) {
  try { out.push({ csv: query(sql, 'CSV') }); } catch (e) { out.push({ error: String(e.message || e) }); }
}
process.stdout.write(JSON.stringify(out));
`

// clickHouseExample is the SQL block of docs/dataset.md's ClickHouse section.
var clickHouseExample = regexp.MustCompile("(?s)### ClickHouse\n.*?```sql\n(.*?)```")

// TestClickHouseReadsTheDataset runs the ClickHouse queries of docs/dataset.md, as written but
// for the dataset's directory, in ClickHouse (chdb, from npm) over a dataset and findings that
// kubesift wrote, and checks their answers against DuckDB's reading of the same files and
// against the database the dataset was exported from.
func TestClickHouseReadsTheDataset(t *testing.T) {
	node := testutil.NeedProgram(t, "apt-get install nodejs npm", "node")
	resolve := `try { require.resolve('chdb') } catch (e) { console.log(e.message.split('\n')[0]); process.exit(1) }`
	if out, err := exec.Command(node, "-e", resolve).CombinedOutput(); err != nil {
		testutil.Missing(t, "node cannot load chdb (npm install chdb@3.4.0, and NODE_PATH=its node_modules): "+strings.TrimSpace(string(out)))
	}
	doc, err := os.ReadFile("../docs/dataset.md")
	if err != nil {
		t.Fatal(err)
	}
	m := clickHouseExample.FindSubmatch(doc)
	if m == nil {
		t.Fatal("docs/dataset.md has no ```sql block under ### ClickHouse")
	}
	var statements []string
	for _, s := range strings.Split(string(m[1]), ";\n") {
		if s = strings.TrimSpace(s); s != "" {
			statements = append(statements, s)
		}
	}
	if len(statements) != 3 {
		t.Fatalf("the ClickHouse example has %d statements, want 3 (the findings of a week, a watch history, evidence): %q", len(statements), statements)
	}

	db := filepath.Join(t.TempDir(), "k.duckdb")
	dataset := filepath.Join(t.TempDir(), "dataset")
	for _, scenario := range []string{"watch-rewind", "flapping", "slow-rewind"} {
		if r := runCLI(t, "ingest", "--quiet", "--cluster", scenario, "--db", db, "../samples/"+scenario); r.code != ExitOK {
			t.Fatalf("ingest: %+v", r)
		}
	}
	if r := runCLI(t, "export", "--quiet", "--db", db, "--dataset", dataset); r.code != ExitOK {
		t.Fatalf("export --dataset: %+v", r)
	}
	partitions, err := filepath.Glob(filepath.Join(dataset, "audit_events", "cluster=*", "date=*"))
	if err != nil || len(partitions) != 3 {
		t.Fatalf("audit_events partitions %q (%v), want one for each of the three scenarios", partitions, err)
	}
	for i := range partitions {
		if r := runCLI(t, "analyze", "--quiet", "--dataset", dataset, "--partition", strconv.Itoa(i), "--findings-dir", filepath.Join(dataset, "findings")); r.code != ExitOK {
			t.Fatalf("analyze --partition %d: %+v", i, r)
		}
	}

	// slow-rewind's audit_events files are not read by the watch history's query (another
	// cluster, another day): its partition filter skips them. Damaged, they would fail it if read.
	skipped, err := filepath.Glob(filepath.Join(dataset, "audit_events", "cluster=slow-rewind", "date=*", "*.parquet"))
	if err != nil || len(skipped) == 0 {
		t.Fatalf("slow-rewind's audit_events files: %q (%v)", skipped, err)
	}
	for _, path := range skipped {
		if err := os.WriteFile(path, []byte("not parquet"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	var sqls []string
	for _, s := range statements {
		sqls = append(sqls, strings.ReplaceAll(s, "/data/kubesift", dataset))
	}
	in, err := json.Marshal(sqls)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(node, "-e", chdbRunner)
	cmd.Stdin = bytes.NewReader(in)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("node with chdb: %v\n%s", err, stderr.String())
	}
	var results []struct{ CSV, Error string }
	if err := json.Unmarshal(out, &results); err != nil || len(results) != len(sqls) {
		t.Fatalf("chdb's output %q: %v", out, err)
	}
	clickHouse := func(i int) [][]string {
		t.Helper()
		if results[i].Error != "" {
			t.Fatalf("ClickHouse: %s\n%s", results[i].Error, sqls[i])
		}
		rows := csvRecords(t, results[i].CSV)
		for _, row := range rows {
			for j, v := range row {
				if v == `\N` { // ClickHouse's CSV NULL
					row[j] = ""
				}
			}
		}
		return rows
	}
	findings := tabular.Quote(filepath.Join(dataset, "findings", "*", "*", "*.parquet"))

	week := clickHouse(0)
	want := duckRows(t, "", `SELECT cluster, rule, severity, count(*) FROM read_parquet(`+findings+`, hive_partitioning = true)
		WHERE date BETWEEN DATE '2026-11-16' AND DATE '2026-11-22' GROUP BY ALL ORDER BY ALL`)
	if !slices.EqualFunc(week, want, slices.Equal) {
		t.Errorf("the findings of the week in ClickHouse:\n%q\nDuckDB reads from the same files:\n%q", week, want)
	}
	clusters := map[string]bool{}
	for _, row := range week {
		clusters[row[0]] = true
	}
	if !clusters["watch-rewind"] || !clusters["flapping"] || clusters["slow-rewind"] {
		t.Errorf("the week's findings are of the clusters %v, want watch-rewind and flapping, not slow-rewind (2026-11-23)", clusters)
	}

	watches := clickHouse(1)
	want = duckRows(t, db, `SELECT strftime(stage_at AT TIME ZONE 'UTC', '%Y-%m-%d %H:%M:%S.%f'), username, resource, watch_rv, code
		FROM audit_events WHERE cluster = 'watch-rewind' AND CAST(stage_at AT TIME ZONE 'UTC' AS DATE) = DATE '2026-11-21'
		AND verb = 'watch' AND stage = 'ResponseComplete'`)
	// ClickHouse orders by stage_at only: rows of the same time may come in any order.
	sortRows := func(rows [][]string) { slices.SortFunc(rows, func(a, b []string) int { return slices.Compare(a, b) }) }
	got := slices.Clone(watches)
	sortRows(got)
	sortRows(want)
	if len(want) == 0 || !slices.EqualFunc(got, want, slices.Equal) {
		t.Errorf("the watch history in ClickHouse (%d rows):\n%q\naudit_events in the database (%d rows):\n%q", len(got), got, len(want), want)
	}
	if !slices.IsSortedFunc(watches, func(a, b []string) int { return strings.Compare(a[0], b[0]) }) {
		t.Errorf("ClickHouse's watch history is not in the order of stage_at: %q", watches)
	}

	evidence := clickHouse(2)
	want = duckRows(t, "", `SELECT subject, json_array_length(e), coalesce(e->>'$[0].type', '')
		FROM (SELECT subject, CAST(CAST(evidence AS VARCHAR) AS JSON) AS e, cluster, rule FROM read_parquet(`+findings+`, hive_partitioning = true))
		WHERE cluster = 'watch-rewind' AND rule = 'watch-rewind' ORDER BY subject`)
	if len(want) == 0 || !slices.EqualFunc(evidence, want, slices.Equal) {
		t.Errorf("the evidence in ClickHouse:\n%q\nDuckDB reads from the same files:\n%q", evidence, want)
	}
}

// duckRows runs query in DuckDB, over the database file db (read-only) or, with db "", in
// memory, and returns its rows as text, NULL as "".
func duckRows(t *testing.T, db, query string) [][]string {
	t.Helper()
	dsn := ""
	if db != "" {
		dsn = db + "?access_mode=read_only"
	}
	conn, err := sql.Open("duckdb", dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	rows, err := conn.QueryContext(context.Background(), query)
	if err != nil {
		t.Fatalf("%s: %v", query, err)
	}
	defer rows.Close()
	cols, err := rows.Columns()
	if err != nil {
		t.Fatal(err)
	}
	var out [][]string
	for rows.Next() {
		vals := make([]sql.NullString, len(cols))
		ptrs := make([]any, len(cols))
		for i := range vals {
			ptrs[i] = &vals[i]
		}
		if err := rows.Scan(ptrs...); err != nil {
			t.Fatal(err)
		}
		row := make([]string, len(cols))
		for i, v := range vals {
			row[i] = v.String
		}
		out = append(out, row)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}
