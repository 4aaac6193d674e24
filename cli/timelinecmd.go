package cli

import (
	"context"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/kubesift/kubesift/analyze"
	"github.com/kubesift/kubesift/analyze/htmlreport"
)

// timelineKinds maps what users type to the audit resource.
var timelineKinds = map[string]string{
	"endpoints": "endpoints", "ep": "endpoints",
	"endpointslice": "endpointslices", "endpointslices": "endpointslices",
	"service": "services", "services": "services", "svc": "services",
	"pod": "pods", "pods": "pods", "po": "pods",
	"configmap": "configmaps", "configmaps": "configmaps", "cm": "configmaps",
	"lease": "leases", "leases": "leases",
}

func runTimeline(ctx context.Context, e *env, args []string) error {
	fs, c := newFlags(e, "timeline", "KIND/NAMESPACE/NAME",
		"Print everything known about one object in time order: audit events on it (who, verb, code,\n"+
			"and for Endpoints the ready/not-ready addresses and what changed), snapshots of it, and the\n"+
			"findings that name it. KIND is endpoints, endpointslice, service, pod, configmap or lease;\n"+
			"for a Service the addresses of its Endpoints and EndpointSlices are included.\n"+
			"-o html writes one self-contained page with a chart: for Endpoints, EndpointSlices and\n"+
			"Services a swimlane per address of its Service from where it first shows (ready, notReady,\n"+
			"terminating, absent: the states endpoint-flapping follows; past 40 addresses the 40 that\n"+
			"changed most), for other kinds who did what over time.\n"+
			"An object seen in several clusters needs --cluster.\n\n"+
			"Example: kubesift timeline endpoints/shop/cart")
	c.addDB(fs, e, "database file to read")
	out := addOutputFlag(fs, "table", "table", "json", "csv", "html")
	since := fs.String("since", "", "from this time: RFC3339 or a duration before now")
	until := fs.String("until", "", "up to this time: RFC3339 or a duration before now")
	cluster := fs.String("cluster", "", "the cluster of the object (the cluster column; \"\" for evidence loaded without one); needed when the object was seen in several clusters")
	if err := parse(fs, args); err != nil {
		return err
	}
	if err := out.validate(); err != nil {
		return err
	}
	if fs.NArg() != 1 {
		return usagef("want one KIND/NAMESPACE/NAME, e.g. endpoints/shop/cart")
	}
	parts := strings.Split(fs.Arg(0), "/")
	if len(parts) != 3 || parts[1] == "" || parts[2] == "" {
		return usagef("want KIND/NAMESPACE/NAME, e.g. endpoints/shop/cart, got %q", fs.Arg(0))
	}
	resource, ok := timelineKinds[strings.ToLower(parts[0])]
	if !ok {
		return usagef("unknown kind %q (want endpoints, endpointslice, service, pod, configmap or lease)", parts[0])
	}
	ns, name := parts[1], parts[2]
	now := time.Now()
	from, to, err := parseWindow(*since, *until, now)
	if err != nil {
		return err
	}
	db, err := c.openDB(ctx, c.db, true)
	if err != nil {
		return err
	}
	defer db.Close()
	if !fs.Changed("cluster") {
		clusters, err := analyze.ObjectClusters(ctx, db, resource, ns, name)
		if err != nil {
			return err
		}
		if len(clusters) > 1 {
			return usagef("%s was seen in %d clusters (%s): pass --cluster", fs.Arg(0), len(clusters), quotedList(clusters))
		}
		if len(clusters) == 1 {
			*cluster = clusters[0]
		}
	}
	tl, err := analyze.RunTimeline(ctx, db, resource, *cluster, ns, name, analyze.Options{Since: from, Until: to})
	if err != nil {
		return err
	}
	if len(tl.Rows.Rows) == 0 {
		return fmt.Errorf("nothing is known about %s in %s", fs.Arg(0), c.db)
	}
	if out.format == "html" {
		return out.emit(e.stdout, func(w io.Writer) error { return htmlreport.WriteTimeline(w, htmlreport.BuildTimeline(tl)) })
	}
	return out.emit(e.stdout, func(w io.Writer) error { return renderTable(w, tl.Rows, out.format) })
}

// quotedList joins names as "a", "b" (so that the cluster "" shows).
func quotedList(names []string) string {
	quoted := make([]string, len(names))
	for i, n := range names {
		quoted[i] = fmt.Sprintf("%q", n)
	}
	return strings.Join(quoted, ", ")
}
