package cli

import (
	"context"
	"database/sql"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/kubesift/kubesift/analyze"
	"github.com/kubesift/kubesift/rules"
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

// timelineSQL gathers what is known about one object, one row per observation, in time order:
// audit events on it (with the endpoint addresses their bodies held), snapshots of it, and, for
// a Service, the address changes of its Endpoints and EndpointSlices.
const timelineSQL = `
WITH obs AS (
    SELECT source, kind, name AS object, captured_at, source_file, source_line, object_seq, event,
           bool_or(deleted) AS deleted,
           coalesce(list_sort(list(ip) FILTER (WHERE ip IS NOT NULL AND ready)), []) AS ready,
           coalesce(list_sort(list(ip) FILTER (WHERE ip IS NOT NULL AND NOT ready)), []) AS not_ready
    FROM endpoint_addresses
    WHERE namespace = $ns AND (($resource IN ('endpoints', 'endpointslices') AND name = $name) OR ($resource = 'services' AND service = $name))
    GROUP BY ALL
),
states AS (
    SELECT *, lag(ready) OVER w AS prev_ready, lag(not_ready) OVER w AS prev_not_ready
    FROM obs
    WINDOW w AS (PARTITION BY source, kind, object ORDER BY captured_at, object_seq, source_line)
),
described AS (
    SELECT *,
        CASE WHEN deleted THEN 'deleted'
             ELSE 'ready [' || array_to_string(ready, ', ') || '] not ready [' || array_to_string(not_ready, ', ') || ']' ||
                  CASE WHEN prev_ready IS NULL THEN ''
                       WHEN ready = prev_ready AND not_ready = prev_not_ready THEN ' (no change)'
                       ELSE ' (' || concat_ws('; ',
                            CASE WHEN len(list_filter(ready, x -> NOT list_contains(prev_ready, x))) > 0
                                 THEN 'now ready ' || array_to_string(list_filter(ready, x -> NOT list_contains(prev_ready, x)), ', ') END,
                            CASE WHEN len(list_filter(prev_ready, x -> NOT list_contains(ready, x))) > 0
                                 THEN 'no longer ready ' || array_to_string(list_filter(prev_ready, x -> NOT list_contains(ready, x)), ', ') END) || ')'
                  END
        END AS addresses
    FROM states
)
SELECT a.stage_at AS "at", 'audit' AS source, a.resource || '/' || a.name AS object,
       a.verb || ' ' || coalesce(a.code::VARCHAR, '') || coalesce(' ' || a.status_reason, '') AS what,
       coalesce(d.addresses, '') AS detail,
       a.source_file || ':' || a.source_line AS evidence,
       trim(coalesce(a.username, '') || ' ' || coalesce(a.user_agent, '')) AS who
FROM audit_events a
LEFT JOIN described d ON d.source = 'audit' AND d.source_file = a.source_file AND d.source_line = a.source_line
WHERE a.stage = 'ResponseComplete' AND a.namespace = $ns AND a.name = $name AND a.resource = $resource
UNION ALL
SELECT d.captured_at, d.source, lower(d.kind) || '/' || d.object, coalesce(d.event, 'observed'), d.addresses,
       d.source_file || ':' || d.source_line, ''

FROM described d
WHERE d.source = 'snapshot' OR d.kind <> CASE $resource WHEN 'endpointslices' THEN 'EndpointSlice' ELSE 'Endpoints' END
   OR ($resource = 'services')
UNION ALL
SELECT captured_at, source, 'service/' || name, coalesce(event, 'observed'),
       'type ' || coalesce(type, '') || ', clusterIP ' || coalesce(cluster_ip, '') || ', ports ' || coalesce(ports, ''),
       source_file || ':' || source_line, ''

FROM services WHERE $resource = 'services' AND namespace = $ns AND name = $name
UNION ALL
SELECT captured_at, source, 'pod/' || name, coalesce(event, 'observed'),
       'phase ' || coalesce(phase, '') || ', ready ' || coalesce(ready::VARCHAR, '?') || ', ip ' || coalesce(pod_ip, '') || ', node ' || coalesce(node, ''),
       source_file || ':' || source_line, ''

FROM pods WHERE $resource = 'pods' AND namespace = $ns AND name = $name
`

func runTimeline(ctx context.Context, e *env, args []string) error {
	fs, c := newFlags(e, "timeline", "KIND/NAMESPACE/NAME",
		"Print everything known about one object in time order: audit events on it (who, verb, code,\n"+
			"and for Endpoints the ready/not-ready addresses and what changed), snapshots of it, and the\n"+
			"findings that name it. KIND is endpoints, endpointslice, service, pod, configmap or lease;\n"+
			"for a Service the addresses of its Endpoints and EndpointSlices are included.\n\n"+
			"Example: kubesift timeline endpoints/shop/cart")
	c.addDB(fs, e, "database file to read")
	out := addOutputFlag(fs, "table", "table", "json", "csv")
	since := fs.String("since", "", "from this time: RFC3339 or a duration before now")
	until := fs.String("until", "", "up to this time: RFC3339 or a duration before now")
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
	from, err := parseTime("since", *since, now)
	if err != nil {
		return err
	}
	to, err := parseTime("until", *until, now)
	if err != nil {
		return err
	}
	db, err := c.openDB(ctx, c.db, true)
	if err != nil {
		return err
	}
	defer db.Close()
	rows, err := db.QueryContext(ctx, "SELECT * FROM ("+timelineSQL+") WHERE \"at\" >= coalesce($since, '-infinity'::TIMESTAMPTZ) AND \"at\" <= coalesce($until, 'infinity'::TIMESTAMPTZ) ORDER BY \"at\", source, object",
		sql.Named("resource", resource), sql.Named("ns", ns), sql.Named("name", name),
		sql.Named("since", timeOrNil(from)), sql.Named("until", timeOrNil(to)))
	if err != nil {
		return fmt.Errorf("reading the timeline: %w", err)
	}
	rs, err := readRows(rows)
	rows.Close()
	if err != nil {
		return err
	}
	builtin, err := rules.Builtin()
	if err != nil {
		return err
	}
	rep, err := analyze.Run(ctx, db, builtin, analyze.Options{Since: from, Until: to})
	if err != nil {
		return err
	}
	for _, f := range rep.Findings {
		if f.Namespace == ns && (f.Name == name || strings.HasPrefix(f.Name, resource)) {
			rs.rows = append(rs.rows, []any{f.FirstSeen, "finding", f.Rule, string(f.Severity), f.Summary, "", f.Subject})
		}
	}
	sort.SliceStable(rs.rows, func(i, j int) bool { return rs.rows[i][0].(time.Time).Before(rs.rows[j][0].(time.Time)) })
	if len(rs.rows) == 0 {
		return fmt.Errorf("nothing is known about %s in %s", fs.Arg(0), c.db)
	}
	return out.write(e.stdout, rs)
}

func timeOrNil(t *time.Time) any {
	if t == nil {
		return nil
	}
	return *t
}
