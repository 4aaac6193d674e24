package snapshot

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
)

// DefaultPageSize is the number of objects asked for per list request (limit=, then continue=).
const DefaultPageSize = 500

// TimeLayout is the capture time in the file names; ingest takes captured_at from it.
const TimeLayout = "2006-01-02T15:04:05Z"

// LeaderAnnotation holds the leader-election record of Endpoints and ConfigMap resource locks.
const LeaderAnnotation = "control-plane.alpha.kubernetes.io/leader"

const lastAppliedAnnotation = "kubectl.kubernetes.io/last-applied-configuration"

// tempPrefix starts the names of files being written. They are hidden, so 'kubesift ingest DIR'
// never reads a half-written file.
const tempPrefix = ".kubesift-snapshot-"

// Options tune a snapshot.
type Options struct {
	// Namespace limits the snapshot to one namespace; empty means all namespaces.
	Namespace string
	// PageSize is the limit of each list request; 0 means DefaultPageSize.
	PageSize int64
	// Now returns the capture time; nil means time.Now. It is truncated to the second.
	Now func() time.Time
	// Keep, when positive, removes the snapshot files of earlier runs (files named like the ones
	// Take writes) captured longer than Keep before this snapshot, once it is written.
	Keep time.Duration
	// Log, if not nil, receives one line per file written.
	Log io.Writer
	// Cluster names the cluster listed (Target.Cluster, or the user's choice); when set, every
	// file records it (ClusterField) and ingest fills the cluster column from it.
	Cluster string
}

// ClusterField is the field of a snapshot List, before its items, that records the cluster the
// objects were listed from: {"apiVersion":"v1","kind":"List","kubesift":{"cluster":"prod"},
// "items":[...]}. Ingest reads it from the file's head (ingest/k8sobj.HeadCluster).
const ClusterField = "kubesift"

// File is one file written by Take.
type File struct {
	Kind    string // Endpoints, EndpointSlice, ...
	Path    string
	Objects int
	Pages   int // list requests made
}

// Result says what Take wrote.
type Result struct {
	At     time.Time
	Files  []File
	Pruned []string // files of earlier snapshots removed by Options.Keep
}

// page is one list response, its items ready to be written.
type page struct {
	items []any
	next  string
}

// kindSpec says how to list one kind.
type kindSpec struct {
	file     string // file name prefix
	kind     string
	group    string // API group of the resource ("" for the core group)
	resource string
	list     func(ctx context.Context, c kubernetes.Interface, ns string, opts metav1.ListOptions) (page, error)
}

// qualified returns the resource as RBAC and kubectl name it: pods, endpointslices.discovery.k8s.io.
func (k kindSpec) qualified() string {
	if k.group == "" {
		return k.resource
	}
	return k.resource + "." + k.group
}

