package k8sobj

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"regexp"
	"strconv"
	"strings"

	"gopkg.in/yaml.v3"
)

// Handler receives the rows and the problems found while decoding.
type Handler interface {
	// Row receives one row. A non-nil error stops decoding; Decode returns it wrapped.
	Row(r Record) error
	// Bad reports an object, document or stretch of input that could not be used. line is 1-based
	// (0 when unknown), byteOffset is the offset in the input where the problem starts, reason says
	// what is wrong and excerpt shows up to 120 bytes of the input there. Decoding goes on after it.
	Bad(line int, byteOffset int64, reason string, excerpt string)
}

// Stats accounts for everything Decode saw in one input.
type Stats struct {
	Format      string         // json, yaml or empty
	Documents   int            // non-empty YAML documents (0 for JSON)
	Lists       int            // List and typed lists (EndpointsList, ...) seen
	WatchEvents int            // watch events ({"type":...,"object":...}), BOOKMARK and ERROR included
	Objects     int            // Kubernetes objects seen: list items singly, watch events' objects, plain objects
	Kinds       map[string]int // objects by kind; "" for objects without a kind that could not be inferred
	Ignored     int            // objects of kinds that produce no rows (Kinds minus the six handled kinds)
	Bad         int            // calls of Handler.Bad
	Rows        map[string]int // rows given to Handler.Row, by table
}

func newStats() Stats { return Stats{Kinds: map[string]int{}, Rows: map[string]int{}} }

const excerptLen = 120

// handlerError carries an error returned by Handler.Row through the decoder.
type handlerError struct{ err error }

func (e *handlerError) Error() string { return e.err.Error() }
func (e *handlerError) Unwrap() error { return e.err }

type decoder struct {
	name string
	h    Handler
	st   *Stats
	em   emitter
	seq  int64
}

func (d *decoder) bad(line int64, off int64, reason, excerpt string) {
	d.st.Bad++
	d.h.Bad(int(line), off, reason, excerpt)
}

// Decode reads Kubernetes objects from r (named name in errors): a List or typed list, a single
// object, a `kubectl get -w -o json` stream of concatenated objects, a watch-event stream, JSON or
// YAML (one or many `---` documents). Bad objects and documents go to h.Bad and decoding continues;
// the returned error is a read error or an error returned by h.Row.
func Decode(name string, r io.Reader, h Handler) (Stats, error) {
	st := newStats()
	d := &decoder{name: name, h: h, st: &st}
	d.em = emitter{h: h, stats: &st}
	br := bufio.NewReaderSize(r, 64<<10)
	var skip int64
	if b, _ := br.Peek(3); bytes.Equal(b, []byte{0xEF, 0xBB, 0xBF}) {
		br.Discard(3)
		skip = 3
	}
	format, err := sniff(br)
	if err != nil {
		return st, fmt.Errorf("reading %s line 1: %w", name, err)
	}
	st.Format = format
	switch format {
	case "json":
		t := newTracker(br)
		t.winOff, t.pos = skip, skip
		err = d.jsonStream(t)
	case "yaml":
		err = d.yamlStream(br, skip)
	}
	return st, err
}

// sniff says whether the input is JSON (first non-space byte { or [), YAML, or empty.
func sniff(br *bufio.Reader) (string, error) {
	for n := 512; ; n *= 2 {
		b, err := br.Peek(n)
		if i := bytes.IndexFunc(b, func(r rune) bool { return !strings.ContainsRune(" \t\r\n", r) }); i >= 0 {
			if b[i] == '{' || b[i] == '[' {
				return "json", nil
			}
			return "yaml", nil
		}
		if err != nil {
			if err == io.EOF || err == bufio.ErrBufferFull {
				if err == io.EOF {
					return "empty", nil
				}
				return "yaml", nil
			}
			return "", err
		}
	}
}

// listContext is what a list says about its items.
type listContext struct {
	kind       string // EndpointsList, List, ...
	apiVersion string
}

func (c *listContext) itemKind() string {
	k := strings.TrimSuffix(c.kind, "List")
	return k
}

