package cli

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"testing"

	"github.com/spf13/pflag"

	"github.com/kubesift/kubesift/ingest"
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

// writeCLIDoc writes docs/cli.md: every verb with its usage and its flags, taken from the flag
// sets the verbs parse.
func writeCLIDoc(ctx context.Context, w io.Writer) error {
	var b strings.Builder
	b.WriteString("# kubesift command line\n\n" +
		"Generated from the verbs' flag sets (`kubesift COMMAND -h` prints the same); " +
		"`UPDATE_GOLDENS=1 go test -tags duckdb_arrow ./cli` rewrites this file.\n\n")
	b.WriteString("| command | what it does |\n|---|---|\n")
	for _, v := range verbs() {
		fmt.Fprintf(&b, "| [`%s`](#%s) | %s |\n", v.name, v.name, cell(v.summary))
	}
	fmt.Fprintf(&b, "\nExit codes (`kubesift -h`; when several apply, the first listed here wins: %s):\n\n", exitCodePrecedence())
	for _, c := range exitCodesByNumber() {
		fmt.Fprintf(&b, "- %d: %s\n", c.code, c.doc)
	}
	for _, v := range verbs() {
		described := false
		e := &env{stdout: io.Discard, stderr: io.Discard, stdin: strings.NewReader(""),
			getenv: func(string) string { return "" }, isTerminal: func(uintptr) bool { return false },
			describe: func(name, args, doc string, fs *pflag.FlagSet) {
				described = true
				writeVerbDoc(&b, name, args, doc, fs)
			}}
		if err := v.run(ctx, e, []string{"-h"}); !errors.Is(err, pflag.ErrHelp) || !described {
			return fmt.Errorf("kubesift %s -h did not describe its flags: %v", v.name, err)
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// writeVerbDoc writes one verb's section: usage, description (indented lines become code
// blocks) and a table of its flags.
func writeVerbDoc(b *strings.Builder, name, args, doc string, fs *pflag.FlagSet) {
	fmt.Fprintf(b, "\n## %s\n\n```\nkubesift %s [flags] %s\n```\n\n", name, name, args)
	inCode := false
	for _, line := range strings.Split(doc, "\n") {
		code := strings.HasPrefix(line, "  ")
		switch {
		case code && !inCode:
			b.WriteString("\n```\n")
		case !code && inCode:
			b.WriteString("```\n")
			if line != "" {
				b.WriteString("\n")
			}
		}
		inCode = code
		if code {
			b.WriteString(strings.TrimPrefix(line, "  ") + "\n")
		} else {
			b.WriteString(escapeHTML(line) + "\n")
		}
	}
	if inCode {
		b.WriteString("```\n")
	}
	b.WriteString("\n| flag | default | meaning |\n|---|---|---|\n")
	fs.VisitAll(func(f *pflag.Flag) {
		typ, usage := pflag.UnquoteUsage(f)
		flag := "--" + f.Name
		if f.Shorthand != "" {
			flag = "-" + f.Shorthand + ", " + flag
		}
		if typ != "" {
			flag += " " + typ
		}
		def := f.DefValue
		if def == "[]" || (def == "false" && f.Value.Type() == "bool") {
			def = ""
		}
		if def != "" {
			def = "`" + def + "`"
		}
		fmt.Fprintf(b, "| `%s` | %s | %s |\n", flag, def, cell(usage))
	})
}

// writeRulesDoc writes docs/rules.md: for every rule what it finds, the evidence it needs, what
// to do, its parameters and its references.
func writeRulesDoc(w io.Writer, rs []rules.Rule) error {
	var b strings.Builder
	b.WriteString("# kubesift rules\n\n" +
		"Generated from `rules/*.yaml` (`kubesift rules show ID` prints the same); " +
		"`UPDATE_GOLDENS=1 go test -tags duckdb_arrow ./cli` rewrites this file. " +
		"Each rule's query is `queries/<id>.sql`; the tables are described in [schema.md](schema.md).\n\n")
	b.WriteString("| rule | severity | finds |\n|---|---|---|\n")
	for _, r := range rs {
		fmt.Fprintf(&b, "| [`%s`](#%s) | %s | %s |\n", r.ID, r.ID, r.Severity, cell(r.Title))
	}
	for _, r := range rs {
		fmt.Fprintf(&b, "\n## %s\n\n**%s**\n\nSeverity: %s (may rise with the numbers).\n\n", r.ID, r.Title, r.Severity)
		b.WriteString("Evidence it reads (it runs when one of these tables has rows, else it is reported as not evaluated):\n\n")
		for _, t := range r.Inputs {
			fmt.Fprintf(&b, "- [`%s`](schema.md#%s)", t, t)
			if table, ok := ingest.Schema().Lookup(t); ok {
				fmt.Fprintf(&b, ": %s", escapeHTML(firstSentence(table.Doc)))
			}
			b.WriteString("\n")
		}
		b.WriteString("\n")
		if len(r.Needs) > 0 {
			b.WriteString("What else it needs (checked per cluster: without it the rule is reported blind or partial, with the reason; `kubesift policy` logs it):\n\n")
			for _, n := range r.Needs {
				fmt.Fprintf(&b, "- `%s`: %s Audit policy: %s.\n", n.Evidence, escapeHTML(strings.TrimSpace(n.Description)), n.Policy)
			}
			b.WriteString("\n")
		}
		fmt.Fprintf(&b, "### What it finds\n\n%s\n\n### What to do\n\n%s\n", escapeHTML(strings.TrimSpace(r.Description)), escapeHTML(strings.TrimSpace(r.Remediation)))
		if len(r.Params) > 0 {
			fmt.Fprintf(&b, "\n### Parameters\n\nOverride with `--set %s.NAME=VALUE`.\n\n| parameter | default | meaning |\n|---|---|---|\n", r.ID)
			for _, p := range r.Params {
				fmt.Fprintf(&b, "| `%s` | %v | %s |\n", p.Name, p.Default, cell(p.Description))
			}
		}
		if len(r.DuckDBOnly) > 0 {
			b.WriteString("\n### DuckDB-only SQL\n\nWhat its queries (with the macros they call) use that standard SQL and Trino lack, to port before running it elsewhere (`duckdb_only`): ")
			for i, name := range r.DuckDBOnly {
				if i > 0 {
					b.WriteString(", ")
				}
				fmt.Fprintf(&b, "`%s`", name)
			}
			b.WriteString(".\n")
		}
		if len(r.References) > 0 {
			b.WriteString("\n### References\n\n")
			for _, ref := range r.References {
				fmt.Fprintf(&b, "- <%s>\n", ref)
			}
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// cell makes text fit in one markdown table cell.
func cell(s string) string {
	return strings.ReplaceAll(escapeHTML(strings.Join(strings.Fields(s), " ")), "|", `\|`)
}

// escapeHTML keeps markdown from reading text such as <node> as HTML.
func escapeHTML(s string) string {
	return strings.NewReplacer("<", "&lt;", ">", "&gt;").Replace(s)
}

// firstSentence returns s up to its first ". " (all of s when it has none).
func firstSentence(s string) string {
	if i := strings.Index(s, ". "); i >= 0 {
		return s[:i+1]
	}
	return s
}
