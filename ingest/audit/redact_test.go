package audit

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/kubesift/kubesift/internal/source"
)

func TestRedactEvent(t *testing.T) {
	tests := []struct {
		name, event string
		changed     bool
		gone, kept  []string
	}{
		{"nothing to redact is not decoded", `{"requestURI":"/api/v1/pods?watch=1" , "annotations":{"a":"b"}}`, false, nil, nil},
		{"query tokens, encoded key", `{"requestURI":"/api/v1/pods?watch=1&access%5Ftoken=abc&TOKEN=def&tokens=keep"}`, true,
			[]string{"abc", "def"}, []string{`?watch=1\u0026access%5Ftoken=[redacted sha256:`, "tokens=keep"}},
		{"bearer in an annotation and a message", `{"annotations":{"x":"auth: bearer ab.cd+/=="},"responseStatus":{"code":401,"message":"BEARER zz9 rejected"}}`, true,
			[]string{"ab.cd", "zz9"}, []string{"auth: bearer [redacted sha256:", "BEARER [redacted sha256:", " rejected", `"code":401`}},
		{"patches of other resources stay", `{"objectRef":{"resource":"pods"},"annotations":{"patch.webhook.admission.k8s.io/round_0_index_0":"{\"patch\":\"cGF0Y2g=\"}"},"responseStatus":{"message":"pods \"x\" is invalid: v"}}`, false,
			nil, nil},
		{"token request message and odd patch", `{"objectRef":{"resource":"serviceaccounts","subresource":"token"},"annotations":{"patch.webhook.admission.k8s.io/round_1_index_2":"not json"},"responseStatus":{"message":"token: sekrit"}}`, true,
			[]string{"sekrit", "not json"}, []string{"round_1_index_2\":\"[redacted sha256:"}},
		{"bearer token and a colon", `{"responseStatus":{"code":401,"message":"invalid bearer token SUPERSECRET15"},"annotations":{"a":"Bearer token: s3cr3t.x","b":"bearer_token=tok3n","c":"BEARER: xyz9"}}`, true,
			[]string{"SUPERSECRET15", "s3cr3t.x", "tok3n", "xyz9"}, []string{"invalid bearer token [redacted sha256:", "Bearer token: [redacted sha256:", "bearer_token=[redacted sha256:", "BEARER: [redacted sha256:"}},
		{"bearer token ends the message", `{"responseStatus":{"code":401,"message":"invalid bearer token"},"annotations":{"a":"invalid bearer token, token lookup failed","b":"Bearer token"}}`, false,
			nil, nil},
		{"a token that starts with token", `{"annotations":{"a":"Bearer tokenab12"}}`, true,
			[]string{"tokenab12"}, []string{"Bearer [redacted sha256:"}},
		{"bearer in mixed case", `{"annotations":{"x":"Authorization: BeArEr ab.cd"},"responseStatus":{"message":"bEARER zz9"}}`, true,
			[]string{"ab.cd", "zz9"}, []string{"BeArEr [redacted sha256:", "bEARER [redacted sha256:"}},
		{"not an object", `["bearer x"]`, false, nil, nil},
		{"message of an event with a Secret body", `{"objectRef":{"resource":"configmaps"},"requestObject":{"kind":"Secret","data":{"k":"czNjcjN0"}},"responseStatus":{"message":"Secret \"x\" is invalid: data[k]: s3cr3t"}}`, true,
			[]string{"s3cr3t"}, []string{`"message":"[redacted sha256:`, `"data":{"k":"czNjcjN0"}`}},
		{"message of Secrets in another case", `{"objectRef":{"resource":"Secrets"},"responseStatus":{"message":"s3cr3t"}}`, true,
			[]string{"s3cr3t"}, []string{`"message":"[redacted sha256:`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out, changed := redactEvent([]byte(tt.event), scanMembers([]byte(tt.event)))
			if changed != tt.changed || !changed && string(out) != tt.event {
				t.Fatalf("redactEvent(%s) = %s, %v; want changed %v", tt.event, out, changed, tt.changed)
			}
			for _, s := range tt.gone {
				if strings.Contains(string(out), s) {
					t.Errorf("%q is still in %s", s, out)
				}
			}
			for _, s := range tt.kept {
				if !strings.Contains(string(out), s) {
					t.Errorf("%q is not in %s", s, out)
				}
			}
		})
	}
}

