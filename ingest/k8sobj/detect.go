package k8sobj

import (
	"bufio"
	"bytes"
	"encoding/json"
	"regexp"
	"strings"
)

// Detect says whether head, the first few KB of a file, looks like Kubernetes objects (a List, a
// typed list, single objects, a -w stream or a watch-event stream, JSON or YAML). Audit logs
// (audit.k8s.io Events and EventLists, one JSON event per line) and audit policies are not.
// head may end anywhere.
func Detect(head []byte) bool {
	head = bytes.TrimPrefix(head, []byte{0xEF, 0xBB, 0xBF})
	trimmed := bytes.TrimLeft(head, " \t\r\n")
	if len(trimmed) == 0 {
		return false
	}
	if trimmed[0] == '{' || trimmed[0] == '[' {
		return detectJSON(trimmed)
	}
	return detectYAML(head)
}

// probe collects what the first value of a JSON head says about itself.
type probe struct {
	kind, apiVersion, typ string
	auditID, items        bool
	object                *probe // watch event's object
	item                  *probe // first list item
}

var apiVersionRe = regexp.MustCompile(`^([a-z0-9]([a-z0-9.-]*[a-z0-9])?/)?v[0-9]+((alpha|beta)[0-9]+)?$`)

func isAudit(apiVersion string) bool { return strings.HasPrefix(apiVersion, "audit.k8s.io/") }

func (p *probe) k8s() bool {
	if p == nil || p.auditID || isAudit(p.apiVersion) {
		return false
	}
	if p.kind != "" && p.apiVersion != "" {
		return true
	}
	// Keys are sorted in kubectl's output, so kind may come after a head that ends early;
	// apiVersion alone (v1, group/version) then decides.
	if apiVersionRe.MatchString(p.apiVersion) {
		return true
	}
	if p.typ == "" && p.object != nil && p.object.k8s() {
		return true
	}
	if p.typ != "" && p.object != nil {
		switch p.typ {
		case "ADDED", "MODIFIED", "DELETED", "BOOKMARK", "ERROR":
			return p.object.kind != "" || p.object.apiVersion != "" || p.typ == "BOOKMARK"
		}
		return false
	}
	if p.items && p.item != nil {
		return p.item.k8s()
	}
	// kubectl prints "apiVersion", then "items", then "kind": a head cut inside the first item.
	return p.items && p.apiVersion != "" && p.item != nil
}

func detectJSON(head []byte) bool {
	dec := json.NewDecoder(bytes.NewReader(head))
	tok, err := dec.Token()
	if err != nil {
		return false
	}
	if tok == json.Delim('[') {
		tok, err = dec.Token()
		if err != nil || tok != json.Delim('{') {
			return false
		}
		p := &probe{}
		readProbe(dec, p, 0)
		return p.k8s()
	}
	p := &probe{}
	readProbe(dec, p, 0)
	return p.k8s()
}

// readProbe reads the members of an object whose { has been read into p, as far as head goes.
func readProbe(dec *json.Decoder, p *probe, depth int) bool {
	for dec.More() {
		kt, err := dec.Token()
		if err != nil {
			return false
		}
		key, _ := kt.(string)
		switch key {
		case "kind", "apiVersion", "type":
			var s string
			if err := dec.Decode(&s); err != nil {
				// not a string, or cut: give up on this member
				return false
			}
			switch key {
			case "kind":
				p.kind = s
			case "apiVersion":
				p.apiVersion = s
			case "type":
				p.typ = s
			}
			continue
		case "auditID":
			p.auditID = true
		case "object", "items":
			if depth > 0 {
				break
			}
			tok, err := dec.Token()
			if err != nil {
				return false
			}
			if key == "object" && tok == json.Delim('{') {
				p.object = &probe{}
				if !readProbe(dec, p.object, depth+1) {
					return false
				}
				continue
			}
			if key == "items" && tok == json.Delim('[') {
				p.items = true
				if !dec.More() {
					dec.Token()
					continue
				}
				t2, err := dec.Token()
				if err != nil {
					return false
				}
				if t2 != json.Delim('{') {
					return false
				}
				p.item = &probe{}
				if !readProbe(dec, p.item, depth+1) {
					return false
				}
				// skip the rest of the items
				if err := skipValue(dec); err != nil {
					return false
				}
				continue
			}
			if d, ok := tok.(json.Delim); ok && (d == '{' || d == '[') {
				if skipValue(dec) != nil {
					return false
				}
			}
			continue
		}
		var raw json.RawMessage
		if err := dec.Decode(&raw); err != nil {
			return false
		}
	}
	_, err := dec.Token()
	return err == nil
}

func detectYAML(head []byte) bool {
	var kind, apiVersion string
	items := false
	itemKind := false
	sc := bufio.NewScanner(bytes.NewReader(head))
	sc.Buffer(make([]byte, 64*1024), len(head)+1)
	for sc.Scan() {
		l := sc.Text()
		switch {
		case strings.HasPrefix(l, "kind:"):
			kind = yamlScalar(l[5:])
		case strings.HasPrefix(l, "apiVersion:"):
			apiVersion = yamlScalar(l[11:])
		case strings.HasPrefix(l, "items:"):
			items = true
		case items && (strings.HasPrefix(l, "- kind:") || strings.HasPrefix(l, "  kind:") || strings.HasPrefix(l, "- apiVersion:")):
			itemKind = true
		}
		if isAudit(apiVersion) {
			return false
		}
		if kind != "" && apiVersion != "" || apiVersionRe.MatchString(apiVersion) {
			return true
		}
		if apiVersion != "" && items && itemKind {
			return true
		}
	}
	return false
}

func yamlScalar(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.Index(s, " #"); i >= 0 {
		s = strings.TrimSpace(s[:i])
	}
	return strings.Trim(s, `"'`)
}
