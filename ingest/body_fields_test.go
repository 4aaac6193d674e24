package ingest

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/kubesift/kubesift/store"
)

// TestBodyFieldsAtIngestUpgradeAndDataset: body_fields is what the rules read of a lock-capable
// write's, an Endpoints delete's or create's or a Service request's body, taken at ingest; a database an older kubesift
// wrote gets it from the bodies when it is opened, and a dataset's files that predate it in the
// dataset's view: the three agree, and only the writes the rules read get it.
func TestBodyFieldsAtIngestUpgradeAndDataset(t *testing.T) {
	ctx := context.Background()
	const leader = `"control-plane.alpha.kubernetes.io/leader":"{\"holderIdentity\":\"a\",\"leaderTransitions\":2}"`
	event := func(id, day, stage, verb, resource, namespace, subresource, bodies string) string {
		return fmt.Sprintf(`{"kind":"Event","apiVersion":"audit.k8s.io/v1","level":"RequestResponse","auditID":"%s","stage":"%s","requestURI":"/x","verb":"%s","user":{"username":"u"},"sourceIPs":["10.0.0.1"],"objectRef":{"resource":"%s","namespace":"%s","subresource":"%s","apiVersion":"v1"},"responseStatus":{"metadata":{},"code":200}%s,"requestReceivedTimestamp":"2026-11-%sT06:00:00.000000Z","stageTimestamp":"2026-11-%sT06:00:00.100000Z"}`,
			id, stage, verb, resource, namespace, subresource, bodies, day, day)
	}
	lines := []string{
		event("a-endpoints", "21", "ResponseComplete", "update", "endpoints", "kube-system", "",
			`,"responseObject":{"kind":"Endpoints","metadata":{"name":"kcm","uid":"u1","annotations":{`+leader+`}}}`),
		event("b-lease", "21", "ResponseComplete", "update", "leases", "kube-system", "",
			`,"responseObject":{"kind":"Lease","metadata":{"name":"kcm","uid":"u2"},"spec":{"holderIdentity":"b","leaseTransitions":7}}`),
		event("c-get", "21", "ResponseComplete", "get", "leases", "kube-system", "",
			`,"responseObject":{"kind":"Lease","metadata":{"name":"kcm"},"spec":{"holderIdentity":"b"}}`),
		event("d-request-only", "22", "ResponseComplete", "create", "configmaps", "lab", "",
			`,"requestObject":{"kind":"ConfigMap","metadata":{"name":"lock","annotations":{`+leader+`}}}`),
		event("e-response-first", "22", "ResponseComplete", "patch", "configmaps", "lab", "",
			`,"requestObject":{"metadata":{"annotations":{"x":"y"}}},"responseObject":{"kind":"ConfigMap","metadata":{"name":"lock","uid":"u3"}}`),
		event("f-no-body", "22", "ResponseComplete", "update", "leases", "kube-system", "", ``),
		event("g-node-heartbeat", "22", "ResponseComplete", "update", "leases", "kube-node-lease", "",
			`,"responseObject":{"kind":"Lease","metadata":{"name":"node-1"},"spec":{"holderIdentity":"node-1"}}`),
		event("h-status", "22", "ResponseComplete", "update", "configmaps", "lab", "status",
			`,"responseObject":{"kind":"ConfigMap","metadata":{"name":"lock"}}`),
		event("i-received", "22", "RequestReceived", "update", "leases", "kube-system", "",
			`,"requestObject":{"kind":"Lease","metadata":{"name":"kcm"},"spec":{"holderIdentity":"b"}}`),
		event("j-identity", "22", "ResponseComplete", "update", "leases", "kube-system", "",
			`,"responseObject":{"kind":"Lease","metadata":{"name":"apiserver-x","labels":{"apiserver.kubernetes.io/identity":"kube-apiserver"}},"spec":{"holderIdentity":"apiserver-x_1"}}`),
		event("k-escaped", "22", "ResponseComplete", "update", "leases", "kube-system", "",
			`,"responseObject":{"kind":"Lease","metad\u0061ta":{"name":"kc\u006d"},"spec":{"holderIdentity":"\u0062","leaseTransitions":"8"}}`),
		event("l-not-an-object", "22", "ResponseComplete", "update", "endpoints", "lab", "", `,"responseObject":"text"`),
		event("m-pods", "22", "ResponseComplete", "update", "pods", "lab", "", `,"responseObject":{"kind":"Pod","metadata":{"name":"p"}}`),
		event("n-slice-create", "22", "ResponseComplete", "create", "endpointslices", "lab", "",
			`,"requestObject":{"metadata":{"generateName":"web-","labels":{"kubernetes.io/service-name":"web-req"}}},"responseObject":{"kind":"EndpointSlice","metadata":{"name":"web-x1","uid":"s1","labels":{"kubernetes.io/service-name":"web"}},"endpoints":[{"addresses":["10.1.0.1"]},{"addresses":["10.1.0.2","10.1.0.3"]}]}`),
		event("o-slice-delete", "22", "ResponseComplete", "delete", "endpointslices", "lab", "",
			`,"responseObject":{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Success","details":{"name":"web-x1","kind":"endpointslices","uid":"s1"}}`),
		event("p-slice-request-label", "22", "ResponseComplete", "create", "endpointslices", "lab", "",
			`,"requestObject":{"metadata":{"name":"web-x2","labels":{"kubernetes.io/service-name":"web"}},"endpoints":[{"addresses":["10.1.0.4"]}]}`),
		event("q-slice-update", "22", "ResponseComplete", "update", "endpointslices", "lab", "",
			`,"responseObject":{"kind":"EndpointSlice","metadata":{"name":"web-x1"}}`),
		event("r-lease-delete", "22", "ResponseComplete", "delete", "leases", "kube-system", "",
			`,"responseObject":{"kind":"Status","details":{"name":"kcm"}}`),
		event("t-service-get", "22", "ResponseComplete", "get", "services", "lab", "",
			`,"responseObject":{"kind":"Service","metadata":{"name":"web","uid":"v1"}}`),
		event("u-service-status", "22", "ResponseComplete", "patch", "services", "lab", "status",
			`,"requestObject":{"status":{}},"responseObject":{"kind":"Service","metadata":{"name":"web","uid":"v1"}}`),
		event("v-service-delete", "22", "ResponseComplete", "delete", "services", "lab", "",
			`,"responseObject":{"kind":"Status","details":{"name":"web","kind":"services","uid":"v1"}}`),
		event("w-service-list", "22", "ResponseComplete", "list", "services", "lab", "",
			`,"responseObject":{"kind":"ServiceList","metadata":{}}`),
		event("s-endpoints-delete", "22", "ResponseComplete", "delete", "endpoints", "lab", "",
			`,"responseObject":{"kind":"Endpoints","metadata":{"name":"web","uid":"e1"},"subsets":[{"addresses":[{"ip":"10.1.0.1"}]}]}`),
	}
	log := filepath.Join(t.TempDir(), "audit.log")
	if err := os.WriteFile(log, []byte(strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	const leaderRecord = `'{"holderIdentity":"a","leaderTransitions":2}'`
	want := []string{
		`a-endpoints=[kcm, ` + leaderRecord + `, u1, NULL, NULL, NULL, NULL, kcm, NULL, u1, NULL, NULL, NULL]`,
		`b-lease=[kcm, NULL, u2, b, 7, NULL, NULL, kcm, NULL, u2, NULL, NULL, NULL]`,
		`c-get=NULL`,
		`d-request-only=[lock, ` + leaderRecord + `, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL]`,
		`e-response-first=[lock, NULL, u3, NULL, NULL, NULL, NULL, lock, NULL, u3, NULL, NULL, NULL]`,
		`f-no-body=NULL`,
		`g-node-heartbeat=NULL`,
		`h-status=NULL`,
		`i-received=NULL`,
		`j-identity=[apiserver-x, NULL, NULL, apiserver-x_1, NULL, kube-apiserver, NULL, apiserver-x, NULL, NULL, NULL, NULL, NULL]`,
		`k-escaped=[kcm, NULL, NULL, b, 8, NULL, NULL, kcm, NULL, NULL, NULL, NULL, NULL]`,
		`l-not-an-object=[NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL]`,
		`m-pods=NULL`,
		`n-slice-create=[web-x1, NULL, s1, NULL, NULL, NULL, '[{"addresses":["10.1.0.1"]},{"addresses":["10.1.0.2","10.1.0.3"]}]', web-x1, NULL, s1, NULL, web, web-req]`,
		`o-slice-delete=[NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, web-x1, NULL, s1, NULL, NULL]`,
		`p-slice-request-label=[web-x2, NULL, NULL, NULL, NULL, NULL, '[{"addresses":["10.1.0.4"]}]', NULL, NULL, NULL, NULL, NULL, web]`,
		`q-slice-update=NULL`,
		`r-lease-delete=NULL`,
		`s-endpoints-delete=[web, NULL, e1, NULL, NULL, NULL, NULL, web, NULL, e1, NULL, NULL, NULL]`,
		`t-service-get=[web, NULL, v1, NULL, NULL, NULL, NULL, web, NULL, v1, NULL, NULL, NULL]`,
		`u-service-status=[web, NULL, v1, NULL, NULL, NULL, NULL, web, NULL, v1, NULL, NULL, NULL]`,
		`v-service-delete=[NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, web, NULL, v1, NULL, NULL]`,
		`w-service-list=NULL`,
	}
	const fields = "SELECT audit_id || '=' || coalesce(CAST(body_fields AS VARCHAR), 'NULL') FROM audit_events ORDER BY audit_id"

	db := openTestDB(t)
	ingestFiles(t, db, Options{}, log)
	if got := queryStrings(t, db, fields); !slices.Equal(got, want) {
		t.Errorf("at ingest:\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}

	// an older kubesift's database: the column is added on open and filled from the bodies
	if _, err := db.ExecContext(ctx, "ALTER TABLE audit_events DROP COLUMN body_fields"); err != nil {
		t.Fatal(err)
	}
	path := db.Path
	db.Close()
	db, err := store.Open(ctx, path, Schema(), store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if !slices.Equal(db.Upgraded, []string{"audit_events.body_fields"}) {
		t.Errorf("upgraded %v", db.Upgraded)
	}
	if got := queryStrings(t, db, fields); !slices.Equal(got, want) {
		t.Errorf("after the upgrade:\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}

	// a dataset whose first day's file an older kubesift wrote (without the column), and whose
	// second day's has it
	dir, _ := exportWithAnOlderDay(t, db, "body_fields", "2026-11-21")
	ds, err := store.OpenDataset(ctx, dir, Schema(), "", nil, nil, store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer ds.Close()
	if got := queryStrings(t, ds, fields); !slices.Equal(got, want) {
		t.Errorf("dataset:\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if view := datasetViewSQL(t, ds); !strings.Contains(view, `coalesce(body_fields`) {
		t.Errorf("the view of a dataset with an older file does not fill body_fields from the bodies")
	}

	// a dataset whose every file has the column: the view reads it as stored, not the bodies
	newer := t.TempDir()
	if _, _, err := db.ExportDataset(ctx, newer, Schema().DatasetTables(), nil, nil); err != nil {
		t.Fatal(err)
	}
	current, err := store.OpenDataset(ctx, newer, Schema(), "", nil, nil, store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer current.Close()
	if got := queryStrings(t, current, fields); !slices.Equal(got, want) {
		t.Errorf("dataset of current files:\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if view := datasetViewSQL(t, current); strings.Contains(view, `coalesce(body_fields`) || strings.Contains(view, `coalesce(response_rv`) {
		t.Errorf("the view of a dataset whose every file stores body_fields and response_rv computes them again:\n%s", view)
	}
}

// datasetViewSQL is the definition of a dataset's audit_events view, in lower case.
func datasetViewSQL(t *testing.T, ds *store.DB) string {
	t.Helper()
	var view string
	if err := ds.QueryRowContext(context.Background(), "SELECT sql FROM duckdb_views() WHERE view_name = 'audit_events'").Scan(&view); err != nil {
		t.Fatal(err)
	}
	return strings.ToLower(view)
}

// TestWatchRVIsTheParameterAsGoReadsIt: watch_rv, computed from resource_version when read, is a
// number only where the parameter is a base-10 integer, as ingest took it from Go before; DuckDB's
// own cast would make numbers of " 5", "5.0", "1e3" and "0x10".
func TestWatchRVIsTheParameterAsGoReadsIt(t *testing.T) {
	var lines []string
	for i, rv := range []string{"4711", "%2B5", "-3", "007", "%205", "5.0", "1e3", "0x10", "1_000", "99999999999999999999", "", "none"} {
		query := "?watch=true&resourceVersion=" + rv
		if rv == "none" {
			query = "?watch=true"
		}
		lines = append(lines, fmt.Sprintf(`{"kind":"Event","apiVersion":"audit.k8s.io/v1","level":"Metadata","auditID":"w%02d","stage":"ResponseComplete","requestURI":"/api/v1/pods%s","verb":"watch","user":{"username":"u"},"sourceIPs":["10.0.0.1"],"objectRef":{"resource":"pods","apiVersion":"v1"},"responseStatus":{"metadata":{},"code":200},"requestReceivedTimestamp":"2026-11-21T06:00:00.000000Z","stageTimestamp":"2026-11-21T06:00:00.100000Z"}`, i, query))
	}
	log := filepath.Join(t.TempDir(), "audit.log")
	if err := os.WriteFile(log, []byte(strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	db := openTestDB(t)
	ingestFiles(t, db, Options{}, log)
	got := queryStrings(t, db, "SELECT coalesce('\"' || resource_version || '\"', 'NULL') || '=' || coalesce(CAST(watch_rv AS VARCHAR), 'NULL') FROM audit_events ORDER BY audit_id")
	want := []string{`"4711"=4711`, `"+5"=5`, `"-3"=-3`, `"007"=7`, `" 5"=NULL`, `"5.0"=NULL`, `"1e3"=NULL`, `"0x10"=NULL`, `"1_000"=NULL`,
		`"99999999999999999999"=NULL`, `""=NULL`, `NULL=NULL`}
	if !slices.Equal(got, want) {
		t.Errorf("got %v, want %v", got, want)
	}
}

// exportWithAnOlderDay exports db as a dataset and rewrites audit_events' files of day as an older
// kubesift wrote it, without column. It returns the dataset's directory and that day's.
func exportWithAnOlderDay(t *testing.T, db *store.DB, column, day string) (dir, dayDir string) {
	t.Helper()
	ctx := context.Background()
	dir = t.TempDir()
	if _, _, err := db.ExportDataset(ctx, dir, Schema().DatasetTables(), nil, nil); err != nil {
		t.Fatal(err)
	}
	old, err := filepath.Glob(filepath.Join(dir, "audit_events", "cluster=*", "date="+day, "*.parquet"))
	if err != nil || len(old) == 0 {
		t.Fatalf("the files of %s: %v, %v", day, old, err)
	}
	for _, file := range old { // a file per verb (store.FileSplit)
		rewritten := file + ".old"
		if _, err := db.ExecContext(ctx, fmt.Sprintf(`COPY (SELECT * EXCLUDE ("%s") FROM read_parquet('%s')) TO '%s' (FORMAT parquet)`, column, file, rewritten)); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(rewritten, file); err != nil {
			t.Fatal(err)
		}
	}
	return dir, filepath.Dir(old[0])
}
