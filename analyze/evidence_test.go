package analyze

import (
	"encoding/json"
	"fmt"
	"testing"
	"time"
)

// TestEvidenceItems: evidence lists decode into items with their keys in order and typed values
// (times, int64, float64, bool, nil, nested JSON as text); an item that is not an object is
// {"value": item}, evidence that is not a list is a list of one, null none; the first of
// duplicate keys keeps its place and the last its value; escapes and invalid UTF-8 decode as
// encoding/json decodes them; malformed evidence is one item of its text, or what was read of
// an object.
func TestEvidenceItems(t *testing.T) {
	at := time.Date(2026, 11, 21, 5, 59, 10, 321638000, time.UTC)
	for _, tt := range []struct {
		evidence string
		want     string
	}{
		{`[{"at":"2026-11-21T05:59:10.321638Z","n":3,"x":1.5,"big":12345678901234567890,"ok":true,"no":false,"none":null,"ip":"10.0.0.1","list":[1, 2],"obj":{"a": "b"}}]`,
			fmt.Sprintf(`[[at n x big ok no none ip list obj] map[at:%v big:1.2345678901234567e+19 ip:10.0.0.1 list:json [1, 2] n:3 no:false none:<nil> obj:json {"a": "b"} ok:true x:1.5]]`, at)},
		{` [ {"b": 1, "a": 2, "b": 3} , 7, "s", [1] ] `, `[[b a] map[a:2 b:3]] [[value] map[value:7]] [[value] map[value:s]] [[value] map[value:json [1]]]`},
		{`{"only": "one"}`, `[[only] map[only:one]]`},
		{`"text"`, `[[value] map[value:text]]`},
		{`null`, ``},
		{`[{"a":1},`, `[[value] map[value:[{"a":1},]]`},
		{`{"a":1,`, `[[a] map[a:1]]`},
		{`[]`, ``},
		{`[{"esc":"a\u0026b\n\"q\"","bad":"` + "\xff" + `","neg":-2,"exp":1e3}]`, "[[esc bad neg exp] map[bad:\ufffd esc:a&b\n\"q\" exp:1000 neg:-2]]"},
	} {
		var got string
		for i, it := range evidenceItems(json.RawMessage(tt.evidence)) {
			if i > 0 {
				got += " "
			}
			values := map[string]any{}
			for k, v := range it.values {
				if j, ok := v.(json.RawMessage); ok {
					v = "json " + string(j)
				}
				values[k] = v
			}
			got += fmt.Sprintf("%v", []any{it.keys, values})
		}
		if got != tt.want {
			t.Errorf("evidenceItems(%s)\n got %s\nwant %s", tt.evidence, got, tt.want)
		}
	}
}
