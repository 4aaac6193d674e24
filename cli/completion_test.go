package cli

import (
	"slices"
	"strings"
	"testing"
)

func TestCompletionScripts(t *testing.T) {
	for shell, want := range map[string]string{"bash": "# bash completion V2 for kubesift", "zsh": "#compdef kubesift", "fish": "complete -c kubesift"} {
		r := runCLI(t, "completion", shell)
		if r.code != ExitOK || !strings.Contains(r.stdout, want) || !strings.Contains(r.stdout, "__complete") {
			t.Errorf("completion %s: code %d, %.200q", shell, r.code, r.stdout)
		}
	}
	for _, args := range [][]string{{"completion"}, {"completion", "tcsh"}, {"completion", "bash", "zsh"}} {
		if r := runCLI(t, args...); r.code != ExitUsage {
			t.Errorf("%v: code %d, want %d (%s)", args, r.code, ExitUsage, r.stderr)
		}
	}
}

// TestCompletionAnswers: what the scripts get back from kubesift __complete: verbs, each verb's
// own flags, and the formats of -o.
func TestCompletionAnswers(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want []string
		not  []string
	}{
		{[]string{"an"}, []string{"analyze"}, []string{"ingest"}},
		{[]string{""}, []string{"ingest", "query", "run", "timeline", "completion", "version"}, nil},
		{[]string{"analyze", "-o", ""}, []string{"table", "csv", "xlsx", "html"}, []string{"sql"}},
		{[]string{"schema", "-o", ""}, []string{"markdown", "sql"}, []string{"html"}},
		{[]string{"run", "--fa"}, []string{"--fail-on"}, nil},
		{[]string{"ingest", "--ki"}, []string{"--kind"}, []string{"--fail-on"}},
		{[]string{"completion", ""}, []string{"bash", "zsh", "fish"}, nil},
	} {
		r := runCLI(t, append([]string{"__completeNoDesc"}, tc.args...)...)
		lines := strings.Split(r.stdout, "\n")
		for _, w := range tc.want {
			if !slices.Contains(lines, w) {
				t.Errorf("__complete %q: no %q in %q", tc.args, w, r.stdout)
			}
		}
		for _, n := range tc.not {
			if slices.Contains(lines, n) {
				t.Errorf("__complete %q: offers %q", tc.args, n)
			}
		}
	}
}
