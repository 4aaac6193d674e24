package analyze

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/kubesift/kubesift/queries"
	"github.com/kubesift/kubesift/rules"
	"github.com/kubesift/kubesift/store"
	"github.com/kubesift/kubesift/tabular"
)

// Timeline is what is known about one object, as 'kubesift timeline' shows it.
type Timeline struct {
	Resource  string // the audit resource: endpoints, endpointslices, services, pods, configmaps, leases
	Cluster   string // "" when the evidence does not name it
	Namespace string
	Name      string
	Window    string // the window, as the report says it (Report.Window)
	// Rows are the observations in time order (at, source, object, what, detail, evidence, who):
	// audit events on the object, snapshots of it and the findings that name it.
	Rows *tabular.Table
	// Addresses are, for an Endpoints, EndpointSlice or Service, the state of each address of its
	// Service at every observation point per stream (at, stream, kind, ip, pod, state, evidence),
	// the states endpoint-flapping follows, as a JSON list of objects; nil for other kinds.
	Addresses json.RawMessage
}

// addressResources are the resources whose timeline has address states.
var addressResources = []string{"endpoints", "endpointslices", "services"}

// ObjectClusters returns the clusters ("" when unknown) in which db has seen the object
// resource/ns/name (query timeline/clusters.sql, sandboxed), in name order.
func ObjectClusters(ctx context.Context, db *store.DB, resource, ns, name string) ([]string, error) {
	conn, err := openSandbox(ctx, db)
	if err != nil {
		return nil, err
	}
	defer conn.Close()
	t, err := queryTable(ctx, conn, timelineSQL("clusters"), sql.Named("resource", resource), sql.Named("ns", ns), sql.Named("name", name))
	if err != nil {
		return nil, fmt.Errorf("reading the clusters of %s/%s/%s: %w", resource, ns, name, err)
	}
	clusters := make([]string, len(t.Rows))
	for i, row := range t.Rows {
		clusters[i], _ = row[0].(string)
	}
	return clusters, nil
}

// RunTimeline gathers the timeline of the object resource/ns/name of cluster within opt's
// window from db (queries timeline/object.sql and timeline/addresses.sql, sandboxed) and runs
// the rules for the findings that name it.
func RunTimeline(ctx context.Context, db *store.DB, resource, cluster, ns, name string, opt Options) (*Timeline, error) {
	conn, err := openSandbox(ctx, db)
	if err != nil {
		return nil, err
	}
	defer conn.Close()
	args := append(Args(rules.Rule{}, opt), sql.Named("resource", resource), sql.Named("cluster", cluster), sql.Named("ns", ns), sql.Named("name", name))
	tl := &Timeline{Resource: resource, Cluster: cluster, Namespace: ns, Name: name}
	if tl.Rows, err = queryTable(ctx, conn, timelineSQL("object"), args...); err != nil {
		return nil, fmt.Errorf("reading the timeline: %w", err)
	}
	if slices.Contains(addressResources, resource) {
		if tl.Addresses, err = queryJSON(ctx, conn, timelineSQL("addresses"), args...); err != nil {
			return nil, fmt.Errorf("reading the address states: %w", err)
		}
	}
	builtin, err := rules.Builtin()
	if err != nil {
		return nil, err
	}
	rep, err := Run(ctx, db, builtin, opt)
	if err != nil {
		return nil, err
	}
	tl.Window = rep.Window()
	// A finding about the object's collection (a client's watch of the namespace's endpoints) is
	// shown beside what is known of the object, never alone: a name nothing knows stays unknown.
	known := len(tl.Rows.Rows) > 0
	for _, f := range rep.findings {
		if f.Cluster == cluster && f.Namespace == ns && (f.Name == name || known && strings.HasPrefix(f.Name, resource)) {
			tl.Rows.Rows = append(tl.Rows.Rows, []any{f.FirstSeen, "finding", f.Rule, string(f.Severity), f.Summary, "", f.Subject})
		}
	}
	sort.SliceStable(tl.Rows.Rows, func(i, j int) bool {
		return tl.Rows.Rows[i][0].(time.Time).Before(tl.Rows.Rows[j][0].(time.Time))
	})
	return tl, nil
}

func timelineSQL(name string) string {
	q, _ := queries.SQL("timeline/" + name)
	return q
}

// eachRow runs query on conn and calls each with the table of its columns and each of its rows
// (a row's slice is reused: each copies what it keeps).
func eachRow(ctx context.Context, conn *store.Sandbox, query string, args []any, each func(t *tabular.Table, row []any) error) (*tabular.Table, error) {
	rows, err := conn.QueryContext(ctx, query, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	t, err := tabular.FromRows(rows)
	if err != nil {
		return nil, err
	}
	err = t.Scan(func(row []any) error { return each(t, row) })
	t.Scan = nil
	return t, err
}

// queryTable runs query on conn and reads all its rows.
func queryTable(ctx context.Context, conn *store.Sandbox, query string, args ...any) (*tabular.Table, error) {
	return eachRow(ctx, conn, query, args, func(t *tabular.Table, row []any) error {
		t.Rows = append(t.Rows, append([]any(nil), row...))
		return nil
	})
}

// queryJSON runs query on conn and returns its rows as a JSON list of objects, written a row at a
// time: holding every row first, then every row as a map, then their JSON, took three copies of a
// chart's rows (a lock's writes over ten days of the recordings at 10M events: 70 MB of JSON).
func queryJSON(ctx context.Context, conn *store.Sandbox, query string, args ...any) (json.RawMessage, error) {
	out := []byte{'['}
	_, err := eachRow(ctx, conn, query, args, func(t *tabular.Table, row []any) error {
		item := make(map[string]any, len(row))
		for i, c := range t.Columns {
			item[c.Name] = row[i]
		}
		b, err := json.Marshal(item)
		if len(out) > 1 {
			out = append(out, ',')
		}
		out = append(out, b...)
		return err
	})
	return append(out, ']'), err
}
