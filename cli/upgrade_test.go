package cli

import (
	"context"
	"strings"
	"testing"

	"github.com/kubesift/kubesift/ingest"
	"github.com/kubesift/kubesift/store"
)

// TestAnalyzeUpgradesAnOlderDatabase: analyze opens the database read-only; one an older
// kubesift wrote, without a column the rules read, is upgraded first and the user is told, and
// every rule runs.
func TestAnalyzeUpgradesAnOlderDatabase(t *testing.T) {
	path := loadedDB(t)
	db, err := store.Open(context.Background(), path, ingest.Schema(), store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	_, err = db.Exec("ALTER TABLE audit_events DROP COLUMN apiserver")
	db.Close()
	if err != nil {
		t.Fatal(err)
	}
	r := runCLI(t, "analyze", "--db", path, "-o", "json")
	if r.code != ExitOK {
		t.Fatalf("analyze of an older database: %+v", r)
	}
	if want := path + ": upgraded from an older kubesift's (added audit_events.apiserver)"; !strings.Contains(r.stderr, want) {
		t.Errorf("stderr %q, want it to say %q", r.stderr, want)
	}
}