// header is what the decoder looks at first in every object.
type header struct {
	Kind       string          `json:"kind"`
	APIVersion string          `json:"apiVersion"`
	Type       string          `json:"type"`
	Object     json.RawMessage `json:"object"`
	Metadata   json.RawMessage `json:"metadata"`
}

// handles says whether kind produces rows.
func handles(kind string) bool {
	switch kind {
	case KindEndpoints, KindEndpointSlice, KindService, KindPod, KindConfigMap, KindLease:
		return true
	}
	return false
}

// inferKind guesses the kind of an object without one (items of typed lists printed by the API
// server) from its shape.
func inferKind(raw []byte) string {
	var m map[string]json.RawMessage
	if json.Unmarshal(raw, &m) != nil {
		return ""
	}
	has := func(k string) bool { _, ok := m[k]; return ok }
	switch {
	case has("subsets"):
		return KindEndpoints
	case has("addressType") || (has("endpoints") && has("ports")):
		return KindEndpointSlice
	case has("type") || has("stringData"):
		// A Secret: never loaded, not even its annotations, whose last-applied-configuration
		// holds its data. A ConfigMap has no type.
		return "Secret"
	case has("data") || has("binaryData"):
		return KindConfigMap
	}
	if s, ok := m["spec"]; ok {
		var spec map[string]json.RawMessage
		if json.Unmarshal(s, &spec) == nil {
			_, containers := spec["containers"]
			_, holder := spec["holderIdentity"]
			_, renew := spec["renewTime"]
			_, ports := spec["ports"]
			_, sel := spec["selector"]
			_, cip := spec["clusterIP"]
			switch {
			case containers:
				return KindPod
			case holder || renew:
				return KindLease
			case cip || (ports && sel):
				return KindService
			}
		}
	}
	return ""
}

// top handles one top-level value that is not a list: a watch event or an object.
func (d *decoder) top(raw []byte, line, off int64) error {
	var h header
	if err := json.Unmarshal(raw, &h); err != nil {
		d.bad(line, off, "not a Kubernetes object: "+err.Error(), excerptOf(raw, excerptLen))
		return nil
	}
	if h.Kind == "" && h.Type != "" && h.Object != nil {
		d.st.WatchEvents++
		switch h.Type {
		case "BOOKMARK":
			return nil
		case "ERROR":
			var st struct {
				Code    int    `json:"code"`
				Reason  string `json:"reason"`
				Message string `json:"message"`
			}
			json.Unmarshal(h.Object, &st)
			d.bad(line, off, fmt.Sprintf("watch ERROR event: %d %s: %s", st.Code, st.Reason, st.Message), excerptOf(raw, excerptLen))
			return nil
		case "ADDED", "MODIFIED", "DELETED":
		default:
			d.bad(line, off, fmt.Sprintf("watch event of unknown type %q", h.Type), excerptOf(raw, excerptLen))
			return nil
		}
		return d.object(h.Object, nil, Origin{Line: line, Event: h.Type}, off, h.Type == "DELETED")
	}
	return d.object(raw, nil, Origin{Line: line}, off, false)
}

// object handles one Kubernetes object; lc is its list's context or nil.
func (d *decoder) object(raw []byte, lc *listContext, o Origin, off int64, deleted bool) error {
	var h header
	if err := json.Unmarshal(raw, &h); err != nil {
		reason := "not a Kubernetes object: " + err.Error()
		if lc != nil {
			reason = "list item is not a Kubernetes object: " + err.Error()
		}
		d.bad(o.Line, off, reason, excerptOf(raw, excerptLen))
		return nil
	}
	return d.objectWithHeader(raw, &h, lc, o, off, deleted)
}

// objectWithHeader is object for raw whose header h is decoded already.
func (d *decoder) objectWithHeader(raw []byte, h *header, lc *listContext, o Origin, off int64, deleted bool) error {
	kind, apiVersion := h.Kind, h.APIVersion
	if kind == "" && lc != nil {
		kind = lc.itemKind()
	}
	if kind == "" {
		kind = inferKind(raw)
	}
	if apiVersion == "" && lc != nil && lc.apiVersion != "" && lc.kind != "List" {
		apiVersion = lc.apiVersion
	}
	d.seq++
	o.Seq = d.seq
	d.st.Objects++
	d.st.Kinds[kind]++
	if !handles(kind) {
		d.st.Ignored++
		return nil
	}
	err := d.em.object(kind, apiVersion, raw, o, deleted)
	var oe *objectError
	if errors.As(err, &oe) {
		d.bad(o.Line, off, oe.reason, excerptOf(raw, excerptLen))
		return nil
	}
	if err != nil {
		return &handlerError{err}
	}
	return nil
}

