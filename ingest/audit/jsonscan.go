package audit

import (
	"bytes"
	"encoding/json"
	"io"
	"unicode/utf16"
	"unicode/utf8"

	"github.com/go-json-experiment/json/jsontext"
)

// topLevelString returns the value of the string member key of the JSON object in line, looking
// only at the object's own members (never inside nested values). ok is false when the member is
// absent, is not a string, or the line is not a well-formed object up to that member.
// It scans just far enough to find the member, so for apiserver output, where kind, auditID,
// stage and requestURI come first, it reads only the line's first few hundred bytes. It finds
// the first of duplicate names, where Go takes the last: events are read through asGoReads
// first, which leaves none.
func topLevelString(line []byte, key string) (value string, ok bool) {
	raw, ok := topLevelRaw(line, key)
	if !ok || len(raw) == 0 || raw[0] != '"' {
		return "", false
	}
	return unquote(raw)
}

// topLevelRaw returns the raw JSON value of the member key of the object in line (see
// topLevelString), without decoding it.
func topLevelRaw(line []byte, key string) ([]byte, bool) {
	m, ok := findMember(line, key)
	if !ok {
		return nil, false
	}
	end, ok := skipValue(line, m.valueStart)
	if !ok {
		return nil, false
	}
	return line[m.valueStart:end], true
}

// topLevelFrom is topLevelRaw without finding where the value ends: it returns line from the
// start of the value on. For an object value that is enough to look up its own members
// (topLevelRaw stops at the object's end), and it saves skipping the whole value, such as a
// body's metadata with its managedFields.
func topLevelFrom(line []byte, key string) ([]byte, bool) {
	m, ok := findMember(line, key)
	if !ok {
		return nil, false
	}
	return line[m.valueStart:], true
}

// findMember returns the member key of the object in line, its value's end left unset.
func findMember(line []byte, key string) (objectMember, bool) {
	i := skipSpace(line, 0)
	if i >= len(line) || line[i] != '{' {
		return objectMember{}, false
	}
	for i++; i >= 0; {
		m, ok := readMemberName(line, i)
		if !ok {
			return m, false
		}
		if rawKeyEquals(line[m.keyStart:m.keyEnd], key) {
			return m, true
		}
		if m, ok = readMemberValue(line, m); !ok {
			return m, false
		}
		i = m.next
	}
	return objectMember{}, false
}

// objectMember is where one member of a JSON object is in its line: the quoted key, the raw
// value, and where the next member starts (-1 after the last one).
type objectMember struct {
	keyStart, keyEnd, valueStart, valueEnd, next int
}

// readMember reads the member starting at line[i] (after optional space); ok is false when the
// object is not well-formed there.
func readMember(line []byte, i int) (m objectMember, ok bool) {
	if m, ok = readMemberName(line, i); !ok {
		return m, false
	}
	return readMemberValue(line, m)
}

// readMemberName reads the name of the member starting at line[i] (after optional space), up to
// where its value starts.
func readMemberName(line []byte, i int) (m objectMember, ok bool) {
	i = skipSpace(line, i)
	if i >= len(line) || line[i] != '"' {
		return m, false
	}
	m.keyStart = i
	if m.keyEnd, ok = skipString(line, i); !ok {
		return m, false
	}
	i = skipSpace(line, m.keyEnd)
	if i >= len(line) || line[i] != ':' {
		return m, false
	}
	m.valueStart = skipSpace(line, i+1)
	return m, m.valueStart < len(line)
}

// readMemberValue reads on past the value of the member readMemberName read.
func readMemberValue(line []byte, m objectMember) (_ objectMember, ok bool) {
	if m.valueEnd, ok = skipValue(line, m.valueStart); !ok {
		return m, false
	}
	m.next = -1
	if j := skipSpace(line, m.valueEnd); j < len(line) && line[j] == ',' {
		m.next = j + 1
	}
	return m, true
}

