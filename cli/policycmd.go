package cli

import (
	"context"
	"fmt"
	"io"
	"strings"

	"github.com/kubesift/kubesift/analyze"
	"github.com/kubesift/kubesift/rules"
)

func runPolicy(ctx context.Context, e *env, args []string) error {
	fs, common := newFlags(e, "policy", "",
		"Print the smallest audit policy (audit.k8s.io/v1 Policy, for kube-apiserver's --audit-policy-file)\n"+
			"under which every rule sees the evidence it needs (kubesift rules show ID lists it): Endpoints,\n"+
			"EndpointSlice and lock writes at RequestResponse, watches and lists at Metadata, nothing else,\n"+
			"RequestReceived omitted. Merge its rules into your policy ahead of rules that would log less.\n"+
			"With --db, the YAML comments also name what the loaded data lacks per rule and cluster, and\n"+
			"estimate the bodies per day the policy adds from the audit events loaded.")
	common.addDB(fs, e, "database whose loaded logs to check against the policy")
	dir := fs.String("rules", "", "directory of extra rules, as for analyze")
	if err := parse(fs, args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return usagef("policy takes no arguments")
	}
	f := analyzeFlags{dir: *dir}
	rs, _, err := f.selectRules()
	if err != nil {
		return err
	}
	pol := rules.Policy(rs)
	text, err := pol.YAML()
	if err != nil {
		return err
	}
	fmt.Fprintln(e.stdout, "# The audit policy under which every kubesift rule sees what it needs (kubesift policy).")
	if fs.Changed("db") || e.getenv("KUBESIFT_DB") != "" {
		db, err := common.openDB(ctx, common.db, true)
		if err != nil {
			return err
		}
		defer db.Close()
		check, err := analyze.CheckPolicy(ctx, db, rs, pol)
		if err != nil {
			return err
		}
		writePolicyCheck(e.stdout, common.db, check)
	}
	_, err = e.stdout.Write(text)
	return err
}

// writePolicyCheck writes what the loaded data lacks and the estimated volume as YAML comments.
func writePolicyCheck(w io.Writer, db string, check *analyze.PolicyCheck) {
	fmt.Fprintf(w, "#\n# Checked against %s:\n", db)
	if len(check.Gaps) == 0 {
		fmt.Fprintln(w, "#   every rule sees what it needs in the loaded data")
	}
	for _, g := range check.Gaps {
		cluster := ""
		if g.Cluster != "" {
			cluster = " in cluster " + g.Cluster
		}
		fmt.Fprintf(w, "#   missing %s (%s is %s%s): %s\n", g.Evidence, g.Rule, g.Status, cluster, g.Reason)
	}
	fmt.Fprintln(w, "# Estimated from the audit events loaded (per day of the log):")
	for _, v := range check.Volumes {
		what := v.Rule.Level + " " + strings.Join(v.Rule.Verbs, ",") + " " + resourcesText(v.Rule.Resources)
		switch {
		case v.Rule.Level == "Metadata":
			fmt.Fprintf(w, "#   %s: %.0f events/day, logged already (no bodies added)\n", what, v.EventsPerDay)
		case v.BarePerDay == 0:
			fmt.Fprintf(w, "#   %s: %.0f events/day, all logged with bodies already\n", what, v.EventsPerDay)
		case v.AvgBodyBytes == 0:
			fmt.Fprintf(w, "#   %s: %.0f events/day, %.0f without bodies now; body size unknown (none logged with a body)\n", what, v.EventsPerDay, v.BarePerDay)
		default:
			fmt.Fprintf(w, "#   %s: %.0f events/day, %.0f without bodies now: about +%s/day (bodies average %s)\n",
				what, v.EventsPerDay, v.BarePerDay, bytesText(v.ExtraBytesPerDay), bytesText(v.AvgBodyBytes))
		}
	}
	fmt.Fprintln(w, "#   requests the current policy drops are not in the log: their volume cannot be estimated from it")
}

func resourcesText(grs []rules.GroupResources) string {
	if len(grs) == 0 {
		return "of every resource"
	}
	var out []string
	for _, g := range grs {
		for _, r := range g.Resources {
			if g.Group != "" {
				r = g.Group + "/" + r
			}
			out = append(out, r)
		}
	}
	return "of " + strings.Join(out, ", ")
}

// bytesText words a byte count in binary units: 512 B, 3.4 KiB, 12.0 MiB.
func bytesText(b float64) string {
	units := []string{"B", "KiB", "MiB", "GiB", "TiB"}
	i := 0
	for b >= 1024 && i < len(units)-1 {
		b /= 1024
		i++
	}
	if i == 0 {
		return fmt.Sprintf("%.0f B", b)
	}
	return fmt.Sprintf("%.1f %s", b, units[i])
}
