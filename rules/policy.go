package rules

import (
	"bytes"
	"cmp"
	"slices"
	"strings"

	"gopkg.in/yaml.v3"
)

// AuditPolicy is an audit.k8s.io/v1 Policy with the fields kubesift writes.
type AuditPolicy struct {
	APIVersion string            `yaml:"apiVersion"`
	Kind       string            `yaml:"kind"`
	OmitStages []string          `yaml:"omitStages"`
	Rules      []AuditPolicyRule `yaml:"rules"`
}

// AuditPolicyRule is one rule of an AuditPolicy: the first rule matching a request sets its level.
type AuditPolicyRule struct {
	Level     string           `yaml:"level"`
	Verbs     []string         `yaml:"verbs,omitempty"`
	Resources []GroupResources `yaml:"resources,omitempty"`
}

// GroupResources names resources of one API group ("" is the core group).
type GroupResources struct {
	Group     string   `yaml:"group"`
	Resources []string `yaml:"resources"`
}

// Policy returns the smallest audit policy under which every need of rs is logged: one rule
// per level and verbs (the resources of the needs merged, a rule covered by a wider one of the
// same level left out), the highest levels first, then level None for everything else.
// RequestReceived is omitted: every rule reads ResponseComplete (and ResponseStarted) events.
func Policy(rs []Rule) AuditPolicy {
	var merged []PolicyRule
	for _, r := range rs {
		for _, n := range r.Needs {
			p := PolicyRule{Level: n.Policy.Level, Verbs: slices.Sorted(slices.Values(n.Policy.Verbs)), Resources: slices.Clone(n.Policy.Resources)}
			i := slices.IndexFunc(merged, func(m PolicyRule) bool { return m.Level == p.Level && slices.Equal(m.Verbs, p.Verbs) })
			switch {
			case i < 0:
				merged = append(merged, p)
			case len(merged[i].Resources) == 0 || len(p.Resources) == 0:
				merged[i].Resources = nil // every resource
			default:
				merged[i].Resources = append(merged[i].Resources, p.Resources...)
			}
		}
	}
	var kept []PolicyRule
	for i, p := range merged {
		covered := false
		for j, q := range merged {
			covered = covered || (j != i && q.Level == p.Level && subset(p.Verbs, q.Verbs) &&
				(len(q.Resources) == 0 || (len(p.Resources) > 0 && subset(p.Resources, q.Resources))))
		}
		if !covered {
			kept = append(kept, p)
		}
	}
	slices.SortStableFunc(kept, func(a, b PolicyRule) int {
		return cmp.Or(-cmp.Compare(slices.Index(AuditLevels, a.Level), slices.Index(AuditLevels, b.Level)),
			cmp.Compare(strings.Join(a.Verbs, ","), strings.Join(b.Verbs, ",")))
	})
	pol := AuditPolicy{APIVersion: "audit.k8s.io/v1", Kind: "Policy", OmitStages: []string{"RequestReceived"}}
	for _, p := range kept {
		rule := AuditPolicyRule{Level: p.Level, Verbs: p.Verbs}
		for _, gr := range slices.Sorted(slices.Values(p.Resources)) {
			group, resource := GroupResource(gr)
			i := slices.IndexFunc(rule.Resources, func(g GroupResources) bool { return g.Group == group })
			if i < 0 {
				rule.Resources = append(rule.Resources, GroupResources{Group: group})
				i = len(rule.Resources) - 1
			}
			if !slices.Contains(rule.Resources[i].Resources, resource) {
				rule.Resources[i].Resources = append(rule.Resources[i].Resources, resource)
			}
		}
		pol.Rules = append(pol.Rules, rule)
	}
	pol.Rules = append(pol.Rules, AuditPolicyRule{Level: "None"})
	return pol
}

// subset says whether every element of a is in b.
func subset(a, b []string) bool {
	for _, x := range a {
		if !slices.Contains(b, x) {
			return false
		}
	}
	return true
}

// YAML renders the policy as the YAML file kube-apiserver's --audit-policy-file reads.
func (p AuditPolicy) YAML() ([]byte, error) {
	var b bytes.Buffer
	enc := yaml.NewEncoder(&b)
	enc.SetIndent(2)
	if err := enc.Encode(p); err != nil {
		return nil, err
	}
	return b.Bytes(), enc.Close()
}
