// trickyclient: healthy clients that naive detectors confuse, for the kubesift tricky-healthy
// recording, built against client-go v0.33.13 (current line).
//
// One process runs the client-go informers given by -informer (repeatable), all through one
// rest.Config: one username, one User-Agent, one source address, like the informers of one
// controller. A spec is RESOURCE[|label=SELECTOR][|metadata]: RESOURCE is services, endpoints or
// endpointslices; label=SELECTOR makes a label-selected informer; metadata makes a metadata-only
// informer (k8s.io/client-go/metadata, PartialObjectMetadata: the request path and query are the
// same as the full informer's, only the Accept header differs).
//
// Each informer is cache.NewInformerWithOptions (reflector + DeltaFIFO), which resumes every watch
// from the newest resourceVersion it was sent and relists after a 410. Its watch timeout (client-go:
// random in [5 min, 10 min]) is shortened to random in [-watch-timeout, 2 × -watch-timeout] through
// the ListerWatcher, so that restarts happen during a short recording.
// -source-ip binds the client's sockets to that local address (127.0.0.x), like the same component
// on another node. WatchList streams (sendInitialEvents=true, resourceVersionMatch=NotOlderThan) are
// switched on by client-go's own feature gate: KUBE_FEATURE_WatchListClient=true in the environment.
package main

import (
	"context"
	"flag"
	"fmt"
	"log"
	"math/rand"
	"net"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/clientcmd"
)

type specList []string

func (s *specList) String() string     { return strings.Join(*s, " ") }
func (s *specList) Set(v string) error { *s = append(*s, v); return nil }

var resources = map[string]struct {
	gvr schema.GroupVersionResource
	obj runtime.Object
}{
	"services":       {schema.GroupVersionResource{Version: "v1", Resource: "services"}, &corev1.Service{}},
	"endpoints":      {schema.GroupVersionResource{Version: "v1", Resource: "endpoints"}, &corev1.Endpoints{}},
	"endpointslices": {schema.GroupVersionResource{Group: "discovery.k8s.io", Version: "v1", Resource: "endpointslices"}, &discoveryv1.EndpointSlice{}},
}

func main() {
	kubeconfig := flag.String("kubeconfig", "", "kubeconfig path")
	ns := flag.String("namespace", "", "namespace (empty: all)")
	dur := flag.Duration("for", 60*time.Second, "how long to run")
	watchTimeout := flag.Duration("watch-timeout", 20*time.Second, "watch timeoutSeconds is random in [this, 2 × this]")
	userAgent := flag.String("user-agent", "", "HTTP User-Agent")
	sourceIP := flag.String("source-ip", "", "local address to connect from (e.g. 127.0.0.11)")
	var specs specList
	flag.Var(&specs, "informer", "RESOURCE[|label=SELECTOR][|metadata] (repeatable)")
	flag.Parse()
	rest.SetDefaultWarningHandler(rest.NoWarnings{})
	cfg, err := clientcmd.BuildConfigFromFlags("", *kubeconfig)
	if err != nil {
		log.Fatal(err)
	}
	if *userAgent != "" {
		cfg.UserAgent = *userAgent
	}
	if *sourceIP != "" {
		ip := net.ParseIP(*sourceIP)
		if ip == nil {
			log.Fatalf("-source-ip %q: not an IP address", *sourceIP)
		}
		cfg.Dial = (&net.Dialer{LocalAddr: &net.TCPAddr{IP: ip}, Timeout: 30 * time.Second, KeepAlive: 30 * time.Second}).DialContext
	}
	cs := kubernetes.NewForConfigOrDie(cfg)
	mc := metadata.NewForConfigOrDie(cfg)
	ctx, cancel := context.WithTimeout(context.Background(), *dur)
	defer cancel()
	if len(specs) == 0 {
		log.Fatal("no -informer given")
	}
	for _, spec := range specs {
		lw, obj, err := listWatch(cs, mc, *ns, spec, *watchTimeout)
		if err != nil {
			log.Fatal(err)
		}
		_, ctrl := cache.NewInformerWithOptions(cache.InformerOptions{
			ListerWatcher: lw,
			ObjectType:    obj,
			Handler:       logHandler(spec),
		})
		go ctrl.RunWithContext(ctx)
	}
	<-ctx.Done()
}

// listWatch builds the ListerWatcher of one spec.
func listWatch(cs *kubernetes.Clientset, mc metadata.Interface, ns, spec string, watchTimeout time.Duration) (cache.ListerWatcher, runtime.Object, error) {
	parts := strings.Split(spec, "|")
	res, ok := resources[parts[0]]
	if !ok {
		return nil, nil, fmt.Errorf("-informer %q: unknown resource %q", spec, parts[0])
	}
	selector, metaOnly := "", false
	for _, p := range parts[1:] {
		switch {
		case strings.HasPrefix(p, "label="):
			selector = strings.TrimPrefix(p, "label=")
		case p == "metadata":
			metaOnly = true
		default:
			return nil, nil, fmt.Errorf("-informer %q: unknown option %q", spec, p)
		}
	}
	tweak := func(o *metav1.ListOptions) { o.LabelSelector = selector }
	var list func(context.Context, metav1.ListOptions) (runtime.Object, error)
	var watchFn func(context.Context, metav1.ListOptions) (watch.Interface, error)
	obj := res.obj
	if metaOnly {
		ri := mc.Resource(res.gvr).Namespace(ns)
		list = func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
			tweak(&o)
			return ri.List(ctx, o)
		}
		watchFn = func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
			tweak(&o)
			return ri.Watch(ctx, o)
		}
		obj = &metav1.PartialObjectMetadata{}
	} else {
		var client cache.Getter = cs.CoreV1().RESTClient()
		if res.gvr.Group == "discovery.k8s.io" {
			client = cs.DiscoveryV1().RESTClient()
		}
		typed := cache.NewFilteredListWatchFromClient(client, res.gvr.Resource, ns, tweak)
		list, watchFn = typed.ListWithContextFunc, typed.WatchFuncWithContext
	}
	return &cache.ListWatch{
		ListWithContextFunc: list,
		WatchFuncWithContext: func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
			t := int64((watchTimeout + time.Duration(rand.Int63n(int64(watchTimeout)))).Seconds())
			o.TimeoutSeconds = &t
			return watchFn(ctx, o)
		},
	}, obj, nil
}

// logHandler logs every notification of one informer (what it would act on).
func logHandler(spec string) cache.ResourceEventHandlerFuncs {
	name := func(obj interface{}) string {
		if d, ok := obj.(cache.DeletedFinalStateUnknown); ok {
			obj = d.Obj
		}
		if m, err := meta.Accessor(obj); err == nil {
			return m.GetNamespace() + "/" + m.GetName() + " rv=" + m.GetResourceVersion()
		}
		return fmt.Sprintf("%T", obj)
	}
	return cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj interface{}) { log.Printf("[%s] add %s", spec, name(obj)) },
		UpdateFunc: func(_, obj interface{}) { log.Printf("[%s] update %s", spec, name(obj)) },
		DeleteFunc: func(obj interface{}) { log.Printf("[%s] delete %s", spec, name(obj)) },
	}
}
