package rules

import (
	"slices"
	"strings"
	"testing"

	auditinternal "k8s.io/apiserver/pkg/apis/audit"
	auditv1 "k8s.io/apiserver/pkg/apis/audit/v1"
	"k8s.io/apiserver/pkg/apis/audit/validation"
	"sigs.k8s.io/yaml"
)

// levelOf is the level at which pol logs a request: that of the first rule matching its verb
// and resource (kube-apiserver's order; this test needs no user, namespace or URL matching).
func levelOf(pol *auditinternal.Policy, verb, group, resource string) auditinternal.Level {
	for _, r := range pol.Rules {
		if len(r.Verbs) > 0 && !slices.Contains(r.Verbs, verb) {
			continue
		}
		if len(r.Resources) > 0 && !slices.ContainsFunc(r.Resources, func(g auditinternal.GroupResources) bool {
			return g.Group == group && (len(g.Resources) == 0 || slices.Contains(g.Resources, resource))
		}) {
			continue
		}
		return r.Level
	}
	return auditinternal.LevelNone
}

// TestPolicyIsAValidAuditPolicy decodes the policy of the built-in rules strictly into
// kube-apiserver's audit.k8s.io/v1 Policy type, validates it with kube-apiserver's own
// validation, and checks at which level each kind of request would be logged.
func TestPolicyIsAValidAuditPolicy(t *testing.T) {
	rs, err := Builtin()
	if err != nil {
		t.Fatal(err)
	}
	text, err := Policy(rs).YAML()
	if err != nil {
		t.Fatal(err)
	}
	var v1 auditv1.Policy
	if err := yaml.UnmarshalStrict(text, &v1); err != nil {
		t.Fatalf("not an audit.k8s.io/v1 Policy: %v\n%s", err, text)
	}
	if v1.APIVersion != "audit.k8s.io/v1" || v1.Kind != "Policy" {
		t.Errorf("apiVersion %q, kind %q", v1.APIVersion, v1.Kind)
	}
	var pol auditinternal.Policy
	if err := auditv1.Convert_v1_Policy_To_audit_Policy(&v1, &pol, nil); err != nil {
		t.Fatal(err)
	}
	if errs := validation.ValidatePolicy(&pol); len(errs) > 0 {
		t.Fatalf("kube-apiserver rejects the policy: %v\n%s", errs.ToAggregate(), text)
	}
	if !slices.Equal(pol.OmitStages, []auditinternal.Stage{auditinternal.StageRequestReceived}) {
		t.Errorf("omitStages %v, want [RequestReceived]", pol.OmitStages)
	}
	for _, c := range []struct {
		verb, group, resource string
		want                  auditinternal.Level
	}{
		{"update", "", "endpoints", auditinternal.LevelRequestResponse},
		{"patch", "discovery.k8s.io", "endpointslices", auditinternal.LevelRequestResponse},
		{"delete", "", "endpoints", auditinternal.LevelRequestResponse},
		{"update", "", "configmaps", auditinternal.LevelRequestResponse},
		{"update", "coordination.k8s.io", "leases", auditinternal.LevelRequestResponse},
		{"watch", "", "endpoints", auditinternal.LevelMetadata},
		{"watch", "apps", "deployments", auditinternal.LevelMetadata},
		{"list", "", "services", auditinternal.LevelMetadata},
		{"get", "", "secrets", auditinternal.LevelNone},
		{"update", "apps", "deployments", auditinternal.LevelNone},
	} {
		if got := levelOf(&pol, c.verb, c.group, c.resource); got != c.want {
			t.Errorf("%s %s/%s is logged at %q, want %q\n%s", c.verb, c.group, c.resource, got, c.want, text)
		}
	}
	if !strings.HasPrefix(string(text), "apiVersion: audit.k8s.io/v1\nkind: Policy\n") {
		t.Errorf("the policy starts\n%s", text)
	}
}
