package cli

import (
	"path/filepath"
	"strings"
	"testing"
)

// TestPolicyChecksTheLoadedLogs: policy prints the audit policy; with --db its comments name
// what the loaded recording lacks and estimate the volume per policy rule.
func TestPolicyChecksTheLoadedLogs(t *testing.T) {
	r := runCLI(t, "policy")
	if r.code != ExitOK || !strings.Contains(r.stdout, "apiVersion: audit.k8s.io/v1\nkind: Policy\n") || strings.Contains(r.stdout, "Checked against") {
		t.Fatalf("policy: %+v", r)
	}
	db := filepath.Join(t.TempDir(), "k.duckdb")
	if r := runCLI(t, "ingest", "--quiet", "--db", db, "../samples/election-lock-churn/audit.log"); r.code != ExitOK {
		t.Fatalf("ingest: %+v", r)
	}
	r = runCLI(t, "policy", "--db", db)
	for _, want := range []string{
		"#   missing endpoints-watches (election-lock-churn is partial): no kube-proxy watches logged",
		"#   RequestResponse create,delete,patch,update of discovery.k8s.io/endpointslices, endpoints: ",
		"#   Metadata list,watch of every resource: ",
		"apiVersion: audit.k8s.io/v1\n",
	} {
		if r.code != ExitOK || !strings.Contains(r.stdout, want) {
			t.Errorf("policy --db lacks %q:\n%s%s", want, r.stdout, r.stderr)
		}
	}
}