var kinds = []kindSpec{
	{file: "endpoints", kind: "Endpoints", resource: "endpoints",
		list: func(ctx context.Context, c kubernetes.Interface, ns string, opts metav1.ListOptions) (page, error) {
			// Endpoints are deprecated in v1.33+, but legacy leader election and older controllers
			// still write them, and they are what this snapshot is for.
			l, err := c.CoreV1().Endpoints(ns).List(ctx, opts)
			if err != nil {
				return page{}, err
			}
			p := page{next: l.Continue}
			for i := range l.Items {
				o := &l.Items[i]
				o.APIVersion, o.Kind = "v1", "Endpoints"
				cleanMeta(&o.ObjectMeta)
				p.items = append(p.items, o)
			}
			return p, nil
		}},
	{file: "endpointslices", kind: "EndpointSlice", group: "discovery.k8s.io", resource: "endpointslices",
		list: func(ctx context.Context, c kubernetes.Interface, ns string, opts metav1.ListOptions) (page, error) {
			l, err := c.DiscoveryV1().EndpointSlices(ns).List(ctx, opts)
			if err != nil {
				return page{}, err
			}
			p := page{next: l.Continue}
			for i := range l.Items {
				o := &l.Items[i]
				o.APIVersion, o.Kind = "discovery.k8s.io/v1", "EndpointSlice"
				cleanMeta(&o.ObjectMeta)
				p.items = append(p.items, o)
			}
			return p, nil
		}},
	{file: "services", kind: "Service", resource: "services",
		list: func(ctx context.Context, c kubernetes.Interface, ns string, opts metav1.ListOptions) (page, error) {
			l, err := c.CoreV1().Services(ns).List(ctx, opts)
			if err != nil {
				return page{}, err
			}
			p := page{next: l.Continue}
			for i := range l.Items {
				o := &l.Items[i]
				o.APIVersion, o.Kind = "v1", "Service"
				cleanMeta(&o.ObjectMeta)
				p.items = append(p.items, o)
			}
			return p, nil
		}},
	{file: "pods", kind: "Pod", resource: "pods",
		list: func(ctx context.Context, c kubernetes.Interface, ns string, opts metav1.ListOptions) (page, error) {
			l, err := c.CoreV1().Pods(ns).List(ctx, opts)
			if err != nil {
				return page{}, err
			}
			p := page{next: l.Continue}
			for i := range l.Items {
				o := &l.Items[i]
				o.APIVersion, o.Kind = "v1", "Pod"
				cleanMeta(&o.ObjectMeta)
				cleanPod(&o.Spec)
				p.items = append(p.items, o)
			}
			return p, nil
		}},
	{file: "leases", kind: "Lease", group: "coordination.k8s.io", resource: "leases",
		list: func(ctx context.Context, c kubernetes.Interface, ns string, opts metav1.ListOptions) (page, error) {
			l, err := c.CoordinationV1().Leases(ns).List(ctx, opts)
			if err != nil {
				return page{}, err
			}
			p := page{next: l.Continue}
			for i := range l.Items {
				o := &l.Items[i]
				o.APIVersion, o.Kind = "coordination.k8s.io/v1", "Lease"
				cleanMeta(&o.ObjectMeta)
				p.items = append(p.items, o)
			}
			return p, nil
		}},
	{file: "configmaps", kind: "ConfigMap", resource: "configmaps",
		list: func(ctx context.Context, c kubernetes.Interface, ns string, opts metav1.ListOptions) (page, error) {
			l, err := c.CoreV1().ConfigMaps(ns).List(ctx, opts)
			if err != nil {
				return page{}, err
			}
			p := page{next: l.Continue}
			for i := range l.Items {
				p.items = append(p.items, configMapMeta(&l.Items[i]))
			}
			return p, nil
		}},
}

// configMapMeta keeps a ConfigMap's identity and annotations; data and binaryData are never copied.
func configMapMeta(cm *corev1.ConfigMap) *corev1.ConfigMap {
	out := &corev1.ConfigMap{
		TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"},
		ObjectMeta: metav1.ObjectMeta{
			Name: cm.Name, Namespace: cm.Namespace, UID: cm.UID, ResourceVersion: cm.ResourceVersion,
		},
	}
	for k, v := range cm.Annotations {
		if k == lastAppliedAnnotation {
			continue // kubectl apply repeats the whole object, data included, in it
		}
		if out.Annotations == nil {
			out.Annotations = map[string]string{}
		}
		out.Annotations[k] = v
	}
	return out
}

// cleanMeta drops what kubesift never reads and what may repeat an object's content.
func cleanMeta(m *metav1.ObjectMeta) {
	m.ManagedFields = nil
	delete(m.Annotations, lastAppliedAnnotation)
}

// cleanPod drops environment variables: literal values are often credentials.
func cleanPod(s *corev1.PodSpec) {
	for _, cs := range [][]corev1.Container{s.InitContainers, s.Containers} {
		for i := range cs {
			cs[i].Env, cs[i].EnvFrom = nil, nil
		}
	}
	for i := range s.EphemeralContainers {
		s.EphemeralContainers[i].Env, s.EphemeralContainers[i].EnvFrom = nil, nil
	}
}

// FileName returns the name of the file of kind (its plural, lower case: endpoints, pods, ...)
// captured at t.
func FileName(plural string, t time.Time) string {
	return plural + "-" + t.UTC().Format(TimeLayout) + ".json"
}

