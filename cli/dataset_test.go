package cli

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"

	"github.com/kubesift/kubesift/tabular"
)

// reportFindings returns the findings and the rules' outcomes of a -o json report.
func reportFindings(t *testing.T, r result) string {
	t.Helper()
	if r.code != ExitOK {
		t.Fatalf("analyze: %+v", r)
	}
	var rep struct {
		Findings json.RawMessage `json:"findings"`
		Rules    json.RawMessage `json:"rules"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &rep); err != nil {
		t.Fatal(err)
	}
	return string(rep.Findings) + "\n" + string(rep.Rules)
}

func TestDatasetFlags(t *testing.T) {
	dataset := t.TempDir()
	for _, args := range [][]string{
		{"export", "--dataset", dataset, "-o", "csv"},
		{"export", "--dataset", dataset, "--out", "x"},
		{"export", "--dataset", dataset, "--table", "runs"},
		{"analyze", "--cluster", "a"},
		{"analyze", "--dataset", dataset, "--db", "k.duckdb"},
		{"analyze", "--dataset", dataset, "--findings-dir", dataset},
		{"analyze", "--partition", "0"},
	} {
		if r := runCLI(t, args...); r.code != ExitUsage {
			t.Errorf("%s: exit %d (%s), want usage error", strings.Join(args, " "), r.code, r.stderr)
		}
	}
	if r := runCLI(t, "analyze", "--dataset", dataset); r.code == ExitOK || !strings.Contains(r.stderr, "holds no partitions") {
		t.Errorf("empty dataset: %+v", r)
	}
}

// TestDatasetPartition runs analyze --dataset --partition N --findings-dir as an Indexed Job's
// pod does: the partition's findings and coverage are those of the whole dataset over the
// partition's day (real-lab is one cluster and one day), written as Parquet under
// DIR/cluster=/date=2026-11-21/.
func TestDatasetPartition(t *testing.T) {
	db := filepath.Join(t.TempDir(), "k.duckdb")
	dataset := filepath.Join(t.TempDir(), "dataset")
	if r := runCLI(t, "ingest", "--quiet", "--db", db, "../samples/real-lab"); r.code != ExitOK {
		t.Fatalf("ingest: %+v", r)
	}
	if r := runCLI(t, "export", "--quiet", "--db", db, "--dataset", dataset); r.code != ExitOK {
		t.Fatalf("export --dataset: %+v", r)
	}
	findings := filepath.Join(dataset, "findings")
	want := reportFindings(t, runCLI(t, "analyze", "--dataset", dataset, "-o", "json",
		"--since", "2026-11-21T00:00:00Z", "--until", "2026-11-21T23:59:59.999999999Z"))
	got := reportFindings(t, runCLI(t, "analyze", "--quiet", "--dataset", dataset, "--partition", "0", "--findings-dir", findings, "-o", "json"))
	if got != want {
		t.Errorf("partition 0:\n%s\nwant\n%s", got, want)
	}
	if _, err := os.Stat(filepath.Join(findings, "cluster=", "date=2026-11-21", "findings.parquet")); err != nil {
		t.Error(err)
	}
	if r := runCLI(t, "analyze", "--dataset", dataset, "--partition", "1"); r.code != ExitUsage || !strings.Contains(r.stderr, "1 (cluster, day) partitions") {
		t.Errorf("--partition 1 of 1: %+v", r)
	}
	// a Job made for two partitions that finds one: an export changed the window's partitions
	if r := runCLI(t, "analyze", "--quiet", "--dataset", dataset, "--partition", "0", "--partitions", "2"); r.code != ExitUsage || !strings.Contains(r.stderr, "--partitions 2: the dataset has 1 (cluster, day) partitions") {
		t.Errorf("--partition 0 --partitions 2 over 1 partition: %+v", r)
	}
	if got := reportFindings(t, runCLI(t, "analyze", "--quiet", "--dataset", dataset, "--partition", "0", "--partitions", "1", "-o", "json")); got != want {
		t.Errorf("partition 0 of 1:\n%s\nwant\n%s", got, want)
	}
	if r := runCLI(t, "analyze", "--dataset", dataset, "--partitions", "1"); r.code != ExitUsage {
		t.Errorf("--partitions without --partition: %+v", r)
	}
	// --profile prints each rule's line, a cluster's under its name
	for _, args := range [][]string{{"--profile"}, {"--profile", "--partition", "0"}} {
		r := runCLI(t, append([]string{"analyze", "--quiet", "--dataset", dataset, "-o", "json"}, args...)...)
		if r.code != ExitOK || !strings.Contains(r.stderr, "watch-rewind") || !strings.Contains(r.stderr, "all rules") {
			t.Errorf("analyze --dataset %v: no profile: %+v", args, r)
		}
		if named := strings.Contains(r.stderr, `cluster "":`); named != (len(args) == 1) {
			t.Errorf("analyze --dataset %v: cluster named %v: %q", args, named, r.stderr)
		}
	}
}

// engineTable is one CREATE EXTERNAL TABLE of docs/dataset.md.
type engineTable struct {
	name, location string
	columns        [][2]string // name, type
	partitions     []string
}

var externalTable = regexp.MustCompile("(?s)CREATE EXTERNAL TABLE (\\w+) \\((.*?)\\)\\nPARTITIONED BY \\((.*?)\\)\\nSTORED AS PARQUET\\nLOCATION '([^']*)';")

// engineTables reads the external tables that docs/dataset.md documents for other engines.
func engineTables(t *testing.T) []engineTable {
	t.Helper()
	doc, err := os.ReadFile("../docs/dataset.md")
	if err != nil {
		t.Fatal(err)
	}
	var tables []engineTable
	for _, m := range externalTable.FindAllStringSubmatch(string(doc), -1) {
		et := engineTable{name: m[1], location: m[4]}
		for _, line := range strings.Split(strings.TrimSpace(m[2]), "\n") {
			name, typ, _ := strings.Cut(strings.TrimSuffix(strings.TrimSpace(line), ","), " ")
			et.columns = append(et.columns, [2]string{name, typ})
		}
		for _, p := range strings.Split(m[3], ",") {
			name, _, _ := strings.Cut(strings.TrimSpace(p), " ")
			et.partitions = append(et.partitions, strings.Trim(name, "`"))
		}
		tables = append(tables, et)
	}
	if len(tables) < 2 {
		t.Fatalf("docs/dataset.md documents %d external tables, want the findings and a raw table", len(tables))
	}
	return tables
}

