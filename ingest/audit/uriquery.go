package audit

import (
	"net/url"
	"strconv"
	"strings"
)

// requestQuery holds the query parameters of a request URI that the rules use. Pointers and
// the has* flags distinguish an absent parameter (NULL in the table) from an empty one.
type requestQuery struct {
	watch                *bool
	resourceVersion      *string
	resourceVersionNum   *int64
	resourceVersionMatch *string
	timeoutSeconds       *int32
	labelSelector        *string
	fieldSelector        *string
	allowWatchBookmarks  *bool
	sendInitialEvents    *bool
	limit                *int64
	hasContinue          bool
}

// parseRequestQuery parses the query of a request URI the way the apiserver does
// (url.ParseQuery semantics: '+' is a space, the first occurrence of a parameter wins).
// Malformed escapes leave that parameter absent rather than failing the event.
func parseRequestQuery(uri string) requestQuery {
	var q requestQuery
	i := strings.IndexByte(uri, '?')
	if i < 0 {
		return q
	}
	rest := uri[i+1:]
	for rest != "" {
		var pair string
		pair, rest, _ = strings.Cut(rest, "&")
		key, raw, _ := strings.Cut(pair, "=")
		switch key {
		case "watch":
			if q.watch == nil {
				q.watch = parseBoolParam(raw)
			}
		case "resourceVersion":
			if q.resourceVersion == nil {
				if v, ok := queryValue(raw); ok {
					q.resourceVersion = &v
					if n, err := strconv.ParseInt(v, 10, 64); err == nil {
						q.resourceVersionNum = &n
					}
				}
			}
		case "resourceVersionMatch":
			if q.resourceVersionMatch == nil {
				q.resourceVersionMatch = stringParam(raw)
			}
		case "timeoutSeconds":
			if q.timeoutSeconds == nil {
				if n, err := strconv.ParseInt(raw, 10, 32); err == nil {
					v := int32(n)
					q.timeoutSeconds = &v
				}
			}
		case "labelSelector":
			if q.labelSelector == nil {
				q.labelSelector = stringParam(raw)
			}
		case "fieldSelector":
			if q.fieldSelector == nil {
				q.fieldSelector = stringParam(raw)
			}
		case "allowWatchBookmarks":
			if q.allowWatchBookmarks == nil {
				q.allowWatchBookmarks = parseBoolParam(raw)
			}
		case "sendInitialEvents":
			if q.sendInitialEvents == nil {
				q.sendInitialEvents = parseBoolParam(raw)
			}
		case "limit":
			if q.limit == nil {
				if n, err := strconv.ParseInt(raw, 10, 64); err == nil {
					q.limit = &n
				}
			}
		case "continue":
			q.hasContinue = q.hasContinue || raw != ""
		}
	}
	return q
}

func queryValue(raw string) (string, bool) {
	if strings.IndexByte(raw, '%') < 0 && strings.IndexByte(raw, '+') < 0 {
		return raw, true
	}
	v, err := url.QueryUnescape(raw)
	return v, err == nil
}

func stringParam(raw string) *string {
	v, ok := queryValue(raw)
	if !ok {
		return nil
	}
	return &v
}

// parseBoolParam follows strconv.ParseBool, as the apiserver's query decoding does.
func parseBoolParam(raw string) *bool {
	b, err := strconv.ParseBool(raw)
	if err != nil {
		return nil
	}
	return &b
}
