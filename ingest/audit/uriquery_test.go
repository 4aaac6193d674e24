package audit

import (
	"reflect"
	"testing"
)

func ptr[T any](v T) *T { return &v }

func TestParseRequestQuery(t *testing.T) {
	tests := []struct {
		name string
		uri  string
		want requestQuery
	}{
		{"no query", "/api/v1/namespaces/lab/endpoints/web", requestQuery{}},
		{"reflector watch", "/api/v1/endpoints?allowWatchBookmarks=true&resourceVersion=4711&timeout=8m2s&timeoutSeconds=482&watch=true",
			requestQuery{watch: ptr(true), resourceVersion: ptr("4711"), resourceVersionNum: ptr(int64(4711)), timeoutSeconds: ptr(int32(482)), allowWatchBookmarks: ptr(true)}},
		{"list from cache", "/api/v1/pods?limit=500&resourceVersion=0",
			requestQuery{resourceVersion: ptr("0"), resourceVersionNum: ptr(int64(0)), limit: ptr(int64(500))}},
		{"empty resourceVersion is present but not numeric", "/api/v1/pods?resourceVersion=",
			requestQuery{resourceVersion: ptr("")}},
		{"selectors are URL-decoded, + is a space", "/api/v1/namespaces/kube-system/configmaps?fieldSelector=metadata.name%3Dkube-apiserver-legacy&labelSelector=app+in+%28a%2Cb%29",
			requestQuery{fieldSelector: ptr("metadata.name=kube-apiserver-legacy"), labelSelector: ptr("app in (a,b)")}},
		{"exact match and streaming list", "/api/v1/pods?resourceVersion=12&resourceVersionMatch=NotOlderThan&sendInitialEvents=true&watch=1",
			requestQuery{watch: ptr(true), resourceVersion: ptr("12"), resourceVersionNum: ptr(int64(12)), resourceVersionMatch: ptr("NotOlderThan"), sendInitialEvents: ptr(true)}},
		{"continue token", "/api/v1/pods?continue=eyJ2IjoibWV0YS5rOHMuaW8vdjEifQ&limit=500",
			requestQuery{limit: ptr(int64(500)), hasContinue: true}},
		{"first occurrence wins", "/api/v1/pods?resourceVersion=5&resourceVersion=9",
			requestQuery{resourceVersion: ptr("5"), resourceVersionNum: ptr(int64(5))}},
		{"malformed values stay absent", "/api/v1/pods?watch=maybe&timeoutSeconds=x&limit=-&labelSelector=%zz",
			requestQuery{}},
		{"watch=false", "/api/v1/pods?watch=false", requestQuery{watch: ptr(false)}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := parseRequestQuery(tt.uri); !reflect.DeepEqual(got, tt.want) {
				t.Errorf("parseRequestQuery(%q)\n got %+v\nwant %+v", tt.uri, got, tt.want)
			}
		})
	}
}
