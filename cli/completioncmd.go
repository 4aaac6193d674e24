package cli

import (
	"context"
	"io"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// completionShells are the shells `kubesift completion` writes a script for.
var completionShells = []string{"bash", "zsh", "fish"}

func runCompletion(ctx context.Context, e *env, args []string) error {
	fs, _ := newFlags(e, "completion", "bash|zsh|fish",
		"Print the shell completion script, as kubectl does. The script asks kubesift itself\n"+
			"for the verbs, flags and formats, so it stays right across upgrades.\n\n"+
			"  bash: source <(kubesift completion bash)   (needs the bash-completion package)\n"+
			"  zsh:  source <(kubesift completion zsh)\n"+
			"  fish: kubesift completion fish | source")
	if err := parse(fs, args); err != nil {
		return err
	}
	if fs.NArg() != 1 {
		return usagef("want one shell: %s", strings.Join(completionShells, ", "))
	}
	root := e.commandTree(ctx)
	switch fs.Arg(0) {
	case "bash":
		return root.GenBashCompletionV2(e.stdout, true)
	case "zsh":
		return root.GenZshCompletion(e.stdout)
	case "fish":
		return root.GenFishCompletion(e.stdout, true)
	}
	return usagef("unknown shell %q (want %s)", fs.Arg(0), strings.Join(completionShells, ", "))
}

// complete answers the completion scripts' requests (kubesift __complete ARGS...) with cobra.
func (e *env) complete(ctx context.Context, args []string) int {
	root := e.commandTree(ctx)
	root.SetArgs(args)
	root.SetOut(e.stdout)
	root.SetErr(io.Discard)
	if err := root.ExecuteContext(ctx); err != nil {
		return ExitError
	}
	return ExitOK
}

// commandTree describes the verbs and their flags to cobra, which writes the completion scripts
// and answers them. Each verb's flags are its own: collected, as for docs/cli.md, by running it
// with --help, which every verb parses before doing anything.
func (e *env) commandTree(ctx context.Context) *cobra.Command {
	root := &cobra.Command{Use: "kubesift", Short: "sift Kubernetes audit logs, conntrack dumps and endpoint snapshots", SilenceUsage: true}
	root.CompletionOptions.DisableDefaultCmd = true
	for _, v := range verbs() {
		cmd := &cobra.Command{Use: v.name, Short: v.summary, Run: func(*cobra.Command, []string) {}}
		var flags *pflag.FlagSet
		quiet := &env{stdout: io.Discard, stderr: io.Discard, stdin: e.stdin, getenv: e.getenv, isTerminal: e.isTerminal,
			describe: func(_, _, _ string, fs *pflag.FlagSet) { flags = fs }}
		if v.name != "completion" {
			v.run(ctx, quiet, []string{"--help"})
		}
		if flags != nil {
			cmd.Flags().AddFlagSet(flags)
			if f := flags.Lookup("output"); f != nil {
				formats := strings.Split(strings.TrimPrefix(f.Usage, outputUsage), ", ")
				cmd.RegisterFlagCompletionFunc("output", cobra.FixedCompletions(formats, cobra.ShellCompDirectiveNoFileComp))
			}
		}
		if v.name == "completion" {
			cmd.ValidArgs = completionShells
		}
		root.AddCommand(cmd)
	}
	return root
}
