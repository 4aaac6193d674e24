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