// ---- JSON ----

func (d *decoder) jsonStream(t *tracker) error {
	js := &jsonState{d: d, t: t}
	js.restart(t.pos)
	for {
		before := js.abs()
		tok, err := js.token()
		if err == io.EOF {
			if rerr := t.readErr(); rerr != nil {
				return fmt.Errorf("reading %s line %d: %w", d.name, t.line(t.end()), rerr)
			}
			return nil
		}
		start := before
		if err == nil {
			start = js.abs() - 1
			t.mark(start)
			switch tok {
			case json.Delim('{'):
				err = js.topObject(start)
			case json.Delim('['):
				err = js.items(start, &listContext{})
				if err == nil {
					d.st.Lists++
				}
			default:
				d.bad(t.line(start), start, fmt.Sprintf("unexpected top-level JSON value %v", tok), t.excerpt(start, excerptLen))
				continue
			}
		}
		if err == nil {
			continue
		}
		if stop, err := js.failed(err, start); stop {
			return err
		}
	}
}

type jsonState struct {
	d    *decoder
	t    *tracker
	dec  *json.Decoder
	base int64 // input offset where dec started

	lastTokenAt int64 // input offset before the last Token call
}

// token is dec.Token remembering where it started.
func (js *jsonState) token() (json.Token, error) {
	js.lastTokenAt = js.abs()
	return js.dec.Token()
}

func (js *jsonState) abs() int64 { return js.base + js.dec.InputOffset() }

// posError is a syntax error inside a value read with Decode, whose offset is relative to the value.
type posError struct {
	at  int64
	err error
}

func (e *posError) Error() string { return e.err.Error() }
func (e *posError) Unwrap() error { return e.err }

// decode is dec.Decode with syntax error offsets made absolute.
func (js *jsonState) decode(v any) error {
	from := js.abs()
	err := js.dec.Decode(v)
	var se *json.SyntaxError
	if errors.As(err, &se) {
		// The offsets of Decode's syntax errors count all values this decoder scanned so far;
		// find the position by scanning the value again on its own.
		rest := js.t.slice(from, js.t.end())
		skip := len(rest) - len(bytes.TrimLeft(rest, " \t\r\n:,"))
		var raw json.RawMessage
		err2 := json.NewDecoder(bytes.NewReader(rest[skip:])).Decode(&raw)
		at := from + int64(skip)
		if errors.As(err2, &se) {
			at += se.Offset
		}
		return &posError{at: at, err: err}
	}
	return err
}

func (js *jsonState) restart(off int64) {
	js.t.pos = off
	js.base = off
	js.dec = json.NewDecoder(js.t)
}

// failed handles an error from the JSON stream: it reports it and resynchronises at the next line
// starting with { or [, or says to stop (with the error to return, nil at the end of input).
func (js *jsonState) failed(err error, start int64) (bool, error) {
	d, t := js.d, js.t
	var he *handlerError
	if errors.As(err, &he) {
		return true, he.err
	}
	if rerr := t.readErr(); rerr != nil {
		return true, fmt.Errorf("reading %s line %d: %w", d.name, t.line(t.end()), rerr)
	}
	if errors.Is(err, io.ErrUnexpectedEOF) {
		end := t.end()
		d.bad(t.line(end), end, fmt.Sprintf("truncated JSON: input ends at line %d inside the value that starts at line %d", t.line(end), t.line(start)), t.excerpt(start, excerptLen))
		return true, nil
	}
	var se *json.SyntaxError
	var pe *posError
	at := js.abs()
	if errors.As(err, &pe) {
		at = pe.at
	} else if errors.As(err, &se) {
		// A Token error: its offset is not reliable, but the bad byte is at or just after where
		// the token starts.
		at = js.lastTokenAt
		rest := t.slice(at, t.end())
		at += int64(len(rest) - len(bytes.TrimLeft(rest, " \t\r\n:,")))
	}
	if at < start {
		at = start
	}
	if at > t.end() {
		at = t.end()
	}
	d.bad(t.line(at), at, fmt.Sprintf("invalid JSON at line %d (value starts at line %d): %v", t.line(at), t.line(start), err), t.excerpt(max(at-40, start), excerptLen))
	// Resume at the first line starting with { or [ from the line of the error on, but after start.
	if start < t.winOff {
		start = t.winOff
	}
	from := at
	for from > start+1 {
		if b := t.slice(from-1, from); len(b) == 1 && b[0] == '\n' {
			break
		}
		from--
	}
	if from <= start {
		from = start + 1
	}
	off, ok := t.seekLineStart(from, "{[")
	if !ok {
		return true, nil
	}
	t.mark(off)
	js.restart(off)
	return false, nil
}