// FuzzRedactEvent: the redactor never breaks an event: the result is a JSON object with the same
// members, and a second pass finds nothing left to redact; and its cheap test never skips an
// event (as asGoReads hands it on) that the full redaction would change. The seeds are short events, one per
// kind of secret: the fuzzer minimizes every input that finds new coverage, at a cost quadratic
// in its length, and with the kilobyte events of the corpus it made 16 executions in 3 minutes.
func FuzzRedactEvent(f *testing.F) {
	for _, seed := range []string{
		`{"requestURI":"/api/v1/pods?access_token=abc&watch=true","verb":"watch"}`,
		`{"requestURI":"/api/v1/pods?id_token=a&refresh_token=b&token=c"}`,
		`{"annotations":{"authorization":"Bearer eyJhbGc.def-_~+/=="},"verb":"get"}`,
		`{"objectRef":{"resource":"secrets"},"annotations":{"patch.webhook.admission.k8s.io/round_0_index_0":"{\"configuration\":\"c\",\"webhook\":\"w\",\"patch\":[{\"op\":\"add\"}],\"patchType\":\"JSONPatch\"}"}}`,
		`{"objectRef":{"resource":"serviceaccounts","subresource":"token"},"responseStatus":{"message":"value s3cr3t","code":422}}`,
		`{"objectRef":{"resource":"tokenreviews"},"responseStatus":{"message":"BEARER abc"}}`,
		`{"responseStatus":{"message":"bad bearer x.y.z"}}`,
		`{"responseStatus":{"message":"invalid bearer token s3cr3t, bearer token, Bearer token: t0k"}}`,
		`{"annotations":{"a":"bEaReR q"}}`,
		`{"objectRef":{"resource":"tokenreviews"},"requestURI":"/apis/authentication.k8s.io/v1/tokenreviews","annotations":{"a":"b"},"responseStatus":{"code":201}}`,
		`{"objectRef":{"resource":"secrets"},"annotations":{"patch.webhook.admission.k8s.io\u002fround_0_index_0":"x"}}`,
		`{"objectRef":{"resource":"secrets"},"responseStatus":{"message":"\u0073"}}`,
		`{"annotations":{"a":"b\u0065arer abc"},"responseStatus":{"code":200}}`,
		`{"responseStatus":{"message":"\u0042earer x"},"requestObject":{"note":"bearer"}}`,
		`{"requestObject":{"kind":"Secret","data":{"k":"dg=="}},"responseStatus":{"message":"v"}}`,
		`{"objectRef":{"resource":"Secrets"},"responseObject":{"kind":"List","items":[{"kind":"Secret"}]},"annotations":{"patch.webhook.admission.k8s.io/round_0_index_0":"x"}}`,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, event []byte) {
		if read, _, bad := asGoReads(event); !bad {
			scan := scanMembers(read)
			sensitive := isSensitiveEvent(scan)
			if _, changed := redactMembers(read, sensitive); changed && !mayNeedRedaction(scan, sensitive) {
				t.Fatalf("the cheap test skips %q, which redaction changes", read)
			}
		}
		out, changed := redactEvent(event, scanMembers(event))
		if !changed {
			if string(out) != string(event) {
				t.Fatalf("unchanged event differs: %q", out)
			}
			return
		}
		var before, after map[string]json.RawMessage
		if json.Unmarshal(event, &before) != nil || json.Unmarshal(out, &after) != nil || len(before) != len(after) {
			t.Fatalf("redacted %q into %q", event, out)
		}
		if again, changed := redactEvent(out, scanMembers(out)); changed {
			t.Fatalf("second pass changed %q into %q", out, again)
		}
	})
}

// FuzzHasTokenParam: the cheap test answers exactly whether redactURI changes the URI.
func FuzzHasTokenParam(f *testing.F) {
	for _, seed := range []string{
		"/api/v1/pods?access_token=abc&watch=true",
		"/api/v1/pods?watch=true&%74oken=x",
		"/api/v1/pods?id+token=x&Refresh_Token=y",
		"/api?token=" + redacted("x"),
		"/api?token&token=",
		"/api?a=1&&%zz=2&token=%zz",
		"/api/v1/pods",
		"?",
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, uri string) {
		if _, changed := redactURI(uri); hasTokenParam(uri) != changed {
			t.Fatalf("hasTokenParam(%q) = %v, redactURI changes it: %v", uri, !changed, changed)
		}
	})
}

// TestRedactRewrittenLines: a line that asGoReads rewrites (duplicate names: Go keeps the last)
// is redacted like any other line before it goes to a batch of its own.
func TestRedactRewrittenLines(t *testing.T) {
	for _, line := range []string{
		`{"kind":"Event","verb":"get","verb":"create","responseStatus":{"code":401,"message":"Bearer s3cr3t.tok"}}`,
		`{"kind":"Event","requestURI":"/api?a=1","requestURI":"/api/v1/pods?access_token=s3cr3t.tok"}`,
	} {
		c := &source.Chunk{Data: []byte(line + "\n"), FirstLine: 1}
		batches, rejects, _ := chunkToBatches(c, lineOptions{maxLine: 1 << 20, redact: true})
		if len(batches) != 1 || batches[0].rows() != 1 || len(rejects) != 0 {
			t.Fatalf("%s: %d batches, %v rejected; want one row", line, len(batches), rejects)
		}
		b := batches[0]
		if row := string(b.values[b.offsets[0]:b.offsets[1]]); strings.Contains(row, "s3cr3t") || !strings.Contains(row, redactedPrefix) {
			t.Errorf("%s loads as %s", line, row)
		}
	}
}

