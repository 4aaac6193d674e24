package ingest

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// secretsOutsideBodies are the secrets in testdata/secrets-outside-bodies.good.log, one event
// per place a secret hides outside the bodies, by what holds them.
var secretsOutsideBodies = map[string]string{
	"webhook patch of a Secret":          `aHVudGVyMi1zM2NyM3Q=`,
	"access_token in the request URI":    `eyJhbGciOiJSUzI1NiJ9.c2VjcmV0LXRva2Vu.c2ln`,
	"bearer token in an annotation":      `eyJhbGciOiJSUzI1NiJ9.YmVhcmVyLXRva2Vu.c2ln`,
	"bearer token behind an escaped e":   `eyJhbGciOiJSUzI1NiJ9.ZXNjYXBlZC1iZWFyZXI.c2ln`,
	"Secret value in the status message": `LS0tLS1CRUdJTiBQUklWQVRFIEtFWS0tLS0t`,
}

// TestSecretsOutsideBodiesAreRedacted: the secrets an audit event holds outside its bodies are
// replaced by a marker with their hash, in every envelope (lines, EventList lines, a
// pretty-printed EventList); --keep-secrets keeps them.
func TestSecretsOutsideBodiesAreRedacted(t *testing.T) {
	logPath := "testdata/secrets-outside-bodies.good.log"
	events := bytes.Split(bytes.TrimSpace(readFile(t, logPath)), []byte("\n"))
	dir := t.TempDir()
	list := []byte(`{"kind":"EventList","apiVersion":"audit.k8s.io/v1","metadata":{},"items":[` + string(bytes.Join(events, []byte(","))) + "]}")
	listPath, prettyPath := filepath.Join(dir, "eventlist.ndjson"), filepath.Join(dir, "eventlist.json")
	if err := os.WriteFile(listPath, append(list, '\n'), 0o644); err != nil {
		t.Fatal(err)
	}
	var pretty bytes.Buffer
	if err := json.Indent(&pretty, list, "", "  "); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(prettyPath, pretty.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	const everything = `SELECT to_json(a)::VARCHAR FROM audit_events a ORDER BY audit_id`
	for _, path := range []string{logPath, listPath, prettyPath} {
		db := openTestDB(t)
		res := ingestFiles(t, db, Options{}, path)
		if res[0].Rows != int64(len(events)) || res[0].Rejected != 0 {
			t.Fatalf("%s: %+v, want %d events loaded", path, res[0], len(events))
		}
		rows := strings.Join(queryStrings(t, db, everything), "\n")
		for what, secret := range secretsOutsideBodies {
			if strings.Contains(rows, secret) {
				t.Errorf("%s: the %s is in audit_events", path, what)
			}
		}
		sum := sha256.Sum256([]byte(secretsOutsideBodies["access_token in the request URI"]))
		wantURI := "/api/v1/namespaces/lab/pods?access_token=[redacted sha256:" + hex.EncodeToString(sum[:8]) + "]&watch=true&resourceVersion=811"
		if got := queryStrings(t, db, `SELECT request_uri || ' ' || watch_rv FROM audit_events WHERE verb = 'watch'`); len(got) != 1 || got[0] != wantURI+" 811" {
			t.Errorf("%s: watch request %q, want %q", path, got, wantURI+" 811")
		}
		patch := queryStrings(t, db, `SELECT annotations['patch.webhook.admission.k8s.io/round_0_index_0'] FROM audit_events WHERE verb = 'create' AND code = 201`)
		if len(patch) != 1 || !strings.Contains(patch[0], `"webhook":"inject.secrets.example.com"`) || !strings.Contains(patch[0], `"patch":"[redacted sha256:`) {
			t.Errorf("%s: webhook patch annotation %q, want the webhook named and the patch redacted", path, patch)
		}
		if got := queryStrings(t, db, `SELECT annotations['proxy.example.com/upstream-authorization'] FROM audit_events WHERE verb = 'get'`); len(got) != 1 || !strings.HasPrefix(got[0], "Bearer [redacted sha256:") {
			t.Errorf("%s: bearer annotation %q, want Bearer and a marker", path, got)
		}
	}
	db := openTestDB(t)
	ingestFiles(t, db, Options{KeepSecrets: true}, logPath)
	rows := strings.Join(queryStrings(t, db, everything), "\n")
	for what, secret := range secretsOutsideBodies {
		if !strings.Contains(rows, secret) {
			t.Errorf("with KeepSecrets the %s is not in audit_events", what)
		}
	}
}

// TestSecretBodiesToldByKind: a body that is itself a Secret (or a SecretList, or a list with a
// Secret among its items) is dropped whatever the objectRef says, and so is the body of an event
// whose objectRef names a sensitive resource in another case; bodies that only mention secrets
// stay. --keep-secrets keeps them all.
func TestSecretBodiesToldByKind(t *testing.T) {
	ev := func(id, objectRef, bodies string) string {
		if objectRef != "" {
			objectRef = `"objectRef":` + objectRef + `,`
		}
		return `{"kind":"Event","apiVersion":"audit.k8s.io/v1","level":"RequestResponse","auditID":"` + id + `","stage":"ResponseComplete","requestURI":"/api/v1/namespaces/lab/x","verb":"create","user":{"username":"admin","groups":["system:authenticated"]},"sourceIPs":["10.0.0.7"],` +
			objectRef + `"responseStatus":{"metadata":{},"code":201},` + bodies + `,"requestReceivedTimestamp":"2026-11-21T05:31:08Z","stageTimestamp":"2026-11-21T05:31:08Z"}`
	}
	secret := `{"kind":"Secret","apiVersion":"v1","metadata":{"name":"s","namespace":"lab"},"data":{"k":"U1VQRVJTRUNSRVQ="},"stringData":{"x":"SUPERSECRET1"}}`
	configMaps := `{"kind":"ConfigMapList","apiVersion":"v1","metadata":{},"items":[{"metadata":{"name":"c"},"data":{"secretName":"Secret"}}]}`
	dropped := map[string]string{
		"own kind, no objectRef": ev("kind", "", `"requestObject":`+secret),
		"own kind, other objectRef": ev("kind-cm", `{"resource":"configmaps","namespace":"lab","name":"s","apiVersion":"v1"}`,
			`"requestObject":{"kind":"secret","apiVersion":"v1","data":{"k":"SUPERSECRET2"}}`),
		"resource Secrets": ev("resource-case", `{"resource":"Secrets","namespace":"lab","name":"s","apiVersion":"v1"}`,
			`"requestObject":{"apiVersion":"v1","data":{"k":"SUPERSECRET3"}}`),
		"subresource Token": ev("subresource-case", `{"resource":"ServiceAccounts","subresource":"Token","namespace":"lab","name":"s","apiVersion":"v1"}`,
			`"responseObject":{"status":{"token":"SUPERSECRET4"}}`),
		"SecretList": ev("secretlist", `{"resource":"pods","apiVersion":"v1"}`,
			`"responseObject":{"kind":"SecretList","apiVersion":"v1","metadata":{},"items":[{"metadata":{"name":"t"},"data":{"p":"SUPERSECRET5"}}]}`),
		"List with a Secret": ev("list", `{"resource":"configmaps","apiVersion":"v1"}`,
			`"responseObject":{"kind":"List","apiVersion":"v1","metadata":{},"items":[{"kind":"ConfigMap","apiVersion":"v1","data":{"a":"b"}} , `+secret+`]}`),
		"List with an escaped Secret": ev("list-escaped", "",
			`"responseObject":{"kind":"List","apiVersion":"v1","metadata":{},"items":[{"apiVersion":"v1","kind":"\u0053ecret","data":{"p":"SUPERSECRET6"}}]}`),
	}
	kept := map[string]string{
		"ConfigMap":                   ev("configmap", `{"resource":"configmaps","apiVersion":"v1"}`, `"requestObject":{"kind":"ConfigMap","apiVersion":"v1","data":{"secret":"Secret"}}`),
		"list mentioning secrets":     ev("configmaps", `{"resource":"configmaps","apiVersion":"v1"}`, `"responseObject":`+configMaps),
		"pod mounting a Secret":       ev("pod", "", `"requestObject":{"kind":"Pod","apiVersion":"v1","spec":{"volumes":[{"name":"v","secret":{"secretName":"s"}}]},"status":{"kind":"Secret"}}`),
		"Secret owner of a ConfigMap": ev("owned", "", `"requestObject":{"kind":"ConfigMap","apiVersion":"v1","metadata":{"ownerReferences":[{"kind":"Secret","name":"s"}]}}`),
	}
	var lines []string
	for _, events := range []map[string]string{dropped, kept} {
		for _, e := range events {
			lines = append(lines, e)
		}
	}
	path := filepath.Join(t.TempDir(), "audit.log")
	if err := os.WriteFile(path, []byte(strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	db := openTestDB(t)
	if res := ingestFiles(t, db, Options{}, path); res[0].Rows != int64(len(lines)) {
		t.Fatalf("%+v, want %d events loaded", res[0], len(lines))
	}
	const bodies = `SELECT coalesce(request_object::VARCHAR, '') || coalesce(response_object::VARCHAR, '') FROM audit_events WHERE audit_id = ?`
	for what, e := range dropped {
		id := e[strings.Index(e, `"auditID":"`)+11:]
		id = id[:strings.IndexByte(id, '"')]
		if n := queryInt(t, db, `SELECT count(*) FROM audit_events WHERE audit_id = ? AND redacted AND request_object IS NULL AND response_object IS NULL`, id); n != 1 {
			t.Errorf("%s: the body was loaded: %q", what, queryStrings(t, db, bodies, id))
		}
	}
	for what, e := range kept {
		id := e[strings.Index(e, `"auditID":"`)+11:]
		id = id[:strings.IndexByte(id, '"')]
		if n := queryInt(t, db, `SELECT count(*) FROM audit_events WHERE audit_id = ? AND NOT redacted AND has_body`, id); n != 1 {
			t.Errorf("%s: the body was dropped", what)
		}
	}
	if rows := strings.Join(queryStrings(t, db, `SELECT to_json(a)::VARCHAR FROM audit_events a`), "\n"); strings.Contains(rows, "SUPERSECRET") || strings.Contains(rows, "U1VQRVJTRUNSRVQ=") {
		t.Error("a secret is in audit_events")
	}
	db = openTestDB(t)
	ingestFiles(t, db, Options{KeepSecrets: true}, path)
	if n := queryInt(t, db, `SELECT count(*) FROM audit_events WHERE has_body AND NOT redacted`); n != int64(len(lines)) {
		t.Errorf("with KeepSecrets %d bodies loaded, want %d", n, len(lines))
	}
}