// readsAs reports whether an engine column of the Hive type typ reads the Parquet column that
// arrow-go decodes as dt.
func readsAs(typ string, dt arrow.DataType) bool {
	if ext, ok := dt.(arrow.ExtensionType); ok {
		dt = ext.StorageType()
	}
	isString := func(dt arrow.DataType) bool {
		if ext, ok := dt.(arrow.ExtensionType); ok {
			dt = ext.StorageType()
		}
		return dt.ID() == arrow.STRING || dt.ID() == arrow.LARGE_STRING
	}
	switch typ {
	case "string":
		return isString(dt)
	case "binary":
		return dt.ID() == arrow.BINARY || dt.ID() == arrow.LARGE_BINARY
	case "bigint":
		return dt.ID() == arrow.INT64
	case "int":
		return dt.ID() == arrow.INT32
	case "double":
		return dt.ID() == arrow.FLOAT64
	case "boolean":
		return dt.ID() == arrow.BOOL
	case "timestamp":
		ts, ok := dt.(*arrow.TimestampType)
		return ok && (ts.Unit == arrow.Microsecond || ts.Unit == arrow.Millisecond) && ts.TimeZone != ""
	case "array<string>":
		l, ok := dt.(*arrow.ListType)
		return ok && isString(l.Elem())
	case "map<string,string>":
		m, ok := dt.(*arrow.MapType)
		return ok && isString(m.KeyType()) && isString(m.ItemType())
	}
	return false
}