// topObject reads a top-level object whose { has been read.
func (js *jsonState) topObject(start int64) error {
	var lc listContext
	isList := false
	for js.dec.More() {
		kt, err := js.token()
		if err != nil {
			return err
		}
		key, _ := kt.(string)
		if key == "items" {
			tok, err := js.token()
			if err != nil {
				return err
			}
			switch tok {
			case json.Delim('['):
				isList = true
				if err := js.items(start, &lc); err != nil {
					return err
				}
			case json.Delim('{'):
				if err := skipValue(js.dec); err != nil {
					return err
				}
			}
			continue
		}
		var raw json.RawMessage
		if err := js.decode(&raw); err != nil {
			return err
		}
		switch key {
		case "kind":
			json.Unmarshal(raw, &lc.kind)
		case "apiVersion":
			json.Unmarshal(raw, &lc.apiVersion)
		}
	}
	if _, err := js.token(); err != nil {
		return err
	}
	end := js.abs()
	if isList {
		js.d.st.Lists++
		js.t.mark(end)
		return nil
	}
	raw := js.t.slice(start, end)
	line := js.t.line(start)
	err := js.d.top(raw, line, start)
	js.t.mark(end)
	return err
}

// items reads the elements of an array whose [ has been read, and its ].
func (js *jsonState) items(start int64, lc *listContext) error {
	for js.dec.More() {
		var raw json.RawMessage
		if err := js.decode(&raw); err != nil {
			return err
		}
		end := js.abs()
		s := end - int64(len(raw))
		line := js.t.line(s)
		if err := js.d.object(raw, lc, Origin{Line: line}, s, false); err != nil {
			return err
		}
		js.t.mark(end)
	}
	_, err := js.token()
	return err
}

// skipValue skips the rest of an object or array whose opening delimiter has been read.
func skipValue(dec *json.Decoder) error {
	depth := 1
	for depth > 0 {
		tok, err := dec.Token()
		if err != nil {
			return err
		}
		switch tok {
		case json.Delim('{'), json.Delim('['):
			depth++
		case json.Delim('}'), json.Delim(']'):
			depth--
		}
	}
	return nil
}

// ---- YAML ----

var yamlLineRe = regexp.MustCompile(`line (\d+)`)

func isDocStart(l []byte) bool {
	if !bytes.HasPrefix(l, []byte("---")) {
		return false
	}
	rest := l[3:]
	return len(bytes.TrimSpace(rest)) == 0 || rest[0] == ' ' || rest[0] == '\t'
}

func isDocEnd(l []byte) bool {
	return bytes.HasPrefix(l, []byte("...")) && len(bytes.TrimSpace(l[3:])) == 0
}

