package audit

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"regexp"
	"strings"
)

// The bodies of sensitive events are dropped in load.sql. redactEvent takes out what holds
// secrets elsewhere in an event, replacing each value by redacted(value):
//   - the values of token parameters in the request URI's query (access_token=...);
//   - bearer tokens in annotations and in responseStatus.message;
//   - in sensitive events (isSensitiveEvent: of Secrets, token reviews and requests): the JSON patches
//     of mutating webhooks (patch.webhook.admission.k8s.io/round_N_index_M annotations), which
//     hold the object's data, and responseStatus.message, which can echo the values.

// redactedPrefix starts every value the redactor put in place of a secret.
const redactedPrefix = "[redacted sha256:"

// redacted returns the marker that stands for a secret value: the same value gives the same
// marker, so equal secrets stay visible as equal without being readable.
func redacted(value string) string {
	if isRedacted(value) {
		return value
	}
	sum := sha256.Sum256([]byte(value))
	return redactedPrefix + hex.EncodeToString(sum[:8]) + "]"
}

func isRedacted(value string) bool {
	return strings.HasPrefix(value, redactedPrefix) && len(value) == len(redactedPrefix)+17 && value[len(value)-1] == ']'
}

// tokenQueryParams are the request URI parameters that carry credentials.
var tokenQueryParams = []string{"access_token", "id_token", "refresh_token", "token"}

// webhookPatchAnnotation prefixes the annotations of the patches mutating webhooks made.
const webhookPatchAnnotation = "patch.webhook.admission.k8s.io/"

// bearerToken matches the credential after the word bearer: of an HTTP Authorization header
// value ("Bearer <token>"), and of messages that name it ("bearer token <token>", "bearer token:
// <token>", "bearer_token=<token>", "bearer: <token>"). A credential that is the word token itself
// is the end of a message such as "invalid bearer token" and stays (redactBearer).
var bearerToken = regexp.MustCompile(`(?i)(\bbearer(?:[\s_-]*token\b)?(?:\s*[:=]\s*|\s+))([A-Za-z0-9\-._~+/]+=*)`)

// redactEvent returns the event with its secrets outside bodies replaced by markers, and
// whether it changed anything; scan is the event's member scan. An event that is not a JSON
// object is returned unchanged (it is rejected later), and so is one with nothing to redact,
// without being decoded (mayNeedRedaction).
func redactEvent(event []byte, scan *memberScan) ([]byte, bool) {
	sensitive := isSensitiveEvent(scan)
	if !mayNeedRedaction(scan, sensitive) {
		return event, false
	}
	return redactMembers(event, sensitive)
}

// redactMembers is redactEvent past its cheap test: it decodes the event's members and rewrites
// those holding secrets.
func redactMembers(event []byte, sensitive bool) ([]byte, bool) {
	var uri string
	var members map[string]json.RawMessage
	if json.Unmarshal(event, &members) != nil {
		return event, false
	}
	changed := false
	rewrite := func(key string, v any) {
		if raw, err := json.Marshal(v); err == nil {
			members[key] = raw
			changed = true
		}
	}
	if json.Unmarshal(members["requestURI"], &uri) == nil {
		if r, ok := redactURI(uri); ok {
			rewrite("requestURI", r)
		}
	}
	var annotations map[string]string
	if json.Unmarshal(members["annotations"], &annotations) == nil && annotations != nil {
		changedAnnotations := false
		for k, v := range annotations {
			r := redactBearer(v)
			if sensitive && strings.HasPrefix(k, webhookPatchAnnotation) {
				r = redactPatch(v)
			}
			if r != v {
				annotations[k] = r
				changedAnnotations = true
			}
		}
		if changedAnnotations {
			rewrite("annotations", annotations)
		}
	}
	var status map[string]json.RawMessage
	var message string
	if json.Unmarshal(members["responseStatus"], &status) == nil && json.Unmarshal(status["message"], &message) == nil {
		r := redactBearer(message)
		if sensitive && message != "" {
			r = redacted(message)
		}
		if r != message {
			status["message"], _ = json.Marshal(r)
			rewrite("responseStatus", status)
		}
	}
	if !changed {
		return event, false
	}
	out, err := json.Marshal(members)
	if err != nil {
		return event, false
	}
	return out, true
}