// TestDatasetOfSeveralClusters: analyze --dataset over every cluster of a dataset reports what
// analyze --db reports over the database it was exported from, each cluster's coverage included:
// here a cluster with conntrack captures and one without. A third cluster whose file is not
// Parquet is reported as not evaluated, naming the file, with exit code 5 and the other clusters'
// findings; alone it is an error.
func TestDatasetOfSeveralClusters(t *testing.T) {
	db := filepath.Join(t.TempDir(), "k.duckdb")
	dataset := filepath.Join(t.TempDir(), "dataset")
	for cluster, dir := range map[string]string{"a": "../samples/probe-conntrack", "b": "../samples/flapping"} {
		if r := runCLI(t, "ingest", "--quiet", "--cluster", cluster, "--db", db, dir); r.code != ExitOK {
			t.Fatalf("ingest %s: %+v", dir, r)
		}
	}
	if r := runCLI(t, "export", "--quiet", "--db", db, "--dataset", dataset); r.code != ExitOK {
		t.Fatalf("export --dataset: %+v", r)
	}
	fromDB := runCLI(t, "analyze", "--db", db, "-o", "json")
	want := reportFindings(t, fromDB)
	var rep struct{ Rules []ruleCoverage }
	if err := json.Unmarshal([]byte(fromDB.stdout), &rep); err != nil {
		t.Fatal(err)
	}
	i := slices.IndexFunc(rep.Rules, func(r ruleCoverage) bool { return r.ID == "probe-conntrack-exhaustion" })
	var coverage []string
	for _, c := range rep.Rules[max(i, 0)].Coverage {
		coverage = append(coverage, c.Cluster+": "+c.String())
	}
	if i < 0 || strings.Join(coverage, "; ") != "a: evaluated; b: not evaluated: no conntrack data" {
		t.Fatalf("analyze --db: the coverage of probe-conntrack-exhaustion is not one of each cluster: %+v", rep.Rules)
	}
	swept := runCLI(t, "analyze", "--dataset", dataset, "-o", "json")
	if got := reportFindings(t, swept); got != want {
		t.Errorf("analyze --dataset:\n%s\nwant (analyze --db)\n%s", got, want)
	}
	// the sweep says how far it got, a cluster at a time
	if progress := regexp.MustCompile(`(?m)^cluster "a" \(1 of 2\): \d+ findings? in \d+\.\d s\ncluster "b" \(2 of 2\): `); !progress.MatchString(swept.stderr) {
		t.Errorf("analyze --dataset of two clusters: no progress per cluster on stderr:\n%s", swept.stderr)
	}

	// the HTML report's charts read one cluster's database: -o html and --html need --cluster
	for _, args := range [][]string{{"-o", "html"}, {"-o", "json", "--html", filepath.Join(t.TempDir(), "r.html")}} {
		if r := runCLI(t, append([]string{"analyze", "--dataset", dataset}, args...)...); r.code != ExitUsage || !strings.Contains(r.stderr, `add --cluster to -o html or --html (the dataset has 2: "a", "b")`) {
			t.Errorf("%v of two clusters: %+v", args, r)
		}
	}
	// with --cluster the page draws each finding of that cluster, read back from the sweep's files
	page := filepath.Join(t.TempDir(), "b.html")
	if r := runCLI(t, "analyze", "--quiet", "--dataset", dataset, "--cluster", "b", "-o", "html", "--out", page); r.code != ExitOK {
		t.Fatalf("-o html --cluster b: %+v", r)
	}
	var ofB struct{ Findings []struct{ Cluster string } }
	if err := json.Unmarshal([]byte(runCLI(t, "analyze", "--quiet", "--dataset", dataset, "--cluster", "b", "-o", "json").stdout), &ofB); err != nil {
		t.Fatal(err)
	}
	html, err := os.ReadFile(page)
	if err != nil {
		t.Fatal(err)
	}
	if sections := strings.Count(string(html), `<section class="finding"`); len(ofB.Findings) == 0 || sections != len(ofB.Findings) {
		t.Errorf("-o html --cluster b: %d finding sections, want one for each of the %d findings of -o json", sections, len(ofB.Findings))
	}
	// a misspelt cluster is a usage error naming the clusters there are, not a cluster without data
	for _, args := range [][]string{{"--cluster", "A"}, {"--cluster", "A", "--partition", "0"}} {
		if r := runCLI(t, append([]string{"analyze", "--dataset", dataset}, args...)...); r.code != ExitUsage || !strings.Contains(r.stderr, `has no such cluster (it has 2: "a", "b")`) {
			t.Errorf("%v: %+v", args, r)
		}
	}

	broken := filepath.Join(dataset, "audit_events", "cluster=c", "date=2026-11-21", "part-0.parquet")
	if err := os.MkdirAll(filepath.Dir(broken), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(broken, []byte("not parquet"), 0o600); err != nil {
		t.Fatal(err)
	}
	r := runCLI(t, "analyze", "--dataset", dataset, "-o", "json")
	if r.code != ExitPartial || !strings.Contains(r.stderr, `1 of 3 clusters could not be read`) || !strings.Contains(r.stderr, broken) {
		t.Fatalf("a cluster that cannot be read among three: %+v", r)
	}
	if strings.Contains(r.stderr, "LINE 1") {
		t.Errorf("the error quotes kubesift's statement that read the file:\n%s", r.stderr)
	}
	var partial struct {
		Findings json.RawMessage
		Rules    []ruleCoverage
	}
	if err := json.Unmarshal([]byte(r.stdout), &partial); err != nil {
		t.Fatal(err)
	}
	if got, wantFindings := string(partial.Findings), reportFindings(t, fromDB); !strings.HasPrefix(wantFindings, got+"\n") {
		t.Errorf("the findings of the clusters read:\n%s\nwant those of the database", got)
	}
	for _, rule := range partial.Rules {
		if c := rule.Coverage[len(rule.Coverage)-1]; c.Cluster != "c" || c.Status != "not evaluated" || !strings.Contains(c.String(), broken) {
			t.Errorf("%s: the coverage of the cluster that cannot be read is %+v", rule.ID, c)
		}
	}
	if r := runCLI(t, "analyze", "--dataset", dataset, "--cluster", "c"); r.code != ExitError || !strings.Contains(r.stderr, broken) {
		t.Errorf("the cluster that cannot be read alone: %+v", r)
	}
}

// TestDatasetWatchStreamSavedDaysLater: a watch stream of Endpoints saved days after its events
// lands in the partition of the day it was saved (its capture time); the rules time its events by
// their change, so the dataset's analysis of the day of the events reads that later day's endpoint
// rows too and finds what the database finds.
func TestDatasetWatchStreamSavedDaysLater(t *testing.T) {
	watch, err := os.ReadFile("../samples/flapping/watch/endpoints-shop-watch-2026-11-21T05:59:12Z.json")
	if err != nil {
		t.Fatal(err)
	}
	in := t.TempDir()
	if err := os.WriteFile(filepath.Join(in, "endpoints-shop-watch-2026-11-24T00:30:00Z.json"), watch, 0o600); err != nil {
		t.Fatal(err)
	}
	db := filepath.Join(t.TempDir(), "k.duckdb")
	dataset := filepath.Join(t.TempDir(), "dataset")
	if r := runCLI(t, "ingest", "--quiet", "--kind", "endpoints", "--db", db, in); r.code != ExitOK {
		t.Fatalf("ingest: %+v", r)
	}
	if r := runCLI(t, "export", "--quiet", "--db", db, "--dataset", dataset); r.code != ExitOK {
		t.Fatalf("export --dataset: %+v", r)
	}
	day := []string{"-o", "json", "--since", "2026-11-21T00:00:00Z", "--until", "2026-11-21T23:59:59Z"}
	want := reportFindings(t, runCLI(t, append([]string{"analyze", "--db", db}, day...)...))
	if !strings.Contains(want, `"rule": "endpoint-flapping"`) {
		t.Fatalf("analyze --db finds no flapping in the stream:\n%s", want)
	}
	if got := reportFindings(t, runCLI(t, append([]string{"analyze", "--dataset", dataset}, day...)...)); got != want {
		t.Errorf("analyze --dataset:\n%s\nwant (analyze --db)\n%s", got, want)
	}
}

// TestEngineDDLMatchesDataset checks the assumptions of the external tables docs/dataset.md
// gives other engines (Athena, Trino) against files kubesift wrote, read with arrow-go's Parquet
// reader: the LOCATION's directory, the cluster=…/date=… layout, partition keys only in the
// path, and every declared column in every file with a type the declared one reads.
func TestEngineDDLMatchesDataset(t *testing.T) {
	db := filepath.Join(t.TempDir(), "k.duckdb")
	dataset := filepath.Join(t.TempDir(), "dataset")
	if r := runCLI(t, "ingest", "--quiet", "--cluster", "lab-1", "--db", db, "../samples/real-lab"); r.code != ExitOK {
		t.Fatalf("ingest: %+v", r)
	}
	if r := runCLI(t, "export", "--quiet", "--db", db, "--dataset", dataset); r.code != ExitOK {
		t.Fatalf("export --dataset: %+v", r)
	}
	if r := runCLI(t, "analyze", "--quiet", "--dataset", dataset, "--partition", "0", "--findings-dir", filepath.Join(dataset, "findings")); r.code != ExitOK {
		t.Fatalf("analyze --partition: %+v", r)
	}
	// DuckDB reads the findings back with their cluster from the path.
	_, got := queryDuckDB(t, "SELECT rule, severity, cluster, namespace, name, subject, first_seen, last_seen, count, summary, CAST(evidence AS VARCHAR) AS evidence FROM read_parquet("+
		tabular.Quote(filepath.Join(dataset, "findings", "*", "*", "*.parquet"))+", hive_partitioning = true)")
	if want := runCLI(t, "analyze", "--dataset", dataset, "-o", "csv").stdout; got != want || !strings.Contains(got, ",lab-1,") {
		t.Errorf("findings/ read back with hive_partitioning:\n%s\nwant (with cluster lab-1)\n%s", got, want)
	}
	layout := regexp.MustCompile(`^cluster=[^/]*/date=\d{4}-\d{2}-\d{2}$`)
	for _, et := range engineTables(t) {
		dir := filepath.Base(strings.TrimSuffix(et.location, "/"))
		if strings.Join(et.partitions, ",") != "cluster,date" {
			t.Errorf("%s: partitioned by %v, want cluster, date", et.name, et.partitions)
		}
		files, err := filepath.Glob(filepath.Join(dataset, dir, "*", "*", "*.parquet"))
		if err != nil || len(files) == 0 {
			t.Errorf("%s: LOCATION %s: no files under %s/*/*/ (%v)", et.name, et.location, dir, err)
			continue
		}
		for _, path := range files {
			rel, _ := filepath.Rel(filepath.Join(dataset, dir), filepath.Dir(path))
			if !layout.MatchString(filepath.ToSlash(rel)) {
				t.Errorf("%s: %s is not under cluster=…/date=…", et.name, path)
			}
			schema := parquetSchema(t, path)
			for _, p := range et.partitions {
				if _, ok := schema[p]; ok {
					t.Errorf("%s: partition key %s is also a column of %s", et.name, p, path)
				}
			}
			for _, c := range et.columns {
				dt, ok := schema[c[0]]
				if !ok {
					t.Errorf("%s: column %s is not in %s", et.name, c[0], path)
				} else if !readsAs(c[1], dt) {
					t.Errorf("%s: column %s %s does not read %s's %s", et.name, c[0], c[1], path, dt)
				}
			}
		}
	}
}

// parquetSchema returns the columns of a Parquet file as arrow-go reads them.
func parquetSchema(t *testing.T, path string) map[string]arrow.DataType {
	t.Helper()
	f, err := file.OpenParquetFile(path, false)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	r, err := pqarrow.NewFileReader(f, pqarrow.ArrowReadProperties{}, memory.DefaultAllocator)
	if err != nil {
		t.Fatal(err)
	}
	schema, err := r.Schema()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]arrow.DataType{}
	for _, fl := range schema.Fields() {
		out[fl.Name] = fl.Type
	}
	return out
}