// Take lists every kind and writes one List file per kind into dir (created if missing). Either
// every file is written, or none is and the error says which list failed.
func Take(ctx context.Context, c kubernetes.Interface, dir string, opt Options) (*Result, error) {
	if opt.PageSize <= 0 {
		opt.PageSize = DefaultPageSize
	}
	now := time.Now
	if opt.Now != nil {
		now = opt.Now
	}
	at := now().UTC().Truncate(time.Second)
	if err := os.MkdirAll(dir, 0o750); err != nil {
		return nil, fmt.Errorf("creating the output directory: %w", err)
	}
	removeStaleTemps(dir, time.Now())

	res := &Result{At: at}
	var temps []*os.File
	defer func() {
		for _, f := range temps {
			f.Close()
			os.Remove(f.Name()) // gone already when renamed
		}
	}()
	for _, k := range kinds {
		f, err := os.CreateTemp(dir, tempPrefix+k.file+"-*.json")
		if err != nil {
			return nil, fmt.Errorf("writing the %s snapshot: %w", k.kind, err)
		}
		temps = append(temps, f)
		n, pages, err := writeKind(ctx, c, k, f, opt)
		if err != nil {
			return nil, err
		}
		if err := f.Sync(); err != nil {
			return nil, fmt.Errorf("writing %s: %w", f.Name(), err)
		}
		res.Files = append(res.Files, File{Kind: k.kind, Path: filepath.Join(dir, FileName(k.file, at)), Objects: n, Pages: pages})
	}
	// Every list succeeded: move the files into place.
	for i, f := range temps {
		if err := f.Chmod(0o640); err != nil {
			return nil, fmt.Errorf("writing %s: %w", f.Name(), err)
		}
		if err := f.Close(); err != nil {
			return nil, fmt.Errorf("writing %s: %w", f.Name(), err)
		}
		if err := os.Rename(f.Name(), res.Files[i].Path); err != nil {
			return nil, fmt.Errorf("writing %s: %w", res.Files[i].Path, err)
		}
	}
	syncDir(dir)
	if opt.Log != nil {
		for _, f := range res.Files {
			fmt.Fprintf(opt.Log, "%s: %d %s (%d %s)\n", f.Path, f.Objects, f.Kind, f.Pages, plural(f.Pages, "request"))
		}
	}
	if opt.Keep > 0 {
		pruned, err := Prune(dir, at.Add(-opt.Keep))
		res.Pruned = pruned
		if opt.Log != nil && len(pruned) > 0 {
			fmt.Fprintf(opt.Log, "removed %d snapshot %s captured before %s\n", len(pruned), plural(len(pruned), "file"), at.Add(-opt.Keep).Format(TimeLayout))
		}
		if err != nil {
			return res, fmt.Errorf("removing old snapshots: %w", err)
		}
	}
	return res, nil
}

// snapshotName matches the names Take gives its files.
var snapshotName = regexp.MustCompile(`^(endpoints|endpointslices|services|pods|leases|configmaps)-(\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}Z)\.json$`)

// Prune removes the snapshot files in dir (and only those: names as Take writes them) captured
// before cutoff, and returns their paths.
func Prune(dir string, cutoff time.Time) ([]string, error) {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	var removed []string
	for _, e := range ents {
		m := snapshotName.FindStringSubmatch(e.Name())
		if m == nil || e.IsDir() {
			continue
		}
		t, err := time.Parse(TimeLayout, m[2])
		if err != nil || !t.Before(cutoff) {
			continue
		}
		p := filepath.Join(dir, e.Name())
		if err := os.Remove(p); err != nil {
			return removed, err
		}
		removed = append(removed, p)
	}
	return removed, nil
}

func plural(n int, s string) string {
	if n == 1 {
		return s
	}
	return s + "s"
}

// writeKind streams every page of kind into f as one List. A continue token that expired
// (410 Gone, the list took longer than the apiserver keeps it) starts the list over.
func writeKind(ctx context.Context, c kubernetes.Interface, k kindSpec, f *os.File, opt Options) (objects, pages int, err error) {
	const attempts = 3
	for attempt := 1; ; attempt++ {
		objects, pages, err = writeList(ctx, c, k, f, opt)
		if err == nil || !errors.Is(err, errExpired) || attempt == attempts {
			return objects, pages, err
		}
		if _, err := f.Seek(0, io.SeekStart); err != nil {
			return 0, 0, err
		}
		if err := f.Truncate(0); err != nil {
			return 0, 0, err
		}
	}
}

