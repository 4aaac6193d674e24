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

// RunTimeline gathers the timeline of the object resource/ns/name within opt's window from db
// (queries timeline/object.sql and timeline/addresses.sql, sandboxed) and runs the rules for the
// findings that name it.
func RunTimeline(ctx context.Context, db *store.DB, resource, ns, name string, opt Options) (*Timeline, error) {
	conn, err := openSandbox(ctx, db)
	if err != nil {
		return nil, err
	}
	defer conn.Close()
	args := append(Args(rules.Rule{}, opt), sql.Named("resource", resource), sql.Named("ns", ns), sql.Named("name", name))
	tl := &Timeline{Resource: resource, Namespace: ns, Name: name}
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
	for _, f := range rep.Findings {
		if f.Namespace == ns && (f.Name == name || strings.HasPrefix(f.Name, resource)) {
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

// queryTable runs query on conn and reads all its rows.
func queryTable(ctx context.Context, conn *store.Sandbox, query string, args ...any) (*tabular.Table, error) {
	t := &tabular.Table{}
	err := eachRow(ctx, conn, query, args, func(types []*sql.ColumnType) {
		for _, c := range types {
			t.Columns = append(t.Columns, tabular.Column{Name: c.Name(), Type: c.DatabaseTypeName()})
		}
	}, func(vals []any) {
		t.Rows = append(t.Rows, append([]any(nil), vals...))
	})
	return t, err
}

// queryJSON runs query on conn and returns its rows as a JSON list of objects.
func queryJSON(ctx context.Context, conn *store.Sandbox, query string, args ...any) (json.RawMessage, error) {
	var cols []string
	items := []map[string]any{}
	err := eachRow(ctx, conn, query, args, func(types []*sql.ColumnType) {
		for _, c := range types {
			cols = append(cols, c.Name())
		}
	}, func(vals []any) {
		item := make(map[string]any, len(cols))
		for i, c := range cols {
			item[c] = vals[i]
		}
		items = append(items, item)
	})
	if err != nil {
		return nil, err
	}
	return json.Marshal(items)
}

// eachRow runs query on conn, tells header its columns and calls row with each row's values
// (reused between calls).
func eachRow(ctx context.Context, conn *store.Sandbox, query string, args []any, header func([]*sql.ColumnType), row func([]any)) error {
	rows, err := conn.QueryContext(ctx, query, args...)
	if err != nil {
		return err
	}
	defer rows.Close()
	types, err := rows.ColumnTypes()
	if err != nil {
		return err
	}
	header(types)
	vals := make([]any, len(types))
	ptrs := make([]any, len(types))
	for i := range vals {
		ptrs[i] = &vals[i]
	}
	for rows.Next() {
		if err := rows.Scan(ptrs...); err != nil {
			return err
		}
		row(vals)
	}
	return rows.Err()
}
