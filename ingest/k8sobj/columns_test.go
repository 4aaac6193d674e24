package k8sobj

import (
	"reflect"
	"strings"
	"testing"

	"github.com/kubesift/kubesift/store"
)

// recordColumns lists a record's column names from its col tags (embedded Origin first).
func recordColumns(t reflect.Type) []string {
	var out []string
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		if f.Anonymous {
			out = append(out, recordColumns(f.Type)...)
			continue
		}
		if tag := f.Tag.Get("col"); tag != "" {
			out = append(out, strings.Split(tag, ",")...)
		}
	}
	return out
}

func TestRecordsMatchSchema(t *testing.T) {
	tables := map[string]store.Table{}
	for _, tb := range Tables {
		if tb.Derive == "" { // a derived table's rows are made of the others' (endpoint_objects)
			tables[tb.Name] = tb
		}
	}
	recs := []Record{EndpointAddress{}, Service{}, Pod{}, PodProbe{}, ObjectAnnotation{}, LeaderLock{}}
	if len(recs) != len(tables) {
		t.Fatalf("%d record types, %d tables", len(recs), len(tables))
	}
	for _, r := range recs {
		tb, ok := tables[r.Table()]
		if !ok {
			t.Fatalf("no table %s", r.Table())
		}
		names := tb.ColumnNames()
		if !reflect.DeepEqual(names[:len(CallerColumns)], CallerColumns) {
			t.Errorf("%s: leading columns %v, want %v", tb.Name, names[:len(CallerColumns)], CallerColumns)
		}
		if names[len(names)-1] != ClusterColumn {
			t.Errorf("%s: last column %s, want %s", tb.Name, names[len(names)-1], ClusterColumn)
		}
		want := names[len(CallerColumns) : len(names)-1]
		got := recordColumns(reflect.TypeOf(r))
		if !reflect.DeepEqual(got, want) {
			t.Errorf("%s: record columns\n%v\ntable columns\n%v", tb.Name, got, want)
		}
		if n := len(r.Values()); n != len(want) {
			t.Errorf("%s: Values() has %d values, table has %d decoder columns", tb.Name, n, len(want))
		}
		for _, c := range tb.Columns {
			if c.Doc == "" || c.Type == "" {
				t.Errorf("%s.%s undocumented", tb.Name, c.Name)
			}
		}
	}
}
