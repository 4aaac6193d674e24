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

// TestResponseRVAtIngestUpgradeAndDataset: response_rv is a write's response resourceVersion,
// taken at ingest by Go; a database an older kubesift wrote gets it from response_object when it
// is opened, by SQL, and a dataset's files that predate it the same way in the dataset's view:
// the three agree on every kind of value.
func TestResponseRVAtIngestUpgradeAndDataset(t *testing.T) {
	ctx := context.Background()
	event := func(id, day, verb, resource, body string) string {
		return fmt.Sprintf(`{"kind":"Event","apiVersion":"audit.k8s.io/v1","level":"RequestResponse","auditID":"%s","stage":"ResponseComplete","requestURI":"/api/v1/namespaces/lab/%s/x","verb":"%s","user":{"username":"u"},"sourceIPs":["10.0.0.1"],"objectRef":{"resource":"%s","namespace":"lab","name":"x","apiVersion":"v1"},"responseStatus":{"metadata":{},"code":200},"responseObject":%s,"requestReceivedTimestamp":"2026-11-%sT06:00:00.000000Z","stageTimestamp":"2026-11-%sT06:00:00.100000Z"}`,
			id, resource, verb, resource, body, day, day)
	}
	lines := []string{
		event("a-update", "21", "update", "endpoints", `{"kind":"Endpoints","metadata":{"name":"x","resourceVersion":"101"}}`),
		event("b-delete-status", "21", "delete", "endpoints", `{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Success","details":{"name":"x"}}`),
		event("c-get", "21", "get", "endpoints", `{"kind":"Endpoints","metadata":{"name":"x","resourceVersion":"55"}}`),
		event("d-secret", "22", "create", "secrets", `{"kind":"Secret","metadata":{"name":"x","resourceVersion":"7"}}`),
		event("e-not-a-number", "22", "patch", "configmaps", `{"kind":"ConfigMap","metadata":{"name":"x","resourceVersion":"abc"}}`),
		event("f-create", "22", "create", "configmaps", `{"kind":"ConfigMap","metadata":{"name":"x","resourceVersion":"202"}}`),
		event("g-no-version", "22", "deletecollection", "configmaps", `{"kind":"ConfigMapList","metadata":{}}`),
		event("h-number", "22", "update", "configmaps", `{"kind":"ConfigMap","metadata":{"resourceVersion":303}}`),
		event("i-escaped-names", "22", "patch", "configmaps", `{"kind":"ConfigMap","metad\u0061ta":{"name":"x","resourceV\u0065rsion":"404"}}`),
		event("j-null", "22", "update", "configmaps", `{"kind":"ConfigMap","metadata":{"resourceVersion":null}}`),
		event("k-escaped-status", "22", "delete", "configmaps", `{"kind":"St\u0061tus","metadata":{"resourceVersion":"9"}}`),
		event("l-object", "22", "update", "configmaps", `{"kind":"ConfigMap","metadata":{"resourceVersion":{"v":1}}}`),
		event("m-after-metadata", "22", "update", "configmaps", `{"kind":"ConfigMap","metadata":{"name":"x"},"resourceVersion":"505"}`),
		event("n-after-managed-fields", "22", "update", "configmaps", `{"kind":"ConfigMap","metadata":{"managedFields":[{"f":"}\"{"}],"resourceVersion":"606"}}`),
	}
	log := filepath.Join(t.TempDir(), "audit.log")
	if err := os.WriteFile(log, []byte(strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	want := []string{"a-update=101", "b-delete-status=NULL", "c-get=NULL", "d-secret=NULL", "e-not-a-number=NULL", "f-create=202",
		"g-no-version=NULL", "h-number=303", "i-escaped-names=404", "j-null=NULL", "k-escaped-status=NULL", "l-object=NULL",
		"m-after-metadata=NULL", "n-after-managed-fields=606"}
	const rvs = "SELECT audit_id || '=' || coalesce(CAST(response_rv AS VARCHAR), 'NULL') FROM audit_events ORDER BY audit_id"

	db := openTestDB(t)
	ingestFiles(t, db, Options{}, log)
	if got := queryStrings(t, db, rvs); !slices.Equal(got, want) {
		t.Errorf("at ingest: %v, want %v", got, want)
	}

	// an older kubesift's database: the column is added on open and filled from the bodies, and
	// the two bookkeeping columns load_problem replaced are dropped
	for _, stmt := range []string{"ALTER TABLE audit_events DROP COLUMN response_rv", "ALTER TABLE audit_events DROP COLUMN load_problem",
		"ALTER TABLE audit_events ADD COLUMN load_reject VARCHAR", "ALTER TABLE audit_events ADD COLUMN load_warning VARCHAR"} {
		if _, err := db.ExecContext(ctx, stmt); err != nil {
			t.Fatalf("%s: %v", stmt, err)
		}
	}
	path := db.Path
	db.Close()
	db, err := store.Open(ctx, path, Schema(), store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if !slices.Equal(db.Upgraded, []string{"audit_events.response_rv", "audit_events.load_problem"}) ||
		!slices.Equal(db.Dropped, []string{"audit_events.load_reject", "audit_events.load_warning"}) {
		t.Errorf("upgraded %v and dropped %v", db.Upgraded, db.Dropped)
	}
	if got := queryStrings(t, db, rvs); !slices.Equal(got, want) {
		t.Errorf("after the upgrade: %v, want %v", got, want)
	}

	// a dataset whose first day's file an older kubesift wrote (without the column), and whose
	// second day's has it
	dir, old := exportWithAnOlderDay(t, db, "response_rv", "2026-11-21")
	for _, files := range []string{"both days", "the older day only"} {
		if files == "the older day only" {
			if err := os.RemoveAll(filepath.Join(filepath.Dir(old), "date=2026-11-22")); err != nil {
				t.Fatal(err)
			}
			want = want[:3]
		}
		ds, err := store.OpenDataset(ctx, dir, Schema(), "", nil, nil, store.Options{})
		if err != nil {
			t.Fatal(err)
		}
		if got := queryStrings(t, ds, rvs); !slices.Equal(got, want) {
			t.Errorf("dataset of %s: %v, want %v", files, got, want)
		}
		ds.Close()
	}
}

// TestAuditEventsFitTheDefaultMemoryLimit: DuckDB's batch insert reserves 4 MiB per column and
// thread, out of a quarter of the memory limit, and loads on one thread when two do not fit. At
// 51 stored columns under the default --memory-limit 850MB (810 MiB) a load of the independent mix took
// a third longer. A new column of audit_events must replace one (or be computed), or the default must grow.
// It fails at 51 stored columns (checked).
func TestAuditEventsFitTheDefaultMemoryLimit(t *testing.T) {
	table, ok := Schema().Lookup("audit_events")
	if !ok {
		t.Fatal("no audit_events")
	}
	limit, err := store.ParseMemoryLimit(store.DefaultMemoryLimit)
	if err != nil {
		t.Fatal(err)
	}
	stored := 0
	for _, c := range table.Columns {
		if c.Generated == "" {
			stored++
		}
	}
	quarterMiB := float64(limit) / (1 << 20) / 4
	if perThread := 4 * stored; float64(perThread) > quarterMiB {
		t.Errorf("audit_events stores %d columns: a load thread reserves %d MiB, more than a quarter of the default %s (%.1f MiB)",
			stored, perThread, store.DefaultMemoryLimit, quarterMiB)
	}
}
