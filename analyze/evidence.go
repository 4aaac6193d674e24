package analyze

import (
	"bytes"
	"encoding/json"
	"slices"
	"time"

	"github.com/kubesift/kubesift/tabular"
)

// evidenceItem is one evidence object, its keys in the order the rule wrote them.
type evidenceItem struct {
	keys   []string
	values map[string]any
}

// evidenceItems decodes a finding's evidence list. An item that is not an object becomes
// {"value": item}; evidence that is not a list counts as a list of one. Strings holding RFC3339
// times become times, numbers int64 or float64, nested lists and objects stay JSON.
func evidenceItems(raw json.RawMessage) []evidenceItem {
	var list []json.RawMessage
	if err := json.Unmarshal(raw, &list); err != nil {
		list = []json.RawMessage{raw}
	}
	items := make([]evidenceItem, 0, len(list))
	for _, r := range list {
		items = append(items, decodeItem(r))
	}
	return items
}

func decodeItem(raw json.RawMessage) evidenceItem {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return evidenceItem{keys: []string{"value"}, values: map[string]any{"value": evidenceValue(raw)}}
	}
	it := evidenceItem{values: map[string]any{}}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			break
		}
		key, _ := tok.(string)
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			break
		}
		if _, dup := it.values[key]; !dup {
			it.keys = append(it.keys, key)
		}
		it.values[key] = evidenceValue(v)
	}
	return it
}

// evidenceValue types one JSON value for a cell.
func evidenceValue(raw json.RawMessage) any {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var v any
	if dec.Decode(&v) != nil {
		return string(raw)
	}
	switch x := v.(type) {
	case json.Number:
		if i, err := x.Int64(); err == nil {
			return i
		}
		if f, err := x.Float64(); err == nil {
			return f
		}
		return x.String()
	case string:
		if t, err := time.Parse(time.RFC3339Nano, x); err == nil {
			return t.UTC()
		}
		return x
	case nil, bool:
		return x
	}
	return raw // a list or an object: JSON text
}

// evidenceTable flattens the evidence of findings into rows: the finding's number in the
// report and identity (lead columns), then the union of the evidence keys in order of first
// appearance. A finding without evidence still gets one row. It reads the evidence twice, one
// finding at a time: for the keys now, for the rows as they are written (Table.Scan).
func evidenceTable(name string, findings []Finding, numbers []int, lead bool) (*tabular.Table, error) {
	t := &tabular.Table{Name: name}
	var keys []string
	for _, f := range findings {
		items, err := f.evidenceItems()
		if err != nil {
			return nil, err
		}
		for _, it := range items {
			for _, k := range it.keys {
				if !slices.Contains(keys, k) {
					keys = append(keys, k)
				}
			}
		}
	}
	leading := []string{"finding", "severity", "cluster", "namespace", "name", "subject"}
	if lead {
		for _, c := range leading {
			t.Columns = append(t.Columns, tabular.Column{Name: c})
		}
	}
	for _, k := range keys {
		name := k
		if lead && slices.Contains(leading, k) {
			name = "evidence." + k
		}
		t.Columns = append(t.Columns, tabular.Column{Name: name})
	}
	t.Scan = func(yield func(row []any) error) error {
		for i, f := range findings {
			items, err := f.evidenceItems()
			if err != nil {
				return err
			}
			if len(items) == 0 {
				items = []evidenceItem{{}}
			}
			for _, it := range items {
				var row []any
				if lead {
					row = append(row, numbers[i], string(f.Severity), f.Cluster, f.Namespace, f.Name, f.Subject)
				}
				for _, k := range keys {
					row = append(row, it.values[k])
				}
				if err := yield(row); err != nil {
					return err
				}
			}
		}
		return nil
	}
	return t, nil
}

// evidenceItems reads f's evidence back and decodes it (see evidenceItems).
func (f Finding) evidenceItems() ([]evidenceItem, error) {
	raw, err := f.Evidence()
	if err != nil {
		return nil, err
	}
	return evidenceItems(raw), nil
}

// EvidenceTable is one finding's evidence as a table: a row per item, a column per key.
func EvidenceTable(f Finding) (*tabular.Table, error) {
	return evidenceTable("evidence", []Finding{f}, nil, false)
}
