package cli

import (
	"bytes"
	"context"
	"testing"

	"github.com/kubesift/kubesift/internal/testutil"
	"github.com/kubesift/kubesift/rules"
)

// TestCLIDocIsCurrent: docs/cli.md is what the verbs' flag sets say (UPDATE_GOLDENS=1 rewrites it).
func TestCLIDocIsCurrent(t *testing.T) {
	var b bytes.Buffer
	if err := writeCLIDoc(context.Background(), &b); err != nil {
		t.Fatal(err)
	}
	testutil.Golden(t, "../docs/cli.md", b.Bytes())
}

// TestRulesDocIsCurrent: docs/rules.md is what rules/*.yaml say (UPDATE_GOLDENS=1 rewrites it).
func TestRulesDocIsCurrent(t *testing.T) {
	rs, err := rules.Builtin()
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	if err := writeRulesDoc(&b, rs); err != nil {
		t.Fatal(err)
	}
	testutil.Golden(t, "../docs/rules.md", b.Bytes())
}