// mayNeedRedaction is the cheap test of redactEvent: it is false only for an event the rest of
// redactEvent would leave unchanged. A request URI with a token parameter, the word bearer in
// the annotations or the response status, and in events of sensitive resources a mutating
// webhook's patch annotation or a status message are what it rewrites. The word is looked for
// in the raw JSON of those two members, so an escape (\u0065 for an e) there sends the event to
// the full test, which reads them decoded.
func mayNeedRedaction(scan *memberScan, sensitive bool) bool {
	if hasTokenParam(scan.requestURI()) {
		return true
	}
	annotations, hasAnnotations := scan.raw(memberAnnotations)
	status, hasStatus := scan.raw(memberResponseStatus)
	for _, raw := range [][]byte{annotations, status} {
		if containsBearer(raw) || bytes.Contains(raw, unicodeEscape) {
			return true
		}
	}
	if !sensitive {
		return false
	}
	if hasStatus {
		if message, _ := topLevelString(status, "message"); message != "" {
			return true
		}
	}
	if !hasAnnotations {
		return false
	}
	var decoded map[string]json.RawMessage
	if json.Unmarshal(annotations, &decoded) != nil {
		return false // redactEvent reads them the same way: not an object, nothing to redact
	}
	for k := range decoded {
		if strings.HasPrefix(k, webhookPatchAnnotation) {
			return true
		}
	}
	return false
}

// isSensitiveEvent says whether the event's bodies are dropped (load.sql reads the answer from
// the stream's sensitive column): an event about a sensitive resource (Secrets, token reviews and
// requests) as its objectRef names it, in any case (the apiserver refuses "Secrets", but logs the
// body it was sent), or one with a body that is itself a Secret (isSecretBody), whatever the
// objectRef says. The answer is kept in the scan: the redactor and the batch both ask.
func isSensitiveEvent(scan *memberScan) bool {
	if !scan.sensitiveSet {
		scan.sensitive, scan.sensitiveSet = sensitiveEvent(scan), true
	}
	return scan.sensitive
}

func sensitiveEvent(scan *memberScan) bool {
	if ref, ok := scan.raw(memberObjectRef); ok {
		resource, _ := topLevelString(ref, "resource")
		switch strings.ToLower(resource) {
		case "secrets", "tokenreviews", "tokenrequests":
			return true
		case "serviceaccounts":
			if sub, _ := topLevelString(ref, "subresource"); strings.EqualFold(sub, "token") {
				return true
			}
		}
	}
	for _, m := range [...]member{memberRequestObject, memberResponseObject} {
		if body, ok := scan.raw(m); ok && isSecretBody(body) {
			return true
		}
	}
	return false
}

// isSecretBody says whether a request or response body is a Secret: its kind is Secret or
// SecretList (in any case), or it is a list (kind List or another ...List) with an item of kind
// Secret. The kind is a body's first member as the apiserver writes it, so most bodies are told
// by their first bytes. The items of a list are looked at only when the list holds the string
// "Secret" or a JSON escape (which could spell it): a search at memory speed, where walking the
// items of every list took as long as validating them. An item's kind is matched as Kubernetes
// writes it: a case-insensitive search would find the "secret" volumes of most pod lists.
func isSecretBody(body []byte) bool {
	kind, ok := topLevelString(body, "kind")
	switch {
	case !ok:
		return false
	case strings.EqualFold(kind, "Secret"), strings.EqualFold(kind, "SecretList"):
		return true
	case len(kind) < len("List") || !strings.EqualFold(kind[len(kind)-len("List"):], "List"):
		return false
	case !bytes.Contains(body, quotedSecret) && !bytes.Contains(body, unicodeEscape):
		return false
	}
	items, ok := topLevelRaw(body, "items")
	if !ok || len(items) == 0 || items[0] != '[' {
		return false
	}
	for i := skipSpace(items, 1); i < len(items) && items[i] != ']'; {
		end, ok := skipValue(items, i)
		if !ok {
			return false
		}
		if item := items[i:end]; item[0] == '{' {
			if kind, _ := topLevelString(item, "kind"); kind == "Secret" {
				return true
			}
		}
		if i = skipSpace(items, end); i < len(items) && items[i] == ',' {
			i = skipSpace(items, i+1)
		}
	}
	return false
}