// TestExportRemovesAKilledExportsStaging: an export killed before it finished (a pod out of memory)
// leaves its staging directory under the dataset; the next export removes it once it is stale and
// says so.
func TestExportRemovesAKilledExportsStaging(t *testing.T) {
	dataset := t.TempDir()
	killed := filepath.Join(dataset, ".staging-123", "audit_events", "cluster=", "date=2026-11-21", "data_0.parquet")
	if err := os.MkdirAll(filepath.Dir(killed), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(killed, make([]byte, 3<<20), 0o644); err != nil {
		t.Fatal(err)
	}
	old := time.Now().Add(-7 * time.Hour)
	for p := killed; p != dataset; p = filepath.Dir(p) {
		if err := os.Chtimes(p, old, old); err != nil {
			t.Fatal(err)
		}
	}
	r := runCLI(t, "export", "--quiet", "--db", loadedDB(t), "--dataset", dataset)
	if r.code != ExitOK || !strings.Contains(r.stderr, "removed "+filepath.Join(dataset, ".staging-123")+" (3.0 MiB), left by an export that stopped; nothing was written in it for 7h0m0s") {
		t.Errorf("export: %+v", r)
	}
	if left, _ := filepath.Glob(filepath.Join(dataset, ".staging-*")); len(left) > 0 {
		t.Errorf("left: %v", left)
	}
	if days, err := filepath.Glob(filepath.Join(dataset, "audit_events", "*", "*", "*.parquet")); err != nil || len(days) == 0 {
		t.Errorf("the export wrote no audit_events: %v", err)
	}
}

// TestDatasetWindowOfOtherEvidence: a window whose days hold no conntrack data, of a cluster whose
// dataset holds some on another day, gives the conntrack rule's reason as the database does: "no
// conntrack data in the window", not "no conntrack data" (the views read the window's days only).
func TestDatasetWindowOfOtherEvidence(t *testing.T) {
	db := filepath.Join(t.TempDir(), "k.duckdb")
	dataset := filepath.Join(t.TempDir(), "dataset")
	// tricky-healthy's audit events and snapshots are of 2026-11-23, probe-conntrack's captures of 11-21
	if r := runCLI(t, "ingest", "--quiet", "--db", db, "../samples/tricky-healthy", "../samples/probe-conntrack"); r.code != ExitOK {
		t.Fatalf("ingest: %+v", r)
	}
	if r := runCLI(t, "export", "--quiet", "--db", db, "--dataset", dataset); r.code != ExitOK {
		t.Fatalf("export --dataset: %+v", r)
	}
	day := []string{"-o", "json", "--since", "2026-11-23T00:00:00Z", "--until", "2026-11-23T23:59:59Z"}
	want := reportFindings(t, runCLI(t, append([]string{"analyze", "--db", db}, day...)...))
	if !strings.Contains(want, `"no conntrack data in the window"`) {
		t.Fatalf("analyze --db does not say the window has no conntrack data:\n%s", want)
	}
	if got := reportFindings(t, runCLI(t, append([]string{"analyze", "--dataset", dataset}, day...)...)); got != want {
		t.Errorf("analyze --dataset:\n%s\nwant (analyze --db)\n%s", got, want)
	}
}