var errExpired = errors.New("the list's continue token expired")

func writeList(ctx context.Context, c kubernetes.Interface, k kindSpec, f *os.File, opt Options) (objects, pages int, err error) {
	w := bufio.NewWriterSize(f, 256<<10)
	head := map[string]any{"apiVersion": "v1", "kind": "List"}
	if opt.Cluster != "" {
		head[ClusterField] = map[string]string{"cluster": opt.Cluster}
	}
	b, err := json.Marshal(head)
	if err != nil {
		return 0, 0, err
	}
	// The items follow the other fields, so that the cluster is in the head ingest reads first.
	if _, err := w.Write(append(b[:len(b)-1], `,"items":[`...)); err != nil {
		return 0, 0, err
	}
	opts := metav1.ListOptions{Limit: opt.PageSize}
	for {
		p, err := k.list(ctx, c, opt.Namespace, opts)
		pages++
		if err != nil {
			if opts.Continue != "" && apierrors.IsResourceExpired(err) {
				return objects, pages, fmt.Errorf("listing %s: %w: %v", k.qualified(), errExpired, err)
			}
			return objects, pages, describe(err, k, opt.Namespace)
		}
		for _, it := range p.items {
			b, err := json.Marshal(it)
			if err != nil {
				return objects, pages, fmt.Errorf("encoding a %s: %w", k.kind, err)
			}
			sep := ",\n"
			if objects == 0 {
				sep = "\n"
			}
			w.WriteString(sep)
			if _, err := w.Write(b); err != nil {
				return objects, pages, fmt.Errorf("writing %s: %w", f.Name(), err)
			}
			objects++
		}
		if p.next == "" {
			break
		}
		if p.next == opts.Continue {
			return objects, pages, fmt.Errorf("listing %s: the apiserver returned the same continue token twice", k.qualified())
		}
		opts.Continue = p.next
	}
	if _, err := w.WriteString("\n]}\n"); err != nil {
		return objects, pages, err
	}
	if err := w.Flush(); err != nil {
		return objects, pages, fmt.Errorf("writing %s: %w", f.Name(), err)
	}
	return objects, pages, nil
}

// describe turns an apiserver error into one that says what to do.
func describe(err error, k kindSpec, ns string) error {
	where := "in all namespaces"
	if ns != "" {
		where = "in namespace " + ns
	}
	res := k.qualified()
	switch {
	case apierrors.IsForbidden(err):
		return fmt.Errorf("listing %s %s: forbidden: kubesift needs the \"list\" verb on %s (RBAC rule: apiGroups [%q], resources [%q], verbs [get, list]; see deploy/kubernetes/20-rbac.yaml): %w",
			res, where, res, k.group, k.resource, err)
	case apierrors.IsUnauthorized(err):
		return fmt.Errorf("listing %s: the apiserver rejected the credentials (401 Unauthorized; expired token or wrong kubeconfig user?): %w", res, err)
	case apierrors.IsNotFound(err):
		return fmt.Errorf("listing %s %s: the apiserver does not serve %s (is the cluster older than the API version kubesift lists?): %w", res, where, res, err)
	}
	return fmt.Errorf("listing %s %s: %w", res, where, err)
}

// removeStaleTemps removes temporary files left by a snapshot that was killed an hour or more ago.
func removeStaleTemps(dir string, now time.Time) {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return
	}
	for _, e := range ents {
		if e.IsDir() || !strings.HasPrefix(e.Name(), tempPrefix) {
			continue
		}
		if info, err := e.Info(); err == nil && now.Sub(info.ModTime()) > time.Hour {
			os.Remove(filepath.Join(dir, e.Name()))
		}
	}
}

// syncDir makes the renames durable; errors are ignored (not every file system supports it).
func syncDir(dir string) {
	if d, err := os.Open(dir); err == nil {
		d.Sync()
		d.Close()
	}
}

// Target says where a client connects.
type Target struct {
	From    string // the configuration's origin, for the log: kubeconfig path and context → host
	Cluster string // the cluster name of the kubeconfig context used; "" with the in-cluster config
}