// TestIsSensitiveEvent: an event is sensitive by its objectRef, in any case, or by the kind of
// one of its bodies.
func TestIsSensitiveEvent(t *testing.T) {
	for event, want := range map[string]bool{
		`{"objectRef":{"resource":"secrets"}}`:                                                  true,
		`{"objectRef":{"resource":"Secrets"}}`:                                                  true,
		`{"objectRef":{"resource":"TOKENREVIEWS"}}`:                                             true,
		`{"objectRef":{"resource":"serviceAccounts","subresource":"Token"}}`:                    true,
		`{"objectRef":{"resource":"serviceaccounts"}}`:                                          false,
		`{"objectRef":{"resource":"configmaps"},"requestObject":{"kind":"ConfigMap"}}`:          false,
		`{"requestObject":{"kind":"Secret","data":{"k":"dg=="}}}`:                               true,
		`{"objectRef":{"resource":"configmaps"},"responseObject":{"kind":"secret"}}`:            true,
		`{"responseObject":{"kind":"SecretList","items":[{"data":{}}]}}`:                        true,
		`{"responseObject":{"kind":"List","items":[{"kind":"Pod"}, {"kind":"Secret"}]}}`:        true,
		`{"responseObject":{"kind":"PodList","items":[{"kind":"Pod"},{"kind":"\u0053ecret"}]}}`: true,
		`{"responseObject":{"items":[{"kind":"Secret"}],"kind":"List"}}`:                        true,
		`{"responseObject":{"kind":"List","items":[{"kind":"Pod","spec":{"kind":"Secret"}}]}}`:  false,
		`{"responseObject":{"kind":"List","items":{"kind":"Secret"}}}`:                          false,
		`{"responseObject":{"kind":"ConfigMapList","items":[{"data":{"secret":"Secret"}}]}}`:    false,
		`{"requestObject":{"kind":"Pod","spec":{"volumes":[{"secret":{"secretName":"s"}}]}}}`:   false,
		`{"requestObject":[{"op":"add","path":"/data/k","value":"dg=="}]}`:                      false,
		`{"requestObject":{"metadata":{"ownerReferences":[{"kind":"Secret"}]}}}`:                false,
	} {
		if got := isSensitiveEvent(scanMembers([]byte(event))); got != want {
			t.Errorf("isSensitiveEvent(%s) = %v, want %v", event, got, want)
		}
	}
}

// FuzzIsSecretBody: the cheap test of a body's kinds answers as a decode of the whole body does.
func FuzzIsSecretBody(f *testing.F) {
	for _, seed := range []string{
		`{"kind":"Secret","data":{"k":"dg=="}}`,
		`{"kind":"SecretList","items":[]}`,
		`{"kind":"List","items":[{"kind":"ConfigMap"},{"kind":"Secret"}]}`,
		`{"kind":"List","items":[{"kind":"\u0053ecret"}]}`,
		`{"kind":"PodList","items":[{"spec":{"volumes":[{"secret":{"secretName":"s"}}]}}]}`,
		`{"items":[{"kind":"Secret"}],"kind":"LIST"}`,
		`{"kind":"List","items":[{"kind":"secret"}]}`,
		`{"kind":"Pod","metadata":{"ownerReferences":[{"kind":"Secret"}]}}`,
		`[{"op":"add"}]`,
		`{"kind":"List","items":[1,"Secret",{"kind":"Secret"}]}`,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		read, _, bad := asGoReads(body)
		if bad {
			return
		}
		var members map[string]json.RawMessage
		var kind string
		if json.Unmarshal(read, &members) != nil || json.Unmarshal(members["kind"], &kind) != nil {
			if isSecretBody(read) {
				t.Fatalf("isSecretBody(%q) without a kind", read)
			}
			return
		}
		kind = strings.ToLower(kind)
		want := kind == "secret" || kind == "secretlist"
		var items []json.RawMessage
		if !want && strings.HasSuffix(kind, "list") && json.Unmarshal(members["items"], &items) == nil {
			for _, raw := range items {
				var item map[string]json.RawMessage
				var itemKind string
				if json.Unmarshal(raw, &item) == nil && json.Unmarshal(item["kind"], &itemKind) == nil && itemKind == "Secret" {
					want = true
				}
			}
		}
		if got := isSecretBody(read); got != want {
			t.Fatalf("isSecretBody(%q) = %v, a decode says %v", read, got, want)
		}
	})
}
