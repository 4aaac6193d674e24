package cli

import (
	"context"
	"fmt"
	"time"

	"github.com/kubesift/kubesift/snapshot"
)

func runSnapshot(ctx context.Context, e *env, args []string) error {
	fs, c := newFlags(e, "snapshot", "--out DIR",
		"Take a live snapshot of Endpoints, EndpointSlices (discovery/v1), Services, Pods, Leases and the\n"+
			"metadata of ConfigMaps (their data is never written) through the Kubernetes API, into one\n"+
			"kubectl-style List file per kind named with the capture time, e.g.\n"+
			"DIR/endpoints-2026-11-21T04:28:20Z.json; 'kubesift ingest DIR' loads them with that time as\n"+
			"captured_at. Lists are paginated; files appear only when every list succeeded.\n\n"+
			"Each file records the cluster it was listed from: the kubeconfig context's cluster name, or\n"+
			"--cluster (in-cluster config: none unless --cluster); 'kubesift ingest' fills the cluster\n"+
			"column from it unless --cluster or --cluster-per-dir names one.\n\n"+
			"Inside a pod, without --kubeconfig, --context or $KUBECONFIG, it uses the pod's ServiceAccount\n"+
			"(in-cluster config); otherwise kubectl's rules ($KUBECONFIG, then ~/.kube/config). It needs\n"+
			"get/list on endpoints, endpointslices.discovery.k8s.io, services, pods,\n"+
			"leases.coordination.k8s.io and configmaps (deploy/kubernetes/20-rbac.yaml).\n\n"+
			"Example:\n"+
			"  kubesift snapshot --out snapshots/ && kubesift run snapshots/ /var/log/kubernetes/audit/")
	var (
		kubeconfig, kubeContext, namespace, out, keep, cluster string
		pageSize                                               int64
	)
	fs.StringVar(&kubeconfig, "kubeconfig", "", "kubeconfig file (default: $KUBECONFIG, ~/.kube/config, or the in-cluster config inside a pod)")
	fs.StringVar(&kubeContext, "context", "", "kubeconfig context to use (default: the current context)")
	fs.StringVar(&cluster, "cluster", "", "cluster name the files record, for ingest's cluster column (default: the kubeconfig context's cluster; none with the in-cluster config)")
	fs.StringVarP(&namespace, "namespace", "n", "", "snapshot only this namespace (default: all namespaces)")
	fs.StringVar(&out, "out", "", "directory to write the snapshot files into (created if missing)")
	fs.StringVar(&keep, "keep", "", "remove this directory's snapshot files captured longer ago than this (e.g. 7d, 36h) after writing the new ones (default: keep all)")
	fs.Int64Var(&pageSize, "page-size", snapshot.DefaultPageSize, "objects per list request (limit=, then continue=)")
	if err := parse(fs, args); err != nil {
		return err
	}
	if out == "" {
		return usagef("--out DIR is required")
	}
	if fs.NArg() != 0 {
		return usagef("unexpected argument %q (the output directory goes in --out)", fs.Arg(0))
	}
	if pageSize <= 0 {
		return usagef("--page-size must be positive, got %d", pageSize)
	}
	var keepFor time.Duration
	if keep != "" {
		d, err := parseRetention(keep)
		if err != nil {
			return usagef("--keep wants a period like 7d or 36h, got %q", keep)
		}
		keepFor = d
	}
	log := e.logWriter(c.quiet)
	client, target, err := snapshot.NewClient(snapshot.ClientOptions{
		Kubeconfig: kubeconfig, Context: kubeContext, Getenv: e.getenv,
		UserAgent: "kubesift/" + Version + " (snapshot)", Warnings: log,
	})
	if err != nil {
		return err
	}
	if log != nil {
		fmt.Fprintf(log, "snapshot: using %s\n", target.From)
	}
	if cluster == "" {
		cluster = target.Cluster
	}
	res, err := snapshot.Take(ctx, client, out, snapshot.Options{Namespace: namespace, PageSize: pageSize, Keep: keepFor, Log: log, Cluster: cluster})
	if err != nil {
		return err
	}
	if log != nil {
		total := 0
		for _, f := range res.Files {
			total += f.Objects
		}
		fmt.Fprintf(log, "snapshot: %d objects in %d files captured at %s\n", total, len(res.Files), res.At.Format(snapshot.TimeLayout))
	}
	return nil
}
