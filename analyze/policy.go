package analyze

import (
	"context"
	"database/sql"
	"fmt"
	"strings"

	"github.com/kubesift/kubesift/queries"
	"github.com/kubesift/kubesift/rules"
	"github.com/kubesift/kubesift/store"
)

// Volume is what the loaded audit log says about one rule of an audit policy.
type Volume struct {
	Rule         rules.AuditPolicyRule
	EventsPerDay float64 // the matching events (ResponseComplete) per day of the log
	BarePerDay   float64 // ... of which logged without bodies now
	AvgBodyBytes float64 // the average size of the bodies of those logged with them (0: none)
	// ExtraBytesPerDay is the bodies the rule adds per day: BarePerDay × AvgBodyBytes for a
	// Request or RequestResponse rule; 0 for a Metadata rule (the events are logged already).
	ExtraBytesPerDay float64
}

// PolicyCheck is what the loaded data lacks of what the policy logs, and the volume it adds.
type PolicyCheck struct {
	Gaps    []Gap    // each need missing in a cluster
	Volumes []Volume // per policy rule but the final None
}

// CheckPolicy runs every need's coverage query of rs over db, and estimates the volume of each
// rule of pol from the audit events loaded.
func CheckPolicy(ctx context.Context, db *store.DB, rs []rules.Rule, pol rules.AuditPolicy) (*PolicyCheck, error) {
	sandbox, err := openSandbox(ctx, db)
	if err != nil {
		return nil, err
	}
	defer sandbox.Close()
	check := &PolicyCheck{}
	for _, r := range rs {
		gs, err := gaps(ctx, sandbox, r, Options{})
		if err != nil {
			return nil, fmt.Errorf("rule %s: %w", r.ID, err)
		}
		check.Gaps = append(check.Gaps, gs...)
	}
	q, _ := queries.SQL("coverage/policy-volume")
	for _, pr := range pol.Rules {
		if pr.Level == "None" {
			continue
		}
		var resources []string
		for _, g := range pr.Resources {
			for _, r := range g.Resources {
				if g.Group != "" {
					r = g.Group + "/" + r
				}
				resources = append(resources, r)
			}
		}
		var events, bare int64
		var avg, days float64
		if err := sandbox.QueryRowContext(ctx, q, sql.Named("verbs", strings.Join(pr.Verbs, ",")),
			sql.Named("resources", strings.Join(resources, ","))).Scan(&events, &bare, &avg, &days); err != nil {
			return nil, fmt.Errorf("estimating the policy's volume: %w", err)
		}
		v := Volume{Rule: pr, EventsPerDay: float64(events) / days, BarePerDay: float64(bare) / days, AvgBodyBytes: avg}
		if pr.Level != "Metadata" {
			v.ExtraBytesPerDay = v.BarePerDay * v.AvgBodyBytes
		}
		check.Volumes = append(check.Volumes, v)
	}
	return check, nil
}
