package analyze

import (
	"bytes"
	"encoding/json"
	"slices"
	"strconv"
	"time"

	"github.com/go-json-experiment/json/jsontext"

	"github.com/kubesift/kubesift/tabular"
)

// evidenceItem is one evidence object, its keys in the order the rule wrote them.
type evidenceItem struct {
	keys   []string
	values map[string]any
}

// evidenceItems decodes a finding's evidence list. An item that is not an object becomes
// {"value": item}; evidence that is not a list counts as a list of one. Strings holding RFC3339
// times become times, numbers int64 or float64, nested lists and objects stay JSON. It reads the
// list once, with one decoder (a decoder per value made a spreadsheet of 25,115 findings spend
// half its CPU here).
func evidenceItems(raw json.RawMessage) []evidenceItem {
	dec := jsontext.NewDecoder(bytes.NewReader(raw), lenient...)
	switch dec.PeekKind() {
	case 'n': // null: no items
		return nil
	case '[':
	default:
		return []evidenceItem{decodeItem(raw)}
	}
	if _, err := dec.ReadToken(); err != nil {
		return []evidenceItem{decodeItem(raw)}
	}
	var items []evidenceItem
	for dec.PeekKind() != ']' {
		var it evidenceItem
		var err error
		if dec.PeekKind() == '{' {
			it, err = readObjectItem(dec)
		} else {
			var v jsontext.Value
			v, err = dec.ReadValue()
			it = valueItem(json.RawMessage(v))
		}
		if err != nil {
			return []evidenceItem{decodeItem(raw)}
		}
		items = append(items, it)
	}
	return items
}

// decodeItem decodes raw as one evidence item (see evidenceItems); raw is not kept.
func decodeItem(raw json.RawMessage) evidenceItem {
	dec := jsontext.NewDecoder(bytes.NewReader(raw), lenient...)
	if dec.PeekKind() != '{' {
		return valueItem(raw)
	}
	it, _ := readObjectItem(dec) // what was read of a malformed object
	return it
}

// valueItem is the item {"value": raw} of an item that is not an object; raw is not kept.
func valueItem(raw json.RawMessage) evidenceItem {
	return evidenceItem{keys: []string{"value"}, values: map[string]any{"value": evidenceValue(raw)}}
}

// readObjectItem reads the object dec is at as an evidence item: its keys in order (the first of
// duplicate keys keeps its place, the last its value) and their values typed.
func readObjectItem(dec *jsontext.Decoder) (evidenceItem, error) {
	it := evidenceItem{values: map[string]any{}}
	if _, err := dec.ReadToken(); err != nil {
		return it, err
	}
	for dec.PeekKind() != '}' {
		tok, err := dec.ReadToken()
		if err != nil {
			return it, err
		}
		key := tok.String()
		v, err := dec.ReadValue()
		if err != nil {
			return it, err
		}
		if _, dup := it.values[key]; !dup {
			it.keys = append(it.keys, key)
		}
		it.values[key] = evidenceValue(json.RawMessage(v))
	}
	_, err := dec.ReadToken() // }
	return it, err
}

// evidenceValue types one JSON value for a cell; raw is not kept.
func evidenceValue(raw json.RawMessage) any {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 {
		return ""
	}
	switch c := raw[0]; {
	case c == '"':
		s, err := jsontext.AppendUnquote(nil, raw)
		if err != nil {
			var x string
			if json.Unmarshal(raw, &x) != nil {
				return string(raw)
			}
			s = []byte(x)
		}
		if t, err := time.Parse(time.RFC3339Nano, string(s)); err == nil {
			return t.UTC()
		}
		return string(s)
	case c == '-' || c >= '0' && c <= '9':
		if i, err := strconv.ParseInt(string(raw), 10, 64); err == nil {
			return i
		}
		if f, err := strconv.ParseFloat(string(raw), 64); err == nil {
			return f
		}
		return string(raw)
	case bytes.Equal(raw, []byte("null")):
		return nil
	case bytes.Equal(raw, []byte("true")):
		return true
	case bytes.Equal(raw, []byte("false")):
		return false
	case (c == '[' || c == '{') && jsontext.Value(raw).IsValid(lenient...):
		return json.RawMessage(bytes.Clone(raw)) // a list or an object: JSON text
	}
	return string(raw)
}

// evidenceTable flattens the evidence of findings into rows: the finding's number in the
// report and identity (lead columns), then the union of the evidence keys in order of first
// appearance. A finding without evidence still gets one row. It reads the evidence twice, one
// finding at a time: for the keys now, for the rows as they are written (Table.Scan).
func evidenceTable(name string, findings func(fn func(number int, f Finding) error) error, lead bool) (*tabular.Table, error) {
	t := &tabular.Table{Name: name}
	var keys []string
	err := findings(func(_ int, f Finding) error {
		items, err := f.evidenceItems()
		if err != nil {
			return err
		}
		for _, it := range items {
			for _, k := range it.keys {
				if !slices.Contains(keys, k) {
					keys = append(keys, k)
				}
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
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
		return findings(func(number int, f Finding) error {
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
					row = append(row, number, string(f.Severity), f.Cluster, f.Namespace, f.Name, f.Subject)
				}
				for _, k := range keys {
					row = append(row, it.values[k])
				}
				if err := yield(row); err != nil {
					return err
				}
			}
			return nil
		})
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
	return evidenceTable("evidence", func(fn func(int, Finding) error) error { return fn(1, f) }, false)
}