// responseRVText returns the resourceVersion of a write's (create, update, patch, delete,
// deletecollection) response body as json_extract_string reads it in ResponseRV's SQL, for
// load.sql's cast to a number: a string's value, another scalar's text; nil for other verbs, a
// Status, a body without one or a null. Go takes it from the member scan, since the same
// expression in the load query made DuckDB transform the event again (twice the CPU of a load).
func responseRVText(scan *memberScan) *string {
	switch verb, _ := scan.str(memberVerb); verb {
	case "create", "update", "patch", "delete", "deletecollection":
	default:
		return nil
	}
	body, ok := scan.raw(memberResponseObject)
	if !ok {
		return nil
	}
	if kind, ok := topLevelString(body, "kind"); ok && kind == "Status" {
		return nil
	}
	meta, ok := topLevelFrom(body, "metadata")
	if !ok {
		return nil
	}
	raw, ok := topLevelRaw(meta, "resourceVersion")
	switch {
	case !ok || string(raw) == "null":
		return nil
	case raw[0] == '"':
		rv, ok := unquote(raw)
		if !ok {
			return nil
		}
		return &rv
	}
	rv := string(raw)
	return &rv
}

// member names a top-level member of an audit event that the Go side reads.
type member int

const (
	memberKind member = iota
	memberStage
	memberVerb
	memberRequestURI
	memberObjectRef
	memberResponseStatus
	memberStageTimestamp
	memberRequestObject
	memberResponseObject
	memberAnnotations
	memberCount
)

// memberOf returns the member a quoted key names, if it is one of them.
func memberOf(quoted []byte) (member, bool) {
	name := string(quoted[1 : len(quoted)-1])
	if bytes.IndexByte(quoted, '\\') >= 0 {
		var ok bool
		if name, ok = unquote(quoted); !ok {
			return 0, false
		}
	}
	switch name {
	case "kind":
		return memberKind, true
	case "stage":
		return memberStage, true
	case "verb":
		return memberVerb, true
	case "requestURI":
		return memberRequestURI, true
	case "objectRef":
		return memberObjectRef, true
	case "responseStatus":
		return memberResponseStatus, true
	case "stageTimestamp":
		return memberStageTimestamp, true
	case "requestObject":
		return memberRequestObject, true
	case "responseObject":
		return memberResponseObject, true
	case "annotations":
		return memberAnnotations, true
	}
	return 0, false
}

// memberScan holds where the members of an event the Go side needs are. eventReader fills it
// in the same pass that validates the event; otherwise (reset) a lookup walks on from where the
// previous one stopped, remembering the members it passes. Values are kept as positions in the
// event, so that the scan stays valid for a copy of it (see rebase). Like topLevelRaw it takes
// the first of duplicate names, which asGoReads leaves none of.
type memberScan struct {
	event []byte
	pos   int // where the walk goes on; -1 or past the end when the walk is over
	start [memberCount]int
	end   [memberCount]int // 0 when the member was not found (yet)
	// uri is the request URI once requestURI decoded it: the redactor and the batch both read it.
	uri    string
	uriSet bool
	// sensitive is isSensitiveEvent's answer once it was asked.
	sensitive, sensitiveSet bool
}

func scanMembers(event []byte) *memberScan {
	s := new(memberScan)
	s.reset(event)
	return s
}

// reset starts the scan of another event.
func (s *memberScan) reset(event []byte) {
	*s = memberScan{event: event, pos: len(event)}
	if i := skipSpace(event, 0); i < len(event) && event[i] == '{' {
		s.pos = i + 1
	}
}

// rebase points the scan at a byte-identical copy of its event.
func (s *memberScan) rebase(event []byte) { s.event = event }

// raw returns the raw JSON value of member m, walking on until it is found or the members end.
func (s *memberScan) raw(m member) ([]byte, bool) {
	for s.end[m] == 0 && s.next() {
	}
	if s.end[m] == 0 {
		return nil, false
	}
	return s.event[s.start[m]:s.end[m]], true
}

