package audit

import (
	"net/url"
	"reflect"
	"slices"
	"strconv"
	"strings"
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
			requestQuery{watch: ptr(true), resourceVersion: ptr("4711"), timeoutSeconds: ptr(int32(482)), allowWatchBookmarks: ptr(true)}},
		{"list from cache", "/api/v1/pods?limit=500&resourceVersion=0",
			requestQuery{resourceVersion: ptr("0"), limit: ptr(int64(500))}},
		{"empty resourceVersion is present but not numeric", "/api/v1/pods?resourceVersion=",
			requestQuery{resourceVersion: ptr("")}},
		{"selectors are URL-decoded, + is a space", "/api/v1/namespaces/kube-system/configmaps?fieldSelector=metadata.name%3Dkube-apiserver-legacy&labelSelector=app+in+%28a%2Cb%29",
			requestQuery{fieldSelector: ptr("metadata.name=kube-apiserver-legacy"), labelSelector: ptr("app in (a,b)")}},
		{"exact match and streaming list", "/api/v1/pods?resourceVersion=12&resourceVersionMatch=NotOlderThan&sendInitialEvents=true&watch=1",
			requestQuery{watch: ptr(true), resourceVersion: ptr("12"), resourceVersionMatch: ptr("NotOlderThan"), sendInitialEvents: ptr(true)}},
		{"continue token", "/api/v1/pods?continue=eyJ2IjoibWV0YS5rOHMuaW8vdjEifQ&limit=500",
			requestQuery{limit: ptr(int64(500)), hasContinue: true}},
		{"first occurrence wins", "/api/v1/pods?resourceVersion=5&resourceVersion=9",
			requestQuery{resourceVersion: ptr("5")}},
		{"malformed values stay absent", "/api/v1/pods?watch=maybe&timeoutSeconds=x&limit=-&labelSelector=%zz",
			requestQuery{}},
		{"watch=false", "/api/v1/pods?watch=false", requestQuery{watch: ptr(false)}},
		{"keys and numbers are percent-decoded", "/api/v1/pods?resource%56ersion=4%37&limit=%35&watch=%74rue&timeout%53econds=1%30",
			requestQuery{watch: ptr(true), resourceVersion: ptr("47"), timeoutSeconds: ptr(int32(10)), limit: ptr(int64(5))}},
		{"a dropped pair lets a later one win", "/api/v1/pods?resourceVersion=%zz&resourceVersion=8&limit=1;2&limit=3",
			requestQuery{resourceVersion: ptr("8"), limit: ptr(int64(3))}},
		{"the first value is used even when it does not convert", "/api/v1/pods?limit&limit=3&watch=x&watch=true",
			requestQuery{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := parseRequestQuery(tt.uri); !reflect.DeepEqual(got, tt.want) {
				t.Errorf("parseRequestQuery(%q)\n got %+v\nwant %+v", tt.uri, got, tt.want)
			}
		})
	}
}

// FuzzParseRequestQuery checks the query parser against url.ParseQuery, which the apiserver
// decodes request parameters with (the first value of a parameter is the one it uses).
func FuzzParseRequestQuery(f *testing.F) {
	f.Add("/api/v1/pods?resource%56ersion=4%37&limit=%35&watch=true")
	f.Add("/api/v1/pods?labelSelector=app+in+%28a%2Cb%29&resourceVersion=%zz&resourceVersion=8;&fieldSelector=x")
	f.Fuzz(func(t *testing.T, uri string) {
		got := parseRequestQuery(uri)
		_, query, _ := strings.Cut(uri, "?")
		values, _ := url.ParseQuery(query)
		first := func(key string) *string {
			if v, ok := values[key]; ok {
				return &v[0]
			}
			return nil
		}
		for key, value := range map[string]*string{"resourceVersion": got.resourceVersion, "resourceVersionMatch": got.resourceVersionMatch,
			"labelSelector": got.labelSelector, "fieldSelector": got.fieldSelector} {
			if want := first(key); (want == nil) != (value == nil) || want != nil && *want != *value {
				t.Fatalf("%s of %q: got %v, url.ParseQuery has %v", key, uri, value, want)
			}
		}
		var wantLimit *int64
		if v := first("limit"); v != nil {
			if n, err := strconv.ParseInt(*v, 10, 64); err == nil {
				wantLimit = &n
			}
		}
		if !reflect.DeepEqual(got.limit, wantLimit) {
			t.Fatalf("limit of %q: got %v, url.ParseQuery has %v", uri, got.limit, values["limit"])
		}
		if want := slices.ContainsFunc(values["continue"], func(v string) bool { return v != "" }); got.hasContinue != want {
			t.Fatalf("continue of %q: got %v, url.ParseQuery has %q", uri, got.hasContinue, values["continue"])
		}
	})
}
