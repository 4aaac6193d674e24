package cli

import (
	"context"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/spf13/pflag"

	"github.com/kubesift/kubesift/ingest"
)

type ingestFlags struct {
	kind           string
	maxLineBytes   int
	keepSecrets    bool
	node           string
	at             string
	auditEndpoints bool
	strict         bool
	cluster        string
	clusterPerDir  bool
	apiserver      string
}

func (f *ingestFlags) options(e *env, quiet bool) (ingest.Options, error) {
	kind, err := ingest.ParseKind(f.kind)
	if err != nil {
		return ingest.Options{}, usageError{err}
	}
	if f.maxLineBytes <= 0 {
		return ingest.Options{}, usagef("--max-line-bytes must be positive, got %d", f.maxLineBytes)
	}
	opt := ingest.Options{Kind: kind, MaxLineBytes: f.maxLineBytes, KeepSecrets: f.keepSecrets, Log: e.logWriter(quiet), Node: f.node,
		NoAuditEndpoints: !f.auditEndpoints, Cluster: f.cluster, ClusterPerDir: f.clusterPerDir, APIServer: f.apiserver,
		Settling: allocatorSettling(e.stderr)}
	if f.keepSecrets {
		fmt.Fprintln(e.stderr, "warning: --keep-secrets: secrets go into the database unredacted; keep it as safe as the cluster's credentials")
	}
	if f.at != "" {
		at, err := time.Parse(time.RFC3339, f.at)
		if err != nil {
			return ingest.Options{}, usagef("--at wants an RFC3339 time like 2026-11-21T04:28:20Z, got %q", f.at)
		}
		opt.At = at.UTC()
	}
	if !quiet && e.isTerminal(os.Stderr.Fd()) {
		opt.Progress = newProgressBar(e.stderr)
	}
	return opt, nil
}

func addIngestFlags(fs *pflag.FlagSet, f *ingestFlags) {
	fs.StringVar(&f.kind, "kind", "auto", "kind of evidence: "+strings.Join(ingest.KindNames(), ", "))
	fs.IntVar(&f.maxLineBytes, "max-line-bytes", ingest.DefaultMaxLineBytes, "longest input line (one audit event with its bodies) to load; longer lines are rejected into ingest_errors")
	fs.BoolVar(&f.keepSecrets, "keep-secrets", false, "load secrets unredacted: bodies of Secrets, TokenReviews and token requests, webhook patches and status messages of those, bearer tokens and URI query tokens (redacted by default)")
	fs.BoolVar(&f.auditEndpoints, "audit-endpoints", true, "derive endpoint_addresses rows from the Endpoints/EndpointSlice bodies in audit logs (on Endpoints-heavy logs about a third of the ingest time)")
	fs.StringVar(&f.node, "node", "", "node of conntrack evidence that is not in a <node>/<time>/ capture bundle")
	fs.BoolVar(&f.strict, "strict", false, fmt.Sprintf("exit with code %d when any line was rejected (the good lines are still loaded)", ExitRejects))
	fs.StringVar(&f.cluster, "cluster", "", "cluster of the evidence loaded (the cluster column of every table); for audit events in place of what their envelope says (EKS log group, AKS resource, GKE cluster_name)")
	fs.BoolVar(&f.clusterPerDir, "cluster-per-dir", false, "the first directory level under each directory PATH names the cluster of the evidence in it (run --cluster-per-dir samples/: every scenario its own cluster); files directly in PATH get --cluster")
	fs.StringVar(&f.apiserver, "apiserver", "", "apiserver that wrote the audit events loaded (audit_events.apiserver), in place of what their envelope or path says")
	fs.StringVar(&f.at, "at", "", "capture time (RFC3339) of conntrack or snapshot evidence whose path carries none")
}

func runIngest(ctx context.Context, e *env, args []string) error {
	fs, c := newFlags(e, "ingest", "PATH...",
		"Load evidence into a DuckDB database file. PATH is a file, a directory (walked recursively),\n"+
			"a glob, or - for stdin. Compressed files (gzip, bzip2, zstd, xz) are read transparently; a damaged\n"+
			"gzip member is skipped and recorded in ingest_errors. Each file is loaded in one\n"+
			"transaction; loading the same data twice adds no duplicate rows.")
	c.addDB(fs, e, "database file to load into")
	var f ingestFlags
	addIngestFlags(fs, &f)
	if err := parse(fs, args); err != nil {
		return err
	}
	if fs.NArg() == 0 {
		return usagef("no PATH given")
	}
	opt, err := f.options(e, c.quiet)
	if err != nil {
		return err
	}
	inputs, err := ingest.ExpandPaths(fs.Args())
	if err != nil {
		return err
	}
	db, err := c.openDB(ctx, c.db, false)
	if err != nil {
		return err
	}
	defer db.Close()
	results, err := e.ingestFiles(ctx, db, opt, inputs)
	return loadStatus(results, err, f.strict)
}
