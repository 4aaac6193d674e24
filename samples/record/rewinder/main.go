// rewinder: a deliberately buggy "cleanup operator" for the kubesift watch-rewind and
// endpoints-phantom-recreate recordings, built against client-go v0.23.16 (like the lab's leclient).
//
// For each resource (services, endpoints) it lists once, stores the list resourceVersion as a
// "checkpoint", then watches with short timeoutSeconds. Normally it resumes from the last
// resourceVersion it saw (correct), but every -rewind-every-th restart it resumes from the
// checkpoint it wrote at startup and never updates (THE BUG): the requested resourceVersion goes
// backwards and the apiserver replays old events. With -rewind-at (a slow rewinder) it rewinds
// instead only at the first watch restart after each of the given times.
// On a Service DELETED event it "cleans up" by deleting the Endpoints of that name (the second
// bug: it trusts replayed events). When the Service still exists, the real endpoints controller
// recreates the Endpoints: a phantom delete/recreate.
// When the watch answers with an in-stream ERROR (410 Gone, "too old resource version") it does
// what a client-go reflector does: list with the stale resourceVersion first (limit=500, which the
// apiserver serves from etcd -> 410 Expired once compacted), then list with resourceVersion="".
package main

import (
	"context"
	"flag"
	"fmt"
	"log"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
)

func main() {
	kubeconfig := flag.String("kubeconfig", "", "kubeconfig path")
	ns := flag.String("namespace", "lab", "namespace")
	dur := flag.Duration("for", 60*time.Second, "how long to run")
	watchTimeout := flag.Int64("watch-timeout", 5, "watch timeoutSeconds")
	rewindEvery := flag.Int("rewind-every", 2, "every N-th watch restart resumes from the startup checkpoint (0: never)")
	rewindAt := flag.String("rewind-at", "", "comma-separated RFC 3339 times: the first watch restart after each resumes from the startup checkpoint (replaces -rewind-every)")
	deleteEndpoints := flag.Bool("delete-endpoints-on-service-delete", true, "delete Endpoints <name> on a Service DELETED event")
	userAgent := flag.String("user-agent", "svc-cleanup-operator/v0.3.1 (linux/amd64) client-go/v0.23.16", "HTTP User-Agent")
	flag.Parse()
	rest.SetDefaultWarningHandler(rest.NoWarnings{})
	cfg, err := clientcmd.BuildConfigFromFlags("", *kubeconfig)
	if err != nil {
		log.Fatal(err)
	}
	cfg.UserAgent = *userAgent
	var at []time.Time
	if *rewindAt != "" {
		for _, f := range strings.Split(*rewindAt, ",") {
			t, err := time.Parse(time.RFC3339, f)
			if err != nil {
				log.Fatalf("-rewind-at: %v", err)
			}
			at = append(at, t)
		}
		*rewindEvery = 0
	}
	cs := kubernetes.NewForConfigOrDie(cfg)
	ctx, cancel := context.WithTimeout(context.Background(), *dur)
	defer cancel()
	done := make(chan struct{})
	for _, res := range []string{"services", "endpoints"} {
		go func(res string) {
			defer func() { done <- struct{}{} }()
			loop(ctx, cs, res, *ns, *watchTimeout, *rewindEvery, at, *deleteEndpoints && res == "services")
		}(res)
	}
	<-done
	<-done
}

func list(ctx context.Context, cs *kubernetes.Clientset, res, ns, rv string, limit int64) (string, error) {
	opts := metav1.ListOptions{ResourceVersion: rv, Limit: limit}
	if res == "services" {
		l, err := cs.CoreV1().Services(ns).List(ctx, opts)
		if err != nil {
			return "", err
		}
		return l.ResourceVersion, nil
	}
	l, err := cs.CoreV1().Endpoints(ns).List(ctx, opts)
	if err != nil {
		return "", err
	}
	return l.ResourceVersion, nil
}

func loop(ctx context.Context, cs *kubernetes.Clientset, res, ns string, timeout int64, rewindEvery int, rewindAt []time.Time, act bool) {
	checkpoint, err := list(ctx, cs, res, ns, "", 500)
	if err != nil {
		log.Printf("%s: initial list: %v", res, err)
		return
	}
	log.Printf("%s: listed, checkpoint rv=%s", res, checkpoint)
	last := checkpoint
	for restart := 1; ctx.Err() == nil; restart++ {
		from, why := last, "last seen"
		if rewindEvery > 0 && restart%rewindEvery == 0 {
			from, why = checkpoint, "CHECKPOINT (rewind)"
		}
		if len(rewindAt) > 0 && !time.Now().Before(rewindAt[0]) {
			from, why = checkpoint, "CHECKPOINT (rewind)"
			for len(rewindAt) > 0 && !time.Now().Before(rewindAt[0]) {
				rewindAt = rewindAt[1:]
			}
		}
		t := timeout
		opts := metav1.ListOptions{ResourceVersion: from, TimeoutSeconds: &t}
		var w watch.Interface
		if res == "services" {
			w, err = cs.CoreV1().Services(ns).Watch(ctx, opts)
		} else {
			w, err = cs.CoreV1().Endpoints(ns).Watch(ctx, opts)
		}
		if err != nil {
			log.Printf("%s: watch from %s: %v", res, from, err)
			time.Sleep(time.Second)
			continue
		}
		start := time.Now()
		n, gone := 0, false
		for ev := range w.ResultChan() {
			if ev.Type == watch.Error {
				gone = true
				log.Printf("%s: watch from rv=%s (%s): ERROR event %v", res, from, why, apierrors.FromObject(ev.Object))
				break
			}
			m, ok := ev.Object.(metav1.Object)
			if !ok {
				continue
			}
			last = m.GetResourceVersion()
			n++
			if act && ev.Type == watch.Deleted {
				err := cs.CoreV1().Endpoints(ns).Delete(ctx, m.GetName(), metav1.DeleteOptions{})
				log.Printf("%s: saw DELETED service %s/%s rv=%s -> cleanup: delete endpoints %s/%s: %v",
					res, ns, m.GetName(), m.GetResourceVersion(), ns, m.GetName(), errStr(err))
			}
		}
		w.Stop()
		log.Printf("%s: watch from rv=%s (%s) ended after %d events in %s, last rv=%s", res, from, why, n, time.Since(start).Round(time.Millisecond), last)
		if gone && ctx.Err() == nil {
			// reflector behaviour after a 410 in the stream: list "at least as fresh as" the RV first
			if _, err := list(ctx, cs, res, ns, from, 500); err != nil {
				log.Printf("%s: list rv=%s limit=500: %v (expired=%v)", res, from, err, apierrors.IsResourceExpired(err))
			} else {
				log.Printf("%s: list rv=%s limit=500: ok", res, from)
			}
			if rv, err := list(ctx, cs, res, ns, "", 500); err == nil {
				log.Printf("%s: relisted, rv=%s (checkpoint stays %s)", res, rv, checkpoint)
				last = rv
			}
		}
	}
}

func errStr(err error) string {
	if err == nil {
		return "ok"
	}
	return fmt.Sprint(err)
}