var quotedSecret = []byte(`"Secret"`)

// containsBearer is a quick look for the word bearer in any case, as bearerToken matches it: an
// HTTP authentication scheme is case-insensitive (RFC 9110, section 11.1), so a client may
// send "BeArEr". Each b or B is found at memory speed and compared with the word.
func containsBearer(b []byte) bool {
	for _, first := range [...]byte{'b', 'B'} {
		for i := 0; i < len(b); i++ {
			j := bytes.IndexByte(b[i:], first)
			if j < 0 {
				break
			}
			i += j
			if len(b)-i >= len(bearerWord) && bytes.EqualFold(b[i:i+len(bearerWord)], bearerWord) {
				return true
			}
		}
	}
	return false
}

var bearerWord = []byte("bearer")

var unicodeEscape = []byte(`\u`)

// redactURI replaces the values of token parameters in the query of a request URI.
func redactURI(uri string) (string, bool) {
	path, query, found := strings.Cut(uri, "?")
	if !found {
		return uri, false
	}
	pairs := strings.Split(query, "&")
	changed := false
	for i, pair := range pairs {
		if isUnredactedToken(pair) {
			rawKey, value, _ := strings.Cut(pair, "=")
			pairs[i] = rawKey + "=" + redacted(value)
			changed = true
		}
	}
	return path + "?" + strings.Join(pairs, "&"), changed
}

// hasTokenParam reports whether redactURI would change the URI, without building the new one.
func hasTokenParam(uri string) bool {
	_, query, found := strings.Cut(uri, "?")
	for found {
		var pair string
		pair, query, found = strings.Cut(query, "&")
		if isUnredactedToken(pair) {
			return true
		}
	}
	return false
}

// isUnredactedToken reports whether a query pair (key=value) is a token parameter whose value
// is not a redaction marker yet.
func isUnredactedToken(pair string) bool {
	rawKey, value, hasValue := strings.Cut(pair, "=")
	if !hasValue || isRedacted(value) {
		return false
	}
	key, ok := queryValue(rawKey)
	return ok && isTokenParam(key)
}

func isTokenParam(key string) bool {
	for _, p := range tokenQueryParams {
		if strings.EqualFold(key, p) {
			return true
		}
	}
	return false
}

// redactBearer replaces the credential after each "Bearer" (bearerToken), but not the word
// token that ends "invalid bearer token" or "bearer token, token lookup failed".
func redactBearer(s string) string {
	if !containsBearer([]byte(s)) {
		return s
	}
	return bearerToken.ReplaceAllStringFunc(s, func(m string) string {
		sub := bearerToken.FindStringSubmatch(m)
		if strings.EqualFold(sub[2], "token") {
			return m
		}
		return sub[1] + redacted(sub[2])
	})
}

// redactPatch replaces the patch of a mutating webhook's annotation ({"configuration":...,
// "webhook":..., "patch":..., "patchType":...}), keeping which webhook made it; a value of
// another shape is replaced whole.
func redactPatch(annotation string) string {
	var v map[string]json.RawMessage
	if json.Unmarshal([]byte(annotation), &v) != nil || v["patch"] == nil {
		return redacted(annotation)
	}
	var patch string
	if json.Unmarshal(v["patch"], &patch) == nil && isRedacted(patch) {
		return annotation
	}
	v["patch"], _ = json.Marshal(redacted(string(v["patch"])))
	out, err := json.Marshal(v)
	if err != nil {
		return redacted(annotation)
	}
	return string(out)
}
