// healthyclient: well-behaved clients for the kubesift "healthy" recording, built against
// client-go v0.33.13 (current line).
//
//	-mode informer : client-go reflectors (the machinery under every informer) on endpoints,
//	                 endpointslices and services in all namespaces. The watch timeout is
//	                 shortened to 8-12 s through the ListerWatcher so that restarts happen
//	                 during a short recording; the reflector resumes each watch from the newest
//	                 resourceVersion it has seen, and relists after a 410 (the correct behaviour).
//	-mode leader   : leader election with resourcelock.LeaseLock (coordination.k8s.io/v1 Lease).
package main

import (
	"context"
	"flag"
	"log"
	"math/rand"
	"os"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/client-go/tools/leaderelection"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
)

func main() {
	kubeconfig := flag.String("kubeconfig", "", "kubeconfig path")
	mode := flag.String("mode", "informer", "informer|leader")
	ns := flag.String("namespace", "", "namespace (informer: empty = all)")
	name := flag.String("name", "healthy-leader", "Lease name")
	id := flag.String("id", "", "identity")
	dur := flag.Duration("for", 60*time.Second, "how long to run")
	userAgent := flag.String("user-agent", "", "HTTP User-Agent")
	flag.Parse()
	rest.SetDefaultWarningHandler(rest.NoWarnings{})
	cfg, err := clientcmd.BuildConfigFromFlags("", *kubeconfig)
	if err != nil {
		log.Fatal(err)
	}
	if *userAgent != "" {
		cfg.UserAgent = *userAgent
	}
	cs := kubernetes.NewForConfigOrDie(cfg)
	ctx, cancel := context.WithTimeout(context.Background(), *dur)
	defer cancel()
	switch *mode {
	case "informer":
		run := func(name string, obj runtime.Object, list func(context.Context, metav1.ListOptions) (runtime.Object, error), w func(context.Context, metav1.ListOptions) (watch.Interface, error)) {
			lw := &cache.ListWatch{
				ListWithContextFunc: func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) { return list(ctx, o) },
				WatchFuncWithContext: func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
					t := int64(8 + rand.Intn(5))
					o.TimeoutSeconds = &t
					return w(ctx, o)
				},
			}
			store := cache.NewStore(cache.MetaNamespaceKeyFunc)
			r := cache.NewReflectorWithOptions(lw, obj, store, cache.ReflectorOptions{Name: name})
			go r.RunWithContext(ctx)
		}
		run("endpoints", &corev1.Endpoints{},
			func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
				return cs.CoreV1().Endpoints(*ns).List(ctx, o)
			},
			func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
				return cs.CoreV1().Endpoints(*ns).Watch(ctx, o)
			})
		run("endpointslices", &discoveryv1.EndpointSlice{},
			func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
				return cs.DiscoveryV1().EndpointSlices(*ns).List(ctx, o)
			},
			func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
				return cs.DiscoveryV1().EndpointSlices(*ns).Watch(ctx, o)
			})
		run("services", &corev1.Service{},
			func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
				return cs.CoreV1().Services(*ns).List(ctx, o)
			},
			func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
				return cs.CoreV1().Services(*ns).Watch(ctx, o)
			})
		<-ctx.Done()
	case "leader":
		if *id == "" {
			h, _ := os.Hostname()
			*id = h
		}
		lock := &resourcelock.LeaseLock{
			LeaseMeta:  metav1.ObjectMeta{Namespace: *ns, Name: *name},
			Client:     cs.CoordinationV1(),
			LockConfig: resourcelock.ResourceLockConfig{Identity: *id},
		}
		leaderelection.RunOrDie(ctx, leaderelection.LeaderElectionConfig{
			Lock: lock, LeaseDuration: 15 * time.Second, RenewDeadline: 10 * time.Second, RetryPeriod: 2 * time.Second,
			ReleaseOnCancel: true, Name: *name,
			Callbacks: leaderelection.LeaderCallbacks{
				OnStartedLeading: func(c context.Context) { log.Printf("%s: started leading", *id); <-c.Done() },
				OnStoppedLeading: func() { log.Printf("%s: stopped leading", *id) },
				OnNewLeader:      func(l string) { log.Printf("%s: leader is %s", *id, l) },
			},
		})
	default:
		log.Fatalf("unknown mode %q", *mode)
	}
}
