package rules

import (
	"fmt"
	"slices"
	"strings"
)

// Need is evidence a rule needs beyond rows in its input tables: Endpoints write bodies, watch
// requests with their resourceVersion parameter, lock write bodies. A coverage query checks it per
// cluster (queries/coverage/<evidence>.sql for the built-in rules, DIR/coverage/<evidence>.sql
// beside a user's rule) with the rule's params and the window bound, and an audit policy rule
// logs it (`kubesift policy`).
//
//	needs:
//	  - evidence: endpoints-write-bodies
//	    description: Endpoints and EndpointSlice write bodies, or snapshots
//	    policy: {level: RequestResponse, verbs: [create, update, patch, delete], resources: [endpoints, discovery.k8s.io/endpointslices]}
type Need struct {
	Evidence    string     `yaml:"evidence"`
	Description string     `yaml:"description"`
	Policy      PolicyRule `yaml:"policy"`

	SQL string `yaml:"-"` // the coverage query
}

// PolicyRule is the part of an audit.k8s.io/v1 PolicyRule that logs a need.
type PolicyRule struct {
	Level string   `yaml:"level"` // Metadata, Request or RequestResponse
	Verbs []string `yaml:"verbs"` // empty: every verb
	// Resources are GROUP/RESOURCE, or RESOURCE for the core group; empty: every resource.
	Resources []string `yaml:"resources"`
}

// AuditLevels are the audit levels a need's policy may ask for, lowest first.
var AuditLevels = []string{"Metadata", "Request", "RequestResponse"}

// CoverageColumns are the columns of a coverage query: one row per cluster where the evidence
// is missing, with coverage 'blind' (the rule cannot see the pathology there) or 'partial' (it
// sees some of it) and the reason, in words, with the numbers; no row where it is complete.
var CoverageColumns = []string{"cluster", "coverage", "reason"}

// The coverage of a rule in a cluster, best first.
const (
	Evaluated    = "evaluated"
	Partial      = "partial"
	Blind        = "blind"
	NotEvaluated = "not evaluated"
)

// GroupResource splits a need's resource into its API group ("" for the core group) and resource.
func GroupResource(s string) (group, resource string) {
	if g, r, ok := strings.Cut(s, "/"); ok {
		return g, r
	}
	return "", s
}

// checkNeeds returns the problems of a rule's needs.
func checkNeeds(needs []Need) []string {
	var problems []string
	seen := map[string]bool{}
	for i, n := range needs {
		bad := func(format string, args ...any) {
			problems = append(problems, fmt.Sprintf("needs[%d]: %s", i, fmt.Sprintf(format, args...)))
		}
		switch {
		case n.Evidence == "":
			bad("missing evidence (the name of its coverage query)")
		case !idPattern.MatchString(n.Evidence):
			bad("evidence %q: want lowercase words joined by dashes", n.Evidence)
		case seen[n.Evidence]:
			bad("evidence %q declared twice", n.Evidence)
		}
		seen[n.Evidence] = true
		if strings.TrimSpace(n.Description) == "" {
			bad("missing description")
		}
		if !slices.Contains(AuditLevels, n.Policy.Level) {
			bad("policy level %q: want one of %s", n.Policy.Level, strings.Join(AuditLevels, ", "))
		}
		for _, r := range n.Policy.Resources {
			if _, res := GroupResource(r); res == "" || strings.Count(r, "/") > 1 {
				bad("policy resource %q: want RESOURCE or GROUP/RESOURCE", r)
			}
		}
	}
	return problems
}

// loadNeedSQL reads the coverage query of each of r's needs and checks that it uses no
// parameter but r's params and the window.
func loadNeedSQL(r *Rule, sqlOf func(string) (string, bool)) []error {
	var errs []error
	params := slices.Clone(WindowParams)
	for _, p := range r.Params {
		params = append(params, p.Name)
	}
	for i, n := range r.Needs {
		sql, qErrs := loadQuery(r, sqlOf, "needs", i, "coverage", n.Evidence, params)
		errs = append(errs, qErrs...)
		r.Needs[i].SQL = sql
	}
	return errs
}

// loadQuery reads the query dir/name.sql of r's field[i] (needs[0] names coverage/NAME) with
// sqlOf and checks that it uses no parameter but params.
func loadQuery(r *Rule, sqlOf func(string) (string, bool), field string, i int, dir, name string, params []string) (string, []error) {
	sql, ok := sqlOf(dir + "/" + name)
	if !ok {
		return "", []error{fmt.Errorf("rule %s: %s[%d]: no query %s/%s.sql", r.ID, field, i, dir, name)}
	}
	kind := strings.TrimSuffix(dir, "s") // coverage, stage
	return sql, unknownParams(dir+"/"+name+".sql of rule "+r.ID, sql, kind, params)
}

// String words the policy rule: "RequestResponse create, update of endpoints, configmaps".
func (p PolicyRule) String() string {
	verbs, resources := "every verb", "every resource"
	if len(p.Verbs) > 0 {
		verbs = strings.Join(p.Verbs, ", ")
	}
	if len(p.Resources) > 0 {
		resources = strings.Join(p.Resources, ", ")
	}
	return p.Level + " " + verbs + " of " + resources
}

// unknownParams returns an error for each $placeholder of sql (the file name) that is not one
// of the kind's params.
func unknownParams(name, sql, kind string, params []string) []error {
	var errs []error
	for _, m := range placeholder.FindAllStringSubmatch(stripSQLComments(sql), -1) {
		if !slices.Contains(params, m[1]) {
			errs = append(errs, fmt.Errorf("%s: $%s is not a %s parameter (%s)", name, m[1], kind, strings.Join(params, ", ")))
		}
	}
	return errs
}
