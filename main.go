// Command kubesift loads Kubernetes audit logs, conntrack dumps and endpoint snapshots into
// DuckDB and finds the traffic pathologies in them. See README.md.
package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/kubesift/kubesift/cli"
)

func main() {
	if err := cli.SetDuckDBAllocator(); err != nil {
		fmt.Fprintf(os.Stderr, "kubesift: warning: %v\n", err)
	}
	cli.SetGoMemoryLimit()
	os.Exit(run(context.Background(), os.Args[1:], os.Stdout, os.Stderr))
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()
	return cli.Run(ctx, args, stdout, stderr)
}