func (d *decoder) yamlStream(br *bufio.Reader, skip int64) error {
	var doc, long bytes.Buffer
	items := yamlItems{d: d, budget: maxAliasNodes}
	docLine, docOff := int64(1), skip
	line, off := int64(0), skip
	flush := func() error {
		streamed, err := items.end(&doc)
		if err == nil {
			if streamed {
				err = d.yamlListRest(doc.Bytes(), docLine, docOff)
			} else {
				err = d.yamlDoc(doc.Bytes(), docLine, docOff)
			}
		}
		doc.Reset()
		return err
	}
	for {
		l, err := br.ReadSlice('\n')
		if err == bufio.ErrBufferFull { // a line longer than the buffer
			long.Reset()
			for err == bufio.ErrBufferFull {
				long.Write(l)
				l, err = br.ReadSlice('\n')
			}
			long.Write(l)
			l = long.Bytes()
		}
		if len(l) > 0 {
			line++
			switch {
			case isDocStart(l):
				if ferr := flush(); ferr != nil {
					return ferr
				}
				docLine, docOff = line, off
				// Content after "--- " belongs to the new document; keep the marker line as a
				// blank so that YAML line numbers stay right.
				rest := bytes.TrimLeft(l[3:], " \t")
				if len(bytes.TrimSpace(rest)) > 0 {
					doc.Write(rest)
				} else {
					doc.WriteByte('\n')
				}
			case isDocEnd(l):
				if ferr := flush(); ferr != nil {
					return ferr
				}
				docLine, docOff = line+1, off+int64(len(l))
			default:
				taken, terr := items.take(&doc, l, line, off)
				if terr != nil {
					return terr
				}
				if !taken {
					doc.Write(l)
				} else if items.active {
					doc.WriteByte('\n') // keeps the document's line numbers
				}
			}
			off += int64(len(l))
		}
		if err == io.EOF {
			return flush()
		}
		if err != nil {
			return fmt.Errorf("reading %s line %d: %w", d.name, line+1, err)
		}
	}
}

// yamlListRest checks the lines of a List document around its streamed items.
func (d *decoder) yamlListRest(b []byte, startLine, off int64) error {
	d.st.Documents++
	var n yaml.Node
	if err := yaml.Unmarshal(b, &n); err != nil {
		d.bad(startLine, off, fmt.Sprintf("invalid YAML in the document starting at line %d: %v", startLine, err), excerptOf(b, excerptLen))
	}
	return nil
}

// blankYAML says whether a document holds nothing but blank lines, comments and directives.
func blankYAML(b []byte) bool {
	for _, l := range bytes.Split(b, []byte("\n")) {
		l = bytes.TrimSpace(l)
		if len(l) > 0 && l[0] != '#' && l[0] != '%' {
			return false
		}
	}
	return true
}

func (d *decoder) yamlDoc(b []byte, startLine, off int64) error {
	if blankYAML(b) {
		return nil
	}
	d.st.Documents++
	var n yaml.Node
	if err := yaml.Unmarshal(b, &n); err != nil {
		msg := err.Error()
		line := startLine
		if m := yamlLineRe.FindStringSubmatch(msg); m != nil {
			if rel, err := strconv.ParseInt(m[1], 10, 64); err == nil {
				line = min(startLine+max(rel, 1)-1, startLine+int64(bytes.Count(b, []byte{'\n'})))
				msg = strings.Replace(msg, m[0], "line "+strconv.FormatInt(line, 10), 1)
			}
		}
		d.bad(line, off, fmt.Sprintf("invalid YAML in the document starting at line %d: %s", startLine, msg), excerptOf(b, excerptLen))
		return nil
	}
	if n.Kind != yaml.DocumentNode || len(n.Content) == 0 {
		return nil
	}
	root := n.Content[0]
	budget := maxAliasNodes
	lastLine := startLine + int64(bytes.Count(b, []byte{'\n'}))
	abs := func(nd *yaml.Node) int64 {
		// yaml.v3 also counts a lone \r as a line break; stay inside the document.
		return min(startLine+int64(max(nd.Line, 1))-1, lastLine)
	}
	switch root.Kind {
	case yaml.MappingNode:
		var lc listContext
		var items *yaml.Node
		for i := 0; i+1 < len(root.Content); i += 2 {
			k, v := root.Content[i], root.Content[i+1]
			switch k.Value {
			case "kind":
				lc.kind = v.Value
			case "apiVersion":
				lc.apiVersion = v.Value
			case "items":
				if v.Kind == yaml.SequenceNode {
					items = v
				} else if v.ShortTag() == "!!null" {
					items = &yaml.Node{Kind: yaml.SequenceNode}
				}
			}
		}
		if items == nil {
			j, err := nodeJSON(root, &budget)
			if err != nil {
				d.bad(abs(root), off, fmt.Sprintf("YAML document starting at line %d: %v", startLine, err), excerptOf(b, excerptLen))
				return nil
			}
			return d.top(j, abs(root), off)
		}
		d.st.Lists++
		return d.yamlItems(items, &lc, abs, off, b, &budget)
	case yaml.SequenceNode:
		d.st.Lists++
		return d.yamlItems(root, &listContext{}, abs, off, b, &budget)
	case yaml.ScalarNode:
		if root.ShortTag() == "!!null" {
			return nil
		}
	}
	d.bad(abs(root), off, fmt.Sprintf("YAML document starting at line %d is not an object or list", startLine), excerptOf(b, excerptLen))
	return nil
}