// str returns the value of the string member m (see topLevelString).
func (s *memberScan) str(m member) (string, bool) {
	raw, ok := s.raw(m)
	if !ok || len(raw) == 0 || raw[0] != '"' {
		return "", false
	}
	return unquote(raw)
}

// requestURI returns the event's request URI ("" when it has none that is a string).
func (s *memberScan) requestURI() string {
	if !s.uriSet {
		s.uri, _ = s.str(memberRequestURI)
		s.uriSet = true
	}
	return s.uri
}

// next reads one member; it returns false when there are no more, or the object is not
// well-formed up to there.
func (s *memberScan) next() bool {
	if s.pos < 0 || s.pos >= len(s.event) {
		return false
	}
	m, ok := readMember(s.event, s.pos)
	if !ok {
		s.pos = -1
		return false
	}
	if k, ok := memberOf(s.event[m.keyStart:m.keyEnd]); ok && s.end[k] == 0 {
		s.start[k], s.end[k] = m.valueStart, m.valueEnd
	}
	s.pos = m.next
	return true
}

func skipSpace(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\n' || b[i] == '\r') {
		i++
	}
	return i
}

// skipString returns the index just past the JSON string starting at b[i] == '"'.
func skipString(b []byte, i int) (int, bool) {
	for i++; i < len(b); i++ {
		switch b[i] {
		case '\\':
			i++
		case '"':
			return i + 1, true
		}
	}
	return 0, false
}

// skipValue returns the index just past the JSON value starting at b[i]. Nested objects and
// arrays are skipped by depth, minding strings; scalars run to the next delimiter.
func skipValue(b []byte, i int) (int, bool) {
	switch b[i] {
	case '"':
		return skipString(b, i)
	case '{', '[':
		depth := 0
		for ; i < len(b); i++ {
			switch b[i] {
			case '"':
				end, ok := skipString(b, i)
				if !ok {
					return 0, false
				}
				i = end - 1
			case '{', '[':
				depth++
			case '}', ']':
				depth--
				if depth == 0 {
					return i + 1, true
				}
			}
		}
		return 0, false
	default:
		for ; i < len(b); i++ {
			switch b[i] {
			case ',', '}', ']', ' ', '\t', '\n', '\r':
				return i, true
			}
		}
		return i, true
	}
}

// rawKeyEquals compares a quoted JSON key with key; keys with escapes are decoded first.
func rawKeyEquals(quoted []byte, key string) bool {
	inner := quoted[1 : len(quoted)-1]
	if len(inner) == len(key) && string(inner) == key {
		return true
	}
	for _, c := range inner {
		if c == '\\' {
			s, ok := unquote(quoted)
			return ok && s == key
		}
	}
	return false
}

// unquote decodes a quoted JSON string. The common escapes (\u0026 is how encoding/json writes
// '&' in every request URI) are handled inline; anything unusual goes through encoding/json.
func unquote(quoted []byte) (string, bool) {
	inner := quoted[1 : len(quoted)-1]
	simple := true
	for _, c := range inner {
		if c == '\\' || c < 0x20 || c >= utf8.RuneSelf {
			simple = false
			break
		}
	}
	if simple {
		return string(inner), true
	}
	out := make([]byte, 0, len(inner))
	for i := 0; i < len(inner); i++ {
		c := inner[i]
		if c != '\\' {
			if c < 0x20 || c >= utf8.RuneSelf {
				return unquoteSlow(quoted)
			}
			out = append(out, c)
			continue
		}
		i++
		if i >= len(inner) {
			return "", false
		}
		switch inner[i] {
		case '"', '\\', '/':
			out = append(out, inner[i])
		case 'n':
			out = append(out, '\n')
		case 't':
			out = append(out, '\t')
		case 'r':
			out = append(out, '\r')
		case 'b':
			out = append(out, '\b')
		case 'f':
			out = append(out, '\f')
		case 'u':
			if i+4 >= len(inner) {
				return "", false
			}
			r, ok := hex4(inner[i+1 : i+5])
			if !ok {
				return "", false
			}
			if utf16.IsSurrogate(r) {
				return unquoteSlow(quoted)
			}
			out = utf8.AppendRune(out, r)
			i += 4
		default:
			return "", false
		}
	}
	return string(out), true
}

