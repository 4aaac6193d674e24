package cli

import (
	"path/filepath"
	"strings"
	"testing"
)

// TestKeepSecrets: secrets outside the bodies are redacted by default; --keep-secrets loads
// them as they are and warns.
func TestKeepSecrets(t *testing.T) {
	const token = "eyJhbGciOiJSUzI1NiJ9.c2VjcmV0LXRva2Vu.c2ln"
	query := "SELECT count(*) AS n FROM audit_events WHERE contains(request_uri, '" + token + "')"
	for _, tc := range []struct {
		flags   []string
		warning bool
		found   string
	}{{nil, false, "0"}, {[]string{"--keep-secrets"}, true, "1"}} {
		db := filepath.Join(t.TempDir(), "k.duckdb")
		r := runCLI(t, append(append([]string{"ingest", "--db", db}, tc.flags...), "../ingest/testdata/secrets-outside-bodies.good.log")...)
		if r.code != 0 || strings.Contains(r.stderr, "warning: --keep-secrets") != tc.warning {
			t.Fatalf("ingest %v: exit %d, stderr %q; want 0 and a warning: %v", tc.flags, r.code, r.stderr, tc.warning)
		}
		q := runCLI(t, "query", "--db", db, "-o", "csv", query)
		if got := strings.TrimSpace(strings.TrimPrefix(q.stdout, "n\n")); got != tc.found {
			t.Errorf("ingest %v: %s token rows in request_uri, want %s (stderr %q)", tc.flags, got, tc.found, q.stderr)
		}
	}
}