func (d *decoder) yamlItems(items *yaml.Node, lc *listContext, abs func(*yaml.Node) int64, off int64, b []byte, budget *int) error {
	for _, it := range items.Content {
		j, err := nodeJSON(it, budget)
		if err != nil {
			d.bad(abs(it), off, fmt.Sprintf("YAML list item at line %d: %v", abs(it), err), excerptOf(b, excerptLen))
			continue
		}
		if err := d.object(j, lc, Origin{Line: abs(it)}, off, false); err != nil {
			return err
		}
	}
	return nil
}

// ---- single objects (audit bodies) ----

// ObjectOptions describes an object body handed to DecodeObject.
type ObjectOptions struct {
	// Event goes to the event column, e.g. the audit verb: create, update, patch, delete.
	Event string
	// Line goes to source_line, e.g. the audit event's line.
	Line int64
	// Seq goes to object_seq (0 = NULL).
	Seq int64
	// Kind is used when the body has no kind; a Kind (Endpoints) or a resource (endpointslices).
	Kind string
	// Deleted marks the object as deleted (an audit delete). The body may then be the deleted
	// object, a Status, or empty; Kind, Namespace and Name say what was deleted when the body
	// does not, and one deleted marker row is emitted (endpoint_addresses, services or pods).
	Deleted         bool
	Namespace, Name string
}

// DecodeObject emits the rows of one object given as JSON, e.g. an audit event's responseObject
// (use responseObject for patches: a patch's requestObject is the patch, not the object). A body
// that cannot be used goes to h.Bad (line opt.Line, offset 0); the error is one returned by h.Row.
func DecodeObject(body []byte, opt ObjectOptions, h Handler) error {
	st := newStats()
	d := &decoder{name: "object", h: h, st: &st, seq: opt.Seq - 1}
	d.em = emitter{h: h, stats: &st}
	var hd header
	body = bytes.TrimSpace(body)
	useBody := len(body) > 0 && unmarshal(body, &hd) == nil
	kind := normalizeKind(opt.Kind)
	if useBody && hd.Kind != "" && hd.Kind != kind && opt.Deleted {
		useBody = false // e.g. a Status answering a delete
	}
	if opt.Deleted && useBody {
		var md struct{ Name string }
		json.Unmarshal(hd.Metadata, &md)
		useBody = md.Name != ""
	}
	if !useBody {
		if !opt.Deleted {
			if len(body) == 0 {
				d.bad(opt.Line, 0, "empty object body", "")
			} else {
				var v any
				err := json.Unmarshal(body, &v)
				d.bad(opt.Line, 0, fmt.Sprintf("object body is not a JSON object: %v", err), excerptOf(body, excerptLen))
			}
			return nil
		}
		md := map[string]any{"name": opt.Name}
		if opt.Namespace != "" {
			md["namespace"] = opt.Namespace
		}
		body, _ = json.Marshal(map[string]any{"kind": kind, "metadata": md})
	}
	lc := &listContext{kind: kind + "List"}
	if opt.Seq == 0 {
		d.seq = -1 // object_seq stays NULL
	}
	o := Origin{Line: opt.Line, Event: opt.Event}
	var err error
	if useBody { // the header is decoded already
		err = d.objectWithHeader(body, &hd, lc, o, 0, opt.Deleted)
	} else {
		err = d.object(body, lc, o, 0, opt.Deleted)
	}
	var he *handlerError
	if errors.As(err, &he) {
		return he.err
	}
	return err
}