func unquoteSlow(quoted []byte) (string, bool) {
	var s string
	if err := json.Unmarshal(quoted, &s); err != nil {
		return "", false
	}
	return s, true
}

func hex4(b []byte) (rune, bool) {
	var r rune
	for _, c := range b {
		r <<= 4
		switch {
		case c >= '0' && c <= '9':
			r |= rune(c - '0')
		case c >= 'a' && c <= 'f':
			r |= rune(c - 'a' + 10)
		case c >= 'A' && c <= 'F':
			r |= rune(c - 'A' + 10)
		default:
			return 0, false
		}
	}
	return r, true
}

// eventReader reads events as asGoReads does and finds their members (memberScan) in the same
// pass: jsontext's decoder validates each top-level member's value as it hands it over, so a
// valid event is walked once, not once to validate it and again, byte by byte, to find the
// members past its bodies (BENCHMARKS.md: 0.75–0.77× the CPU of the two walks). The zero value
// is ready to use.
type eventReader struct {
	dec jsontext.Decoder
	in  bytes.Buffer // the event, which the decoder reads in place
}

// read returns what asGoReads returns for event, and resets scan to the members of the event
// it returns.
func (r *eventReader) read(event []byte, scan *memberScan) (out []byte, changed, bad bool) {
	if r.scanValid(event, scan) {
		return event, false, false
	}
	out, changed, bad = asGoReads(event) // not valid, or valid but not an object
	scan.reset(out)
	return out, changed, bad
}

// scanValid reports whether event is a JSON object that jsontext.Value.IsValid accepts, filling
// scan with its members when it is.
func (r *eventReader) scanValid(event []byte, scan *memberScan) bool {
	*scan = memberScan{event: event, pos: -1}
	r.in = *bytes.NewBuffer(event)
	r.dec.Reset(&r.in)
	if t, err := r.dec.ReadToken(); err != nil || t.Kind() != '{' {
		return false
	}
	for r.dec.PeekKind() == '"' {
		name, err := r.dec.ReadValue()
		if err != nil {
			return false
		}
		m, known := memberOf(name)
		value, err := r.dec.ReadValue()
		if err != nil {
			return false
		}
		if known && scan.end[m] == 0 {
			end := int(r.dec.InputOffset())
			scan.start[m], scan.end[m] = end-len(value), end
		}
	}
	if t, err := r.dec.ReadToken(); err != nil || t.Kind() != '}' {
		return false
	}
	_, err := r.dec.ReadToken()
	return err == io.EOF
}

// asGoReads returns an event as Go's encoding/json reads it: the apiserver wrote it with Go, and
// DuckDB's reader is laxer (it takes trailing commas, NaN and Infinity, and the first of
// duplicate names where Go takes the last). An event with duplicate names is rewritten with only
// the last of each (changed); one Go would not read at all is bad, to be rejected. A valid event
// is checked in one pass (jsontext's I-JSON validation) and returned as it is.
func asGoReads(event []byte) (out []byte, changed, bad bool) {
	if jsontext.Value(event).IsValid() {
		return event, false, false
	}
	if !json.Valid(event) {
		return event, false, true
	}
	dec := json.NewDecoder(bytes.NewReader(event))
	dec.UseNumber()
	var v any
	if dec.Decode(&v) != nil {
		return event, false, true
	}
	out, err := json.Marshal(v)
	if err != nil {
		return event, false, true
	}
	return out, true, false
}