// ClientOptions say how to reach the apiserver.
type ClientOptions struct {
	Kubeconfig string // --kubeconfig; empty: $KUBECONFIG, ~/.kube/config, or in-cluster config
	Context    string // --context; empty: the kubeconfig's current context
	UserAgent  string
	Getenv     func(string) string // nil: os.Getenv
	// Warnings receives the apiserver's warnings (such as "v1 Endpoints is deprecated"), each once;
	// nil drops them.
	Warnings io.Writer
}

// warningWriter prints each distinct apiserver warning once, instead of client-go's klog lines.
type warningWriter struct {
	w    io.Writer
	mu   sync.Mutex
	seen map[string]bool
}

func (h *warningWriter) HandleWarningHeader(code int, agent, text string) {
	if code != 299 || text == "" || h.w == nil {
		return
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.seen[text] {
		return
	}
	h.seen[text] = true
	fmt.Fprintf(h.w, "snapshot: apiserver warning: %s\n", text)
}

// RESTConfig returns the client configuration and where it came from. Inside a pod
// (KUBERNETES_SERVICE_HOST set) without --kubeconfig, --context or $KUBECONFIG it is the
// in-cluster configuration (the pod's ServiceAccount token); otherwise kubectl's loading rules.
func RESTConfig(o ClientOptions) (*rest.Config, Target, error) {
	getenv := o.Getenv
	if getenv == nil {
		getenv = os.Getenv
	}
	var cfg *rest.Config
	var from, cluster string
	if o.Kubeconfig == "" && o.Context == "" && getenv("KUBECONFIG") == "" && getenv("KUBERNETES_SERVICE_HOST") != "" {
		c, err := rest.InClusterConfig()
		if err != nil {
			return nil, Target{}, fmt.Errorf("KUBERNETES_SERVICE_HOST is set but the in-cluster configuration is unusable (%v); pass --kubeconfig", err)
		}
		cfg, from = c, "in-cluster config (ServiceAccount token)"
	} else {
		rules := clientcmd.NewDefaultClientConfigLoadingRules()
		rules.ExplicitPath = o.Kubeconfig
		cc := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, &clientcmd.ConfigOverrides{CurrentContext: o.Context})
		c, err := cc.ClientConfig()
		if err != nil {
			if clientcmd.IsEmptyConfig(err) {
				return nil, Target{}, fmt.Errorf("no kubeconfig found (looked at $KUBECONFIG and %s); pass --kubeconfig, or run inside a pod", clientcmd.RecommendedHomeFile)
			}
			return nil, Target{}, fmt.Errorf("loading the kubeconfig: %w", err)
		}
		cfg = c
		from = "kubeconfig"
		if o.Kubeconfig != "" {
			from += " " + o.Kubeconfig
		} else if p := rules.GetLoadingPrecedence(); len(p) > 0 {
			from += " " + strings.Join(p, string(filepath.ListSeparator))
		}
		if raw, err := cc.RawConfig(); err == nil {
			ctxName := o.Context
			if ctxName == "" {
				ctxName = raw.CurrentContext
			}
			if ctxName != "" {
				from += ", context " + ctxName
			}
			if kc := raw.Contexts[ctxName]; kc != nil {
				cluster = kc.Cluster
			}
		}
	}
	if o.UserAgent != "" {
		cfg.UserAgent = o.UserAgent
	}
	cfg.WarningHandler = &warningWriter{w: o.Warnings, seen: map[string]bool{}}
	if cfg.Timeout == 0 {
		cfg.Timeout = 2 * time.Minute
	}
	// A snapshot is a handful of list requests; let them go without client-side throttling.
	cfg.QPS, cfg.Burst = 20, 40
	return cfg, Target{From: from + " → " + cfg.Host, Cluster: cluster}, nil
}

// NewClient returns a clientset for the options.
func NewClient(o ClientOptions) (kubernetes.Interface, Target, error) {
	cfg, target, err := RESTConfig(o)
	if err != nil {
		return nil, Target{}, err
	}
	c, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, Target{}, fmt.Errorf("creating the client (%s): %w", target.From, err)
	}
	return c, target, nil
}
