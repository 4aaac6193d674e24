package audit

import (
	"net/url"
	"slices"
	"strconv"
	"strings"
)

// requestQuery holds the query parameters of a request URI that the rules use. Pointers and
// the has* flags distinguish an absent parameter (NULL in the table) from an empty one.
type requestQuery struct {
	watch                *bool
	resourceVersion      *string
	resourceVersionMatch *string
	timeoutSeconds       *int32
	labelSelector        *string
	fieldSelector        *string
	allowWatchBookmarks  *bool
	sendInitialEvents    *bool
	limit                *int64
	hasContinue          bool
}

// queryParams are the parameters parseRequestQuery reads, in the order of firstValues.
var queryParams = []string{"watch", "resourceVersion", "resourceVersionMatch", "timeoutSeconds", "labelSelector",
	"fieldSelector", "allowWatchBookmarks", "sendInitialEvents", "limit"}

// parseRequestQuery parses the query of a request URI the way the apiserver does
// (url.ParseQuery semantics: keys and values are percent-decoded, '+' is a space, a pair with a
// semicolon or a malformed escape is dropped; the first value of a parameter is the one used,
// and a value that does not convert leaves the parameter absent rather than failing the event).
func parseRequestQuery(uri string) requestQuery {
	var q requestQuery
	i := strings.IndexByte(uri, '?')
	if i < 0 {
		return q
	}
	var first [9]*string // the first value of each of queryParams
	rest := uri[i+1:]
	for rest != "" {
		var pair string
		pair, rest, _ = strings.Cut(rest, "&")
		if strings.IndexByte(pair, ';') >= 0 {
			continue
		}
		rawKey, rawValue, _ := strings.Cut(pair, "=")
		key, ok := queryValue(rawKey)
		if !ok {
			continue
		}
		value, ok := queryValue(rawValue)
		if !ok {
			continue
		}
		if key == "continue" {
			q.hasContinue = q.hasContinue || value != ""
		} else if p := slices.Index(queryParams, key); p >= 0 && first[p] == nil {
			first[p] = &value
		}
	}
	q.watch = parseBoolParam(first[0])
	q.resourceVersion = first[1]
	q.resourceVersionMatch = first[2]
	if first[3] != nil {
		if n, err := strconv.ParseInt(*first[3], 10, 32); err == nil {
			v := int32(n)
			q.timeoutSeconds = &v
		}
	}
	q.labelSelector = first[4]
	q.fieldSelector = first[5]
	q.allowWatchBookmarks = parseBoolParam(first[6])
	q.sendInitialEvents = parseBoolParam(first[7])
	if first[8] != nil {
		if n, err := strconv.ParseInt(*first[8], 10, 64); err == nil {
			q.limit = &n
		}
	}
	return q
}

// queryValue percent-decodes a query key or value ('+' is a space), as url.ParseQuery does.
func queryValue(raw string) (string, bool) {
	if strings.IndexByte(raw, '%') < 0 && strings.IndexByte(raw, '+') < 0 {
		return raw, true
	}
	v, err := url.QueryUnescape(raw)
	return v, err == nil
}

// parseBoolParam follows strconv.ParseBool, as the apiserver's query decoding does.
func parseBoolParam(raw *string) *bool {
	if raw == nil {
		return nil
	}
	b, err := strconv.ParseBool(*raw)
	if err != nil {
		return nil
	}
	return &b
}
