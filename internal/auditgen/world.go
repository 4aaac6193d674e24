package auditgen

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/url"
	"strings"
	"time"

	authnv1 "k8s.io/api/authentication/v1"
	coordv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
)

const (
	k8sVersion   = "v1.33.13"
	controlPlane = "10.0.0.10"
)

// resType describes one API resource as the apiserver audits it.
type resType struct {
	resource   string
	group      string // "" for core
	version    string
	kind       string
	namespaced bool
	rr         bool // audited at RequestResponse level by the policy
	deprecated bool // v1 Endpoints: k8s.io/deprecated annotation
	prefix     string
	qualified  string // resource[.group] as used in Status messages
}

func newResType(resource, group, version, kind string, namespaced, rr bool) *resType {
	rt := &resType{resource: resource, group: group, version: version, kind: kind, namespaced: namespaced, rr: rr}
	if group == "" {
		rt.prefix = "/api/" + version
		rt.qualified = resource
	} else {
		rt.prefix = "/apis/" + group + "/" + version
		rt.qualified = resource + "." + group
	}
	return rt
}

var (
	rtPods           = newResType("pods", "", "v1", "Pod", true, true)
	rtEndpoints      = newResType("endpoints", "", "v1", "Endpoints", true, true)
	rtEndpointSlices = newResType("endpointslices", "discovery.k8s.io", "v1", "EndpointSlice", true, true)
	rtServices       = newResType("services", "", "v1", "Service", true, true)
	rtConfigMaps     = newResType("configmaps", "", "v1", "ConfigMap", true, true)
	rtLeases         = newResType("leases", "coordination.k8s.io", "v1", "Lease", true, true)
	rtSecrets        = newResType("secrets", "", "v1", "Secret", true, false)
	rtNodes          = newResType("nodes", "", "v1", "Node", false, false)
	rtEvents         = newResType("events", "", "v1", "Event", true, false)
	rtEventsV1       = newResType("events", "events.k8s.io", "v1", "Event", true, false)
	rtServiceAccts   = newResType("serviceaccounts", "", "v1", "ServiceAccount", true, false)
	rtNamespaces     = newResType("namespaces", "", "v1", "Namespace", false, false)
	rtDeployments    = newResType("deployments", "apps", "v1", "Deployment", true, false)
	rtReplicaSets    = newResType("replicasets", "apps", "v1", "ReplicaSet", true, false)
	rtSAR            = newResType("subjectaccessreviews", "authorization.k8s.io", "v1", "SubjectAccessReview", false, false)
	rtTokenReviews   = newResType("tokenreviews", "authentication.k8s.io", "v1", "TokenReview", false, false)
	rtPVCs           = newResType("persistentvolumeclaims", "", "v1", "PersistentVolumeClaim", true, false)
	rtJobs           = newResType("jobs", "batch", "v1", "Job", true, false)
	rtCRDs           = newResType("customresourcedefinitions", "apiextensions.k8s.io", "v1", "CustomResourceDefinition", false, false)
	rtClusterRoles   = newResType("clusterroles", "rbac.authorization.k8s.io", "v1", "ClusterRole", false, false)
	rtRoleBindings   = newResType("rolebindings", "rbac.authorization.k8s.io", "v1", "RoleBinding", true, false)
	rtStatefulSets   = newResType("statefulsets", "apps", "v1", "StatefulSet", true, false)
	rtDaemonSets     = newResType("daemonsets", "apps", "v1", "DaemonSet", true, false)
)

func init() { rtEndpoints.deprecated = true }

// Annotation variants of an actor.
const (
	annDeprecated = 1 << iota
	annPodSecurity
	annVariants = 4
)

// actor is an authenticated client: user info, source IP and user agent are
// pre-rendered, as are its authorization annotations.
type actor struct {
	username string
	hdr      []byte // "user":{...},"sourceIPs":[...],"userAgent":"..."
	ann      [annVariants][]byte
}

func newActor(u authnv1.UserInfo, ip, ua, reason string) *actor {
	a := &actor{username: u.Username}
	ub, err := json.Marshal(u)
	if err != nil {
		panic(err)
	}
	ips, _ := json.Marshal([]string{ip})
	uab, _ := json.Marshal(ua)
	a.hdr = append(a.hdr, `"user":`...)
	a.hdr = append(a.hdr, ub...)
	a.hdr = append(a.hdr, `,"sourceIPs":`...)
	a.hdr = append(a.hdr, ips...)
	a.hdr = append(a.hdr, `,"userAgent":`...)
	a.hdr = append(a.hdr, uab...)
	for v := 0; v < annVariants; v++ {
		m := map[string]string{
			"authorization.k8s.io/decision": "allow",
			"authorization.k8s.io/reason":   reason,
		}
		if v&annDeprecated != 0 {
			m["k8s.io/deprecated"] = "true"
		}
		if v&annPodSecurity != 0 {
			m["pod-security.kubernetes.io/enforce-policy"] = "privileged:latest"
		}
		a.ann[v], _ = json.Marshal(m)
	}
	return a
}

func rbacReason(bindingKind, binding, roleKind, role, subjKind, subj string) string {
	return fmt.Sprintf("RBAC: allowed by %s %q of %s %q to %s %q", bindingKind, binding, roleKind, role, subjKind, subj)
}

func saUser(r *rand.Rand, ns, name string) authnv1.UserInfo {
	return authnv1.UserInfo{
		Username: "system:serviceaccount:" + ns + ":" + name,
		UID:      randUUID(r),
		Groups:   []string{"system:serviceaccounts", "system:serviceaccounts:" + ns, "system:authenticated"},
		Extra: map[string]authnv1.ExtraValue{
			"authentication.kubernetes.io/credential-id": {"JTI=" + randUUID(r)},
			"authentication.kubernetes.io/node-name":     {"cp-1"},
		},
	}
}

func randUUID(r *rand.Rand) string {
	return string(appendUUID(nil, r.Uint64(), r.Uint64()))
}

func randHex(r *rand.Rand, n int) string {
	b := make([]byte, n)
	for i := range b {
		b[i] = hexDigits[r.IntN(16)]
	}
	return string(b)
}

const alnum = "bcdfghjklmnpqrstvwxz2456789"

func randSuffix(r *rand.Rand, n int) string {
	b := make([]byte, n)
	for i := range b {
		b[i] = alnum[r.IntN(len(alnum))]
	}
	return string(b)
}

// object is one API object with pre-rendered bodies.
type object struct {
	rt             *resType
	ns, name       string
	uid            string
	rv             int64
	full           []*tmpl // variants of the whole object (with kind/apiVersion)
	item           *tmpl   // as a list item (no kind/apiVersion)
	patch          *tmpl   // a typical patch request body, if any
	cur            int     // current variant
	size           int
	podIP, podNode string // pods only
	// leader election state for lock objects
	holders []string
	holder  int
	trans   int64
}

type node struct {
	name, ip string
	kubelet  *actor
	lease    *object
	pods     []*object
}

type service struct {
	ns        *namespace
	name      string
	svc       *object
	endpoints *object
	slice     *object
	pods      []*object
	selector  string // URL-encoded label selector
}

type namespace struct {
	name       string
	services   []*service
	pods       []*object
	configMaps []*object
	leases     []*object
	secrets    []string
	operator   *actor // legacy leader election client, if any
	epLock     *object
	cmLock     *object
	events     *actor
}

type world struct {
	nodes      []*node
	namespaces []*namespace
	appNS      []*namespace
	pods       []*object

	apiserver, kcm, kcmLeader, scheduler, schedLeader      *actor
	epCtl, epsCtl, nodeCtl, rsCtl, gcCtl, nsCtl, deployCtl *actor
	proxy, coredns, prometheus, metrics, autoscaler        *actor
	admin, alice, ciBot, dispatcher                        *actor

	kcmLease, schedLease *object
	autoscalerStatus     *object
	crds                 []string
	clusterRoles         []string

	large []largeBody
}

type largeBody struct {
	kind int // 0 pod list, 1 configmap
	body *tmpl
	obj  *object // for configmaps
	size int
}

var appNames = []string{"checkout", "payments", "catalog", "search", "frontend", "auth", "orders", "inventory",
	"shipping", "notifications", "recommendations", "reviews", "cart", "gateway", "billing", "analytics",
	"ledger", "media", "profile", "pricing"}

var nsNames = []string{"shop", "platform", "data", "payments", "identity", "web", "ml", "ops", "team-a", "team-b",
	"team-c", "staging", "observability", "ingress", "batch", "edge", "core", "search", "ads", "mobile"}

func buildWorld(r *rand.Rand, opt *Options, rvStart int64) *world {
	w := &world{}
	start := opt.Start
	created := func() time.Time {
		return start.Add(-time.Duration(r.Int64N(int64(30 * 24 * time.Hour)))).Truncate(time.Second).UTC()
	}
	// Most objects were written recently; a few long ago.
	oldRV := func() int64 {
		if r.IntN(8) == 0 {
			return 1 + r.Int64N(rvStart-1)
		}
		return rvStart - 1 - r.Int64N(200_000)
	}
	cpAllow := rbacReason("ClusterRoleBinding", "system:kube-controller-manager", "ClusterRole", "system:kube-controller-manager", "User", "system:kube-controller-manager")
	kcmUser := authnv1.UserInfo{Username: "system:kube-controller-manager", Groups: []string{"system:authenticated"},
		Extra: map[string]authnv1.ExtraValue{"authentication.kubernetes.io/credential-id": {"X509SHA256=" + randHex(r, 64)}}}
	kcmUA := "kube-controller-manager/" + k8sVersion + " (linux/amd64) kubernetes/$Format"
	w.apiserver = newActor(authnv1.UserInfo{Username: "system:apiserver", UID: randUUID(r), Groups: []string{"system:authenticated", "system:masters"}},
		"127.0.0.1", "kube-apiserver/"+k8sVersion+" (linux/amd64) kubernetes/$Format", "")
	w.kcm = newActor(kcmUser, controlPlane, kcmUA+"/shared-informers", cpAllow)
	w.kcmLeader = newActor(kcmUser, controlPlane, kcmUA+"/leader-election", cpAllow)
	schedUser := authnv1.UserInfo{Username: "system:kube-scheduler", Groups: []string{"system:authenticated"},
		Extra: map[string]authnv1.ExtraValue{"authentication.kubernetes.io/credential-id": {"X509SHA256=" + randHex(r, 64)}}}
	schedAllow := rbacReason("ClusterRoleBinding", "system:kube-scheduler", "ClusterRole", "system:kube-scheduler", "User", "system:kube-scheduler")
	w.scheduler = newActor(schedUser, controlPlane, "kube-scheduler/"+k8sVersion+" (linux/amd64) kubernetes/$Format/scheduler", schedAllow)
	w.schedLeader = newActor(schedUser, controlPlane, "kube-scheduler/"+k8sVersion+" (linux/amd64) kubernetes/$Format/leader-election", schedAllow)
	ctl := func(name string) *actor {
		u := saUser(r, "kube-system", name)
		return newActor(u, controlPlane, kcmUA+"/system:serviceaccount:kube-system:"+name,
			rbacReason("ClusterRoleBinding", "system:controller:"+name, "ClusterRole", "system:controller:"+name, "ServiceAccount", name+"/kube-system"))
	}
	w.epCtl = ctl("endpoint-controller")
	w.epsCtl = ctl("endpointslice-controller")
	w.nodeCtl = ctl("node-controller")
	w.rsCtl = ctl("replicaset-controller")
	w.gcCtl = ctl("generic-garbage-collector")
	w.nsCtl = ctl("namespace-controller")
	w.deployCtl = ctl("deployment-controller")
	w.proxy = newActor(authnv1.UserInfo{Username: "system:kube-proxy", Groups: []string{"system:authenticated"},
		Extra: map[string]authnv1.ExtraValue{"authentication.kubernetes.io/credential-id": {"X509SHA256=" + randHex(r, 64)}}},
		"10.0.1.11", "kube-proxy/"+k8sVersion+" (linux/amd64) kubernetes/$Format",
		rbacReason("ClusterRoleBinding", "system:node-proxier", "ClusterRole", "system:node-proxier", "User", "system:kube-proxy"))
	w.coredns = newActor(saUser(r, "kube-system", "coredns"), "10.244.0.3", "coredns/v1.12.1 (linux/amd64) kubernetes/$Format",
		rbacReason("ClusterRoleBinding", "system:coredns", "ClusterRole", "system:coredns", "ServiceAccount", "coredns/kube-system"))
	w.prometheus = newActor(saUser(r, "observability", "prometheus"), "10.244.7.21", "Prometheus/2.53.1",
		rbacReason("ClusterRoleBinding", "prometheus", "ClusterRole", "prometheus", "ServiceAccount", "prometheus/observability"))
	w.metrics = newActor(saUser(r, "kube-system", "metrics-server"), "10.244.2.9", "metrics-server/v0.7.2 (linux/amd64) kubernetes/$Format",
		rbacReason("ClusterRoleBinding", "system:metrics-server", "ClusterRole", "system:metrics-server", "ServiceAccount", "metrics-server/kube-system"))
	w.autoscaler = newActor(saUser(r, "kube-system", "cluster-autoscaler"), "10.244.1.5", "cluster-autoscaler/v1.33.0 (linux/amd64) kubernetes/$Format",
		rbacReason("ClusterRoleBinding", "cluster-autoscaler", "ClusterRole", "cluster-autoscaler", "ServiceAccount", "cluster-autoscaler/kube-system"))
	w.admin = newActor(authnv1.UserInfo{Username: "admin", UID: "1000", Groups: []string{"system:masters", "system:authenticated"}},
		"192.168.10.23", "kubectl/v1.33.1 (linux/amd64) kubernetes/8adc0f0", "")
	w.alice = newActor(authnv1.UserInfo{Username: "oidc:alice@example.com", Groups: []string{"oidc:sre", "oidc:dev", "system:authenticated"},
		Extra: map[string]authnv1.ExtraValue{"authentication.kubernetes.io/credential-id": {"JTI=" + randUUID(r)}}},
		"192.168.10.57", "kubectl/v1.32.4 (darwin/arm64) kubernetes/59526cd",
		rbacReason("ClusterRoleBinding", "sre-admin", "ClusterRole", "cluster-admin", "Group", "oidc:sre"))
	w.ciBot = newActor(saUser(r, "ci", "deployer"), "10.244.9.14", "argocd-application-controller/v2.12.3",
		rbacReason("ClusterRoleBinding", "ci-deployer", "ClusterRole", "cluster-admin", "ServiceAccount", "deployer/ci"))
	w.dispatcher = newActor(authnv1.UserInfo{Username: "admin", UID: "1000", Groups: []string{"system:masters", "system:authenticated"}},
		"192.168.10.23", "kubectl-dispatcher/v1.0 (linux/amd64)", "")

	// Nodes and node leases.
	kubeNodeLease := &namespace{name: "kube-node-lease"}
	for i := 0; i < opt.Nodes; i++ {
		n := &node{name: fmt.Sprintf("ip-10-0-%d-%d.ec2.internal", 1+i/200, 10+i%200), ip: fmt.Sprintf("10.0.%d.%d", 1+i/200, 10+i%200)}
		n.kubelet = newActor(authnv1.UserInfo{Username: "system:node:" + n.name, Groups: []string{"system:nodes", "system:authenticated"},
			Extra: map[string]authnv1.ExtraValue{"authentication.kubernetes.io/credential-id": {"X509SHA256=" + randHex(r, 64)}}},
			n.ip, "kubelet/"+k8sVersion+" (linux/amd64) kubernetes/8adc0f0", "")
		n.lease = leaseObject(r, "kube-node-lease", n.name, n.name, 40, created(), oldRV(), "kubelet", &metav1.OwnerReference{APIVersion: "v1", Kind: "Node", Name: n.name, UID: types.UID(randUUID(r))})
		kubeNodeLease.leases = append(kubeNodeLease.leases, n.lease)
		w.nodes = append(w.nodes, n)
	}
	kubeSystem := &namespace{name: "kube-system"}
	w.kcmLease = leaseObject(r, "kube-system", "kube-controller-manager", "cp-1_"+randUUID(r), 15, created(), oldRV(), "kube-controller-manager", nil)
	w.schedLease = leaseObject(r, "kube-system", "kube-scheduler", "cp-1_"+randUUID(r), 15, created(), oldRV(), "kube-scheduler", nil)
	kubeSystem.leases = append(kubeSystem.leases, w.kcmLease, w.schedLease)
	kubeSystem.configMaps = append(kubeSystem.configMaps, configMapObject(r, "kube-system", "kube-root-ca.crt", created(), oldRV(), map[string]string{"ca.crt": fakeCert(r)}, false))
	w.autoscalerStatus = configMapObject(r, "kube-system", "cluster-autoscaler-status", created(), oldRV(),
		map[string]string{"status": "time: " + sentTS + "\nautoscalerStatus: Running\nclusterWide:\n  health:\n    status: Healthy\n    nodeCounts:\n      registered:\n        total: " + fmt.Sprint(opt.Nodes) + "\n        ready: " + fmt.Sprint(opt.Nodes) + "\n        notStarted: 0\n      longUnregistered: 0\n      unregistered: 0\n    lastProbeTime: \"" + sentTS + "\"\n    lastTransitionTime: \"2026-10-02T11:03:55Z\"\n  scaleUp:\n    status: NoActivity\n    lastProbeTime: \"" + sentTS + "\"\n  scaleDown:\n    status: NoCandidates\n    lastProbeTime: \"" + sentTS + "\"\n"}, true)
	kubeSystem.configMaps = append(kubeSystem.configMaps, w.autoscalerStatus,
		configMapObject(r, "kube-system", "coredns", created(), oldRV(), map[string]string{"Corefile": ".:53 {\n    errors\n    health {\n       lameduck 5s\n    }\n    ready\n    kubernetes cluster.local in-addr.arpa ip6.arpa {\n       pods insecure\n       fallthrough in-addr.arpa ip6.arpa\n       ttl 30\n    }\n    prometheus :9153\n    forward . /etc/resolv.conf {\n       max_concurrent 1000\n    }\n    cache 30\n    loop\n    reload\n    loadbalance\n}\n"}, false))
	kubeSystem.secrets = []string{"bootstrap-token-abcdef", "cluster-autoscaler-token", "metrics-server-certs"}
	w.namespaces = append(w.namespaces, kubeSystem, kubeNodeLease)

	// Application namespaces.
	podSeq := 0
	for i := 0; i < opt.Namespaces; i++ {
		name := nsNames[i%len(nsNames)]
		if i >= len(nsNames) {
			name = fmt.Sprintf("%s-%d", name, i/len(nsNames))
		}
		ns := &namespace{name: name}
		ns.events = newActor(saUser(r, name, "default"), fmt.Sprintf("10.244.%d.%d", 10+i, 5), "kubectl/v1.33.1 (linux/amd64) kubernetes/8adc0f0", "")
		nsvc := 2 + r.IntN(4)
		for s := 0; s < nsvc; s++ {
			app := appNames[(i*3+s)%len(appNames)]
			svc := &service{ns: ns, name: app, selector: url.QueryEscape("app.kubernetes.io/name=" + app)}
			svcUID := randUUID(r)
			rsHash := randSuffix(r, 10)
			rsUID := randUUID(r)
			npods := 2 + r.IntN(9)
			port := int32([]int{8080, 8443, 9000, 3000, 5000}[r.IntN(5)])
			image := fmt.Sprintf("registry.example.com/%s/%s:%d.%d.%d", name, app, 1+r.IntN(3), r.IntN(20), r.IntN(40))
			for p := 0; p < npods; p++ {
				n := w.nodes[r.IntN(len(w.nodes))]
				podSeq++
				pod := podObject(r, ns.name, app, rsHash, rsUID, image, port, n, fmt.Sprintf("10.244.%d.%d", (podSeq/250)%250, 2+podSeq%250), created(), oldRV())
				svc.pods = append(svc.pods, pod)
				n.pods = append(n.pods, pod)
				ns.pods = append(ns.pods, pod)
				w.pods = append(w.pods, pod)
			}
			svc.svc = serviceObject(r, ns.name, app, svcUID, port, created(), oldRV())
			svc.endpoints = endpointsObject(r, ns.name, app, port, svc.pods, created(), oldRV())
			svc.slice = endpointSliceObject(r, ns.name, app, svcUID, port, svc.pods, created(), oldRV())
			ns.services = append(ns.services, svc)
			ns.configMaps = append(ns.configMaps, configMapObject(r, ns.name, app+"-config", created(), oldRV(), appConfig(r, app), false))
			ns.secrets = append(ns.secrets, app+"-tls", app+"-db-credentials")
		}
		ns.configMaps = append(ns.configMaps, configMapObject(r, ns.name, "kube-root-ca.crt", created(), oldRV(), map[string]string{"ca.crt": fakeCert(r)}, false))
		ns.leases = append(ns.leases, leaseObject(r, ns.name, ns.services[0].name+"-leader", ns.services[0].name+"-"+randSuffix(r, 10)+"-"+randSuffix(r, 5), 15, created(), oldRV(), ns.services[0].name, nil))
		if i%2 == 0 {
			op := ns.services[0].name + "-operator"
			ns.operator = newActor(saUser(r, ns.name, op), fmt.Sprintf("10.244.%d.%d", 10+i, 77), op+"/v0.23.6 (linux/amd64) leader-election",
				rbacReason("RoleBinding", op+"-leader-election/"+ns.name, "Role", op+"-leader-election", "ServiceAccount", op+"/"+ns.name))
			holders := []string{op + "-" + randSuffix(r, 10) + "-" + randSuffix(r, 5), op + "-" + randSuffix(r, 10) + "-" + randSuffix(r, 5)}
			ns.epLock = lockEndpoints(r, ns.name, op+"-lock", op, holders, created(), oldRV())
			ns.cmLock = lockConfigMap(r, ns.name, op+"-cm-lock", op, holders, created(), oldRV())
		}
		w.namespaces = append(w.namespaces, ns)
		w.appNS = append(w.appNS, ns)
	}
	w.crds = []string{"certificates.cert-manager.io", "servicemonitors.monitoring.coreos.com", "prometheusrules.monitoring.coreos.com", "applications.argoproj.io", "ingressroutes.traefik.io"}
	w.clusterRoles = []string{"admin", "edit", "view", "cluster-admin", "system:discovery", "system:aggregate-to-view", "prometheus"}
	w.buildLarge(r, opt, created, oldRV)
	return w
}

func finish(o *object, full []any, item any) *object {
	for _, f := range full {
		o.full = append(o.full, compileJSON(f))
	}
	if item != nil {
		o.item = compileJSON(item)
	}
	o.size = o.full[0].size
	return o
}

func managed(manager, apiVersion, fields, sub string, t time.Time) metav1.ManagedFieldsEntry {
	return metav1.ManagedFieldsEntry{Manager: manager, Operation: metav1.ManagedFieldsOperationUpdate, APIVersion: apiVersion,
		Time: &metav1.Time{Time: t}, FieldsType: "FieldsV1", FieldsV1: &metav1.FieldsV1{Raw: []byte(fields)}, Subresource: sub}
}

func leaseObject(r *rand.Rand, ns, name, holder string, dur int32, created time.Time, rv int64, manager string, owner *metav1.OwnerReference) *object {
	o := &object{rt: rtLeases, ns: ns, name: name, uid: randUUID(r), rv: rv}
	acq := metav1.NewMicroTime(created.Add(time.Duration(r.IntN(1e6)) * time.Microsecond))
	renew := metav1.NewMicroTime(magicMicro)
	trans := int32(r.IntN(4))
	l := &coordv1.Lease{
		TypeMeta: metav1.TypeMeta{Kind: "Lease", APIVersion: "coordination.k8s.io/v1"},
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, UID: types.UID(o.uid), ResourceVersion: sentRV,
			CreationTimestamp: metav1.Time{Time: created},
			ManagedFields: []metav1.ManagedFieldsEntry{managed(manager, "coordination.k8s.io/v1",
				`{"f:spec":{"f:acquireTime":{},"f:holderIdentity":{},"f:leaseDurationSeconds":{},"f:leaseTransitions":{},"f:renewTime":{}}}`, "", magicSec)}},
		Spec: coordv1.LeaseSpec{HolderIdentity: &holder, LeaseDurationSeconds: &dur, AcquireTime: &acq, RenewTime: &renew, LeaseTransitions: &trans},
	}
	if owner != nil {
		l.OwnerReferences = []metav1.OwnerReference{*owner}
		l.Spec.AcquireTime, l.Spec.LeaseTransitions = nil, nil
		l.ManagedFields[0].FieldsV1.Raw = []byte(`{"f:metadata":{"f:ownerReferences":{".":{},"k:{\"uid\":\"` + string(owner.UID) + `\"}":{}}},"f:spec":{"f:holderIdentity":{},"f:leaseDurationSeconds":{},"f:renewTime":{}}}`)
	}
	item := *l
	item.TypeMeta = metav1.TypeMeta{}
	return finish(o, []any{l}, &item)
}

func configMapObject(r *rand.Rand, ns, name string, created time.Time, rv int64, data map[string]string, dynamic bool) *object {
	o := &object{rt: rtConfigMaps, ns: ns, name: name, uid: randUUID(r), rv: rv}
	mf := "kube-controller-manager"
	if dynamic {
		mf = "cluster-autoscaler"
	} else if name != "kube-root-ca.crt" {
		mf = "argocd-controller"
	}
	fields := `{"f:data":{`
	keys := sortedKeys(data)
	for j, k := range keys {
		if j > 0 {
			fields += ","
		}
		fields += `"f:` + k + `":{}`
	}
	fields += `}}`
	mtime := created
	if dynamic {
		mtime = magicSec
	}
	cm := &corev1.ConfigMap{
		TypeMeta: metav1.TypeMeta{Kind: "ConfigMap", APIVersion: "v1"},
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, UID: types.UID(o.uid), ResourceVersion: sentRV,
			CreationTimestamp: metav1.Time{Time: created},
			ManagedFields:     []metav1.ManagedFieldsEntry{managed(mf, "v1", fields, "", mtime)}},
		Data: data,
	}
	if name == "kube-root-ca.crt" {
		cm.Annotations = map[string]string{"kubernetes.io/description": "Contains a CA bundle that can be used to verify the kube-apiserver when using internal endpoints such as the internal service IP or kubernetes.default.svc. No other usage is guaranteed across distributions of Kubernetes clusters."}
	}
	item := *cm
	item.TypeMeta = metav1.TypeMeta{}
	return finish(o, []any{cm}, &item)
}

func sortedKeys(m map[string]string) []string {
	ks := make([]string, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	for i := 1; i < len(ks); i++ {
		for j := i; j > 0 && ks[j] < ks[j-1]; j-- {
			ks[j], ks[j-1] = ks[j-1], ks[j]
		}
	}
	return ks
}

func leaderRecord(holder string, dur int, acquire time.Time) string {
	return `{"holderIdentity":"` + holder + `","leaseDurationSeconds":` + fmt.Sprint(dur) + `,"acquireTime":"` + acquire.Format(time.RFC3339) +
		`","renewTime":"` + sentTS + `","leaderTransitions":` + sentTrans + `}`
}

const leaderAnn = "control-plane.alpha.kubernetes.io/leader"

func lockEndpoints(r *rand.Rand, ns, name, manager string, holders []string, created time.Time, rv int64) *object {
	o := &object{rt: rtEndpoints, ns: ns, name: name, uid: randUUID(r), rv: rv, holders: holders}
	ep := &corev1.Endpoints{
		TypeMeta: metav1.TypeMeta{Kind: "Endpoints", APIVersion: "v1"},
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, UID: types.UID(o.uid), ResourceVersion: sentRV,
			CreationTimestamp: metav1.Time{Time: created},
			Annotations:       map[string]string{leaderAnn: leaderRecord(sentHolder, 15, created)},
			ManagedFields: []metav1.ManagedFieldsEntry{managed(manager, "v1",
				`{"f:metadata":{"f:annotations":{".":{},"f:control-plane.alpha.kubernetes.io/leader":{}}}}`, "", magicSec)}},
	}
	item := *ep
	item.TypeMeta = metav1.TypeMeta{}
	return finish(o, []any{ep}, &item)
}

func lockConfigMap(r *rand.Rand, ns, name, manager string, holders []string, created time.Time, rv int64) *object {
	o := &object{rt: rtConfigMaps, ns: ns, name: name, uid: randUUID(r), rv: rv, holders: holders}
	cm := &corev1.ConfigMap{
		TypeMeta: metav1.TypeMeta{Kind: "ConfigMap", APIVersion: "v1"},
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, UID: types.UID(o.uid), ResourceVersion: sentRV,
			CreationTimestamp: metav1.Time{Time: created},
			Annotations:       map[string]string{leaderAnn: leaderRecord(sentHolder, 15, created)},
			ManagedFields: []metav1.ManagedFieldsEntry{managed(manager, "v1",
				`{"f:metadata":{"f:annotations":{".":{},"f:control-plane.alpha.kubernetes.io/leader":{}}}}`, "", magicSec)}},
	}
	item := *cm
	item.TypeMeta = metav1.TypeMeta{}
	return finish(o, []any{cm}, &item)
}

func appConfig(r *rand.Rand, app string) map[string]string {
	var b strings.Builder
	fmt.Fprintf(&b, "server:\n  port: 8080\n  shutdownTimeout: 30s\nlogging:\n  level: info\n  format: json\n")
	fmt.Fprintf(&b, "database:\n  host: %s-db.%s.svc.cluster.local\n  pool: %d\n", app, "data", 10+r.IntN(40))
	for i := 0; i < 6+r.IntN(20); i++ {
		fmt.Fprintf(&b, "feature_%s_%d: %v\n", randSuffix(r, 6), i, r.IntN(2) == 0)
	}
	return map[string]string{
		"application.yaml":            b.String(),
		"LOG_LEVEL":                   "info",
		"OTEL_EXPORTER_OTLP_ENDPOINT": "http://otel-collector.observability:4317",
	}
}

func fakeCert(r *rand.Rand) string {
	const b64 = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"
	var b strings.Builder
	b.WriteString("-----BEGIN CERTIFICATE-----\nMIIDBTCCAe2gAwIBAgIIM")
	for l := 0; l < 17; l++ {
		for i := 0; i < 64; i++ {
			if l == 0 && i < 21 {
				continue
			}
			b.WriteByte(b64[r.IntN(64)])
		}
		b.WriteByte('\n')
	}
	b.WriteString("-----END CERTIFICATE-----\n")
	return b.String()
}

func podObject(r *rand.Rand, ns, app, rsHash, rsUID, image string, port int32, n *node, ip string, created time.Time, rv int64) *object {
	name := app + "-" + rsHash + "-" + randSuffix(r, 5)
	o := &object{rt: rtPods, ns: ns, name: name, uid: randUUID(r), rv: rv, podIP: ip, podNode: n.name}
	vol := "kube-api-access-" + randSuffix(r, 5)
	started := created.Add(time.Duration(2+r.IntN(20)) * time.Second)
	t := true
	grace := int64(30)
	prio := int32(0)
	exp := int64(3607)
	mode := int32(420)
	pol := corev1.PreemptLowerPriority
	tol := int64(300)
	env := []corev1.EnvVar{
		{Name: "POD_NAME", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{APIVersion: "v1", FieldPath: "metadata.name"}}},
		{Name: "POD_NAMESPACE", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{APIVersion: "v1", FieldPath: "metadata.namespace"}}},
		{Name: "POD_IP", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{APIVersion: "v1", FieldPath: "status.podIP"}}},
		{Name: "GOMAXPROCS", ValueFrom: &corev1.EnvVarSource{ResourceFieldRef: &corev1.ResourceFieldSelector{ContainerName: app, Resource: "limits.cpu", Divisor: resource.MustParse("0")}}},
		{Name: "OTEL_SERVICE_NAME", Value: app},
		{Name: "DB_PASSWORD", ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: app + "-db-credentials"}, Key: "password"}}},
	}
	for i := 0; i < r.IntN(8); i++ {
		env = append(env, corev1.EnvVar{Name: fmt.Sprintf("FEATURE_%s", strings.ToUpper(randSuffix(r, 6))), Value: fmt.Sprint(r.IntN(2) == 0)})
	}
	containers := []corev1.Container{{
		Name: app, Image: image,
		Ports:   []corev1.ContainerPort{{Name: "http", ContainerPort: port, Protocol: corev1.ProtocolTCP}, {Name: "metrics", ContainerPort: 9090, Protocol: corev1.ProtocolTCP}},
		EnvFrom: []corev1.EnvFromSource{{ConfigMapRef: &corev1.ConfigMapEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: app + "-config"}}}},
		Env:     env,
		Resources: corev1.ResourceRequirements{
			Limits:   corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1"), corev1.ResourceMemory: resource.MustParse("512Mi")},
			Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100m"), corev1.ResourceMemory: resource.MustParse("256Mi")},
		},
		VolumeMounts: []corev1.VolumeMount{{Name: "config", ReadOnly: true, MountPath: "/etc/" + app}, {Name: vol, ReadOnly: true, MountPath: "/var/run/secrets/kubernetes.io/serviceaccount"}},
		LivenessProbe: &corev1.Probe{ProbeHandler: corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: "/healthz", Port: intstr.FromString("http"), Scheme: corev1.URISchemeHTTP}},
			InitialDelaySeconds: 10, TimeoutSeconds: 1, PeriodSeconds: 10, SuccessThreshold: 1, FailureThreshold: 3},
		ReadinessProbe: &corev1.Probe{ProbeHandler: corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: "/readyz", Port: intstr.FromString("http"), Scheme: corev1.URISchemeHTTP}},
			TimeoutSeconds: 1, PeriodSeconds: 5, SuccessThreshold: 1, FailureThreshold: 3},
		TerminationMessagePath: "/dev/termination-log", TerminationMessagePolicy: corev1.TerminationMessageReadFile, ImagePullPolicy: corev1.PullIfNotPresent,
		SecurityContext: &corev1.SecurityContext{RunAsNonRoot: &t, ReadOnlyRootFilesystem: &t, AllowPrivilegeEscalation: new(bool),
			Capabilities: &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}}},
	}}
	statuses := []corev1.ContainerStatus{{Name: app, State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: metav1.Time{Time: started}}},
		Ready: true, RestartCount: int32(r.IntN(3)), Image: image, ImageID: image[:strings.LastIndexByte(image, ':')] + "@sha256:" + randHex(r, 64),
		ContainerID: "containerd://" + randHex(r, 64), Started: &t,
		VolumeMounts: []corev1.VolumeMountStatus{{Name: "config", MountPath: "/etc/" + app, ReadOnly: true, RecursiveReadOnly: ptrTo(corev1.RecursiveReadOnlyDisabled)},
			{Name: vol, MountPath: "/var/run/secrets/kubernetes.io/serviceaccount", ReadOnly: true, RecursiveReadOnly: ptrTo(corev1.RecursiveReadOnlyDisabled)}}}}
	if r.IntN(3) == 0 {
		containers = append(containers, corev1.Container{Name: "envoy", Image: "docker.io/envoyproxy/envoy:v1.31.2",
			Args:  []string{"--config-path", "/etc/envoy/envoy.yaml", "--log-level", "warn"},
			Ports: []corev1.ContainerPort{{Name: "envoy-admin", ContainerPort: 9901, Protocol: corev1.ProtocolTCP}},
			Resources: corev1.ResourceRequirements{Limits: corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("128Mi")},
				Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("50m"), corev1.ResourceMemory: resource.MustParse("64Mi")}},
			VolumeMounts:           []corev1.VolumeMount{{Name: vol, ReadOnly: true, MountPath: "/var/run/secrets/kubernetes.io/serviceaccount"}},
			TerminationMessagePath: "/dev/termination-log", TerminationMessagePolicy: corev1.TerminationMessageReadFile, ImagePullPolicy: corev1.PullIfNotPresent})
		statuses = append(statuses, corev1.ContainerStatus{Name: "envoy", State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: metav1.Time{Time: started}}},
			Ready: true, Image: "docker.io/envoyproxy/envoy:v1.31.2", ImageID: "docker.io/envoyproxy/envoy@sha256:" + randHex(r, 64),
			ContainerID: "containerd://" + randHex(r, 64), Started: &t})
	}
	cond := func(ty corev1.PodConditionType) corev1.PodCondition {
		return corev1.PodCondition{Type: ty, Status: corev1.ConditionTrue, LastTransitionTime: metav1.Time{Time: started}}
	}
	pod := &corev1.Pod{
		TypeMeta: metav1.TypeMeta{Kind: "Pod", APIVersion: "v1"},
		ObjectMeta: metav1.ObjectMeta{Name: name, GenerateName: app + "-" + rsHash + "-", Namespace: ns, UID: types.UID(o.uid), ResourceVersion: sentRV,
			Generation: 1, CreationTimestamp: metav1.Time{Time: created},
			Labels:          map[string]string{"app.kubernetes.io/name": app, "app.kubernetes.io/part-of": ns, "pod-template-hash": rsHash, "version": "v" + image[strings.LastIndexByte(image, ':')+1:]},
			Annotations:     map[string]string{"prometheus.io/scrape": "true", "prometheus.io/port": "9090", "kubectl.kubernetes.io/restartedAt": created.Add(-time.Hour).Format(time.RFC3339)},
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: app + "-" + rsHash, UID: types.UID(rsUID), Controller: &t, BlockOwnerDeletion: &t}},
			ManagedFields: []metav1.ManagedFieldsEntry{
				managed("kube-controller-manager", "v1", `{"f:metadata":{"f:annotations":{".":{},"f:kubectl.kubernetes.io/restartedAt":{},"f:prometheus.io/port":{},"f:prometheus.io/scrape":{}},"f:generateName":{},"f:labels":{".":{},"f:app.kubernetes.io/name":{},"f:app.kubernetes.io/part-of":{},"f:pod-template-hash":{},"f:version":{}},"f:ownerReferences":{".":{},"k:{\"uid\":\"`+rsUID+`\"}":{}}},"f:spec":{"f:containers":{"k:{\"name\":\"`+app+`\"}":{".":{},"f:env":{},"f:envFrom":{},"f:image":{},"f:imagePullPolicy":{},"f:livenessProbe":{},"f:name":{},"f:ports":{},"f:readinessProbe":{},"f:resources":{},"f:securityContext":{},"f:terminationMessagePath":{},"f:terminationMessagePolicy":{},"f:volumeMounts":{}}},"f:dnsPolicy":{},"f:enableServiceLinks":{},"f:restartPolicy":{},"f:schedulerName":{},"f:securityContext":{},"f:serviceAccount":{},"f:serviceAccountName":{},"f:terminationGracePeriodSeconds":{},"f:volumes":{}}}`, "", created),
				managed("kubelet", "v1", `{"f:status":{"f:conditions":{"k:{\"type\":\"ContainersReady\"}":{".":{},"f:lastProbeTime":{},"f:lastTransitionTime":{},"f:status":{},"f:type":{}},"k:{\"type\":\"Initialized\"}":{".":{},"f:lastProbeTime":{},"f:lastTransitionTime":{},"f:status":{},"f:type":{}},"k:{\"type\":\"PodReadyToStartContainers\"}":{".":{},"f:lastProbeTime":{},"f:lastTransitionTime":{},"f:status":{},"f:type":{}},"k:{\"type\":\"Ready\"}":{".":{},"f:lastProbeTime":{},"f:lastTransitionTime":{},"f:status":{},"f:type":{}}},"f:containerStatuses":{},"f:hostIP":{},"f:hostIPs":{},"f:phase":{},"f:podIP":{},"f:podIPs":{".":{},"k:{\"ip\":\"`+ip+`\"}":{".":{},"f:ip":{}}},"f:startTime":{}}}`, "status", magicSec),
			}},
		Spec: corev1.PodSpec{
			Volumes: []corev1.Volume{
				{Name: "config", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: app + "-config"}, DefaultMode: &mode}}},
				{Name: vol, VolumeSource: corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{Sources: []corev1.VolumeProjection{
					{ServiceAccountToken: &corev1.ServiceAccountTokenProjection{ExpirationSeconds: &exp, Path: "token"}},
					{ConfigMap: &corev1.ConfigMapProjection{LocalObjectReference: corev1.LocalObjectReference{Name: "kube-root-ca.crt"}, Items: []corev1.KeyToPath{{Key: "ca.crt", Path: "ca.crt"}}}},
					{DownwardAPI: &corev1.DownwardAPIProjection{Items: []corev1.DownwardAPIVolumeFile{{Path: "namespace", FieldRef: &corev1.ObjectFieldSelector{APIVersion: "v1", FieldPath: "metadata.namespace"}}}}},
				}, DefaultMode: &mode}}},
			},
			Containers: containers, RestartPolicy: corev1.RestartPolicyAlways, TerminationGracePeriodSeconds: &grace, DNSPolicy: corev1.DNSClusterFirst,
			ServiceAccountName: app, DeprecatedServiceAccount: app, NodeName: n.name,
			SecurityContext: &corev1.PodSecurityContext{FSGroup: ptrTo(int64(2000)), RunAsUser: ptrTo(int64(1000))},
			Affinity: &corev1.Affinity{PodAntiAffinity: &corev1.PodAntiAffinity{PreferredDuringSchedulingIgnoredDuringExecution: []corev1.WeightedPodAffinityTerm{{Weight: 100,
				PodAffinityTerm: corev1.PodAffinityTerm{LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"app.kubernetes.io/name": app}}, TopologyKey: "kubernetes.io/hostname"}}}}},
			SchedulerName: "default-scheduler",
			Tolerations: []corev1.Toleration{{Key: "node.kubernetes.io/not-ready", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute, TolerationSeconds: &tol},
				{Key: "node.kubernetes.io/unreachable", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute, TolerationSeconds: &tol}},
			Priority: &prio, EnableServiceLinks: &t, PreemptionPolicy: &pol,
		},
		Status: corev1.PodStatus{Phase: corev1.PodRunning,
			Conditions: []corev1.PodCondition{cond("PodReadyToStartContainers"), cond("Initialized"), cond("Ready"), cond("ContainersReady"), cond("PodScheduled")},
			HostIP:     n.ip, HostIPs: []corev1.HostIP{{IP: n.ip}}, PodIP: ip, PodIPs: []corev1.PodIP{{IP: ip}},
			StartTime: &metav1.Time{Time: created}, ContainerStatuses: statuses, QOSClass: corev1.PodQOSBurstable},
	}
	item := *pod
	item.TypeMeta = metav1.TypeMeta{}
	o = finish(o, []any{pod}, &item)
	o.podIP, o.podNode = ip, n.name
	patch := map[string]any{
		"metadata": map[string]any{"uid": o.uid},
		"status": map[string]any{
			"$setElementOrder/conditions": []map[string]string{{"type": "PodReadyToStartContainers"}, {"type": "Initialized"}, {"type": "Ready"}, {"type": "ContainersReady"}, {"type": "PodScheduled"}},
			"conditions":                  []map[string]any{{"lastProbeTime": nil, "lastTransitionTime": sentTS, "status": "True", "type": "Ready"}, {"lastProbeTime": nil, "lastTransitionTime": sentTS, "status": "True", "type": "ContainersReady"}},
			"containerStatuses":           []map[string]any{{"containerID": statuses[0].ContainerID, "image": image, "imageID": statuses[0].ImageID, "lastState": map[string]any{}, "name": app, "ready": true, "restartCount": statuses[0].RestartCount, "started": true, "state": map[string]any{"running": map[string]any{"startedAt": sentTS}}}},
		},
	}
	o.patch = compileJSON(patch)
	return o
}

func ptrTo[T any](v T) *T { return &v }

func serviceObject(r *rand.Rand, ns, app, uid string, port int32, created time.Time, rv int64) *object {
	o := &object{rt: rtServices, ns: ns, name: app, uid: uid, rv: rv}
	ip := fmt.Sprintf("172.20.%d.%d", r.IntN(256), 1+r.IntN(254))
	fam := corev1.IPFamilyPolicySingleStack
	local := corev1.ServiceInternalTrafficPolicyCluster
	s := &corev1.Service{
		TypeMeta: metav1.TypeMeta{Kind: "Service", APIVersion: "v1"},
		ObjectMeta: metav1.ObjectMeta{Name: app, Namespace: ns, UID: types.UID(uid), ResourceVersion: sentRV, CreationTimestamp: metav1.Time{Time: created},
			Labels:        map[string]string{"app.kubernetes.io/name": app, "app.kubernetes.io/managed-by": "Helm"},
			Annotations:   map[string]string{"meta.helm.sh/release-name": app, "meta.helm.sh/release-namespace": ns},
			ManagedFields: []metav1.ManagedFieldsEntry{managed("helm", "v1", `{"f:metadata":{"f:annotations":{".":{},"f:meta.helm.sh/release-name":{},"f:meta.helm.sh/release-namespace":{}},"f:labels":{".":{},"f:app.kubernetes.io/managed-by":{},"f:app.kubernetes.io/name":{}}},"f:spec":{"f:internalTrafficPolicy":{},"f:ports":{".":{},"k:{\"port\":80,\"protocol\":\"TCP\"}":{".":{},"f:name":{},"f:port":{},"f:protocol":{},"f:targetPort":{}}},"f:selector":{},"f:sessionAffinity":{},"f:type":{}}}`, "", created)}},
		Spec: corev1.ServiceSpec{Ports: []corev1.ServicePort{{Name: "http", Protocol: corev1.ProtocolTCP, Port: 80, TargetPort: intstr.FromInt32(port)}},
			Selector: map[string]string{"app.kubernetes.io/name": app}, ClusterIP: ip, ClusterIPs: []string{ip}, Type: corev1.ServiceTypeClusterIP,
			SessionAffinity: corev1.ServiceAffinityNone, IPFamilies: []corev1.IPFamily{corev1.IPv4Protocol}, IPFamilyPolicy: &fam, InternalTrafficPolicy: &local},
	}
	item := *s
	item.TypeMeta = metav1.TypeMeta{}
	return finish(o, []any{s}, &item)
}

// readyVariants returns three ready/not-ready splits of pods: all ready, one
// not ready, a third not ready (rolling restart).
func readyVariants(pods []*object) [][2][]*object {
	var out [][2][]*object
	for _, nr := range []int{0, 1, (len(pods) + 2) / 3} {
		out = append(out, [2][]*object{pods[nr:], pods[:nr]})
	}
	return out
}

func podIPNode(p *object) (ip, node string) { return p.podIP, p.podNode }

func endpointsObject(r *rand.Rand, ns, app string, port int32, pods []*object, created time.Time, rv int64) *object {
	o := &object{rt: rtEndpoints, ns: ns, name: app, uid: randUUID(r), rv: rv}
	var full []any
	var item any
	for _, v := range readyVariants(pods) {
		addr := func(ps []*object) []corev1.EndpointAddress {
			var out []corev1.EndpointAddress
			for _, p := range ps {
				ip, nn := podIPNode(p)
				out = append(out, corev1.EndpointAddress{IP: ip, NodeName: &nn, TargetRef: &corev1.ObjectReference{Kind: "Pod", Namespace: ns, Name: p.name, UID: types.UID(p.uid)}})
			}
			return out
		}
		ep := &corev1.Endpoints{
			TypeMeta: metav1.TypeMeta{Kind: "Endpoints", APIVersion: "v1"},
			ObjectMeta: metav1.ObjectMeta{Name: app, Namespace: ns, UID: types.UID(o.uid), ResourceVersion: sentRV, CreationTimestamp: metav1.Time{Time: created},
				Labels:      map[string]string{"app.kubernetes.io/managed-by": "Helm", "app.kubernetes.io/name": app, "endpoints.kubernetes.io/managed-by": "endpoint-controller"},
				Annotations: map[string]string{"endpoints.kubernetes.io/last-change-trigger-time": sentTS},
				ManagedFields: []metav1.ManagedFieldsEntry{managed("kube-controller-manager", "v1",
					`{"f:metadata":{"f:annotations":{".":{},"f:endpoints.kubernetes.io/last-change-trigger-time":{}},"f:labels":{".":{},"f:app.kubernetes.io/managed-by":{},"f:app.kubernetes.io/name":{},"f:endpoints.kubernetes.io/managed-by":{}}},"f:subsets":{}}`, "", magicSec)}},
			Subsets: []corev1.EndpointSubset{{Addresses: addr(v[0]), NotReadyAddresses: addr(v[1]),
				Ports: []corev1.EndpointPort{{Name: "http", Port: port, Protocol: corev1.ProtocolTCP}}}},
		}
		// Pods exposing different port sets land in different subsets
		// (e.g. sidecar-injected pods add a metrics or grpc port).
		if len(v[0]) > 2 {
			ep.Subsets = append(ep.Subsets, corev1.EndpointSubset{Addresses: addr(v[0][:len(v[0])/2]),
				Ports: []corev1.EndpointPort{{Name: "http", Port: port, Protocol: corev1.ProtocolTCP}, {Name: "metrics", Port: 9090, Protocol: corev1.ProtocolTCP}}})
		}
		if len(v[0]) > 5 {
			ep.Subsets = append(ep.Subsets, corev1.EndpointSubset{Addresses: addr(v[0][len(v[0])-2:]),
				Ports: []corev1.EndpointPort{{Name: "grpc", Port: 9000, Protocol: corev1.ProtocolTCP}, {Name: "http", Port: port, Protocol: corev1.ProtocolTCP}}})
		}
		full = append(full, ep)
		if item == nil {
			it := *ep
			it.TypeMeta = metav1.TypeMeta{}
			item = &it
		}
	}
	return finish(o, full, item)
}

func endpointSliceObject(r *rand.Rand, ns, app, svcUID string, port int32, pods []*object, created time.Time, rv int64) *object {
	name := app + "-" + randSuffix(r, 5)
	o := &object{rt: rtEndpointSlices, ns: ns, name: name, uid: randUUID(r), rv: rv}
	t, f := true, false
	var full []any
	var item any
	for _, v := range readyVariants(pods) {
		var eps []discoveryv1.Endpoint
		for i, ps := range v {
			ready := i == 0
			for _, p := range ps {
				ip, nn := podIPNode(p)
				zone := "us-east-1" + string(rune('a'+len(nn)%3))
				eps = append(eps, discoveryv1.Endpoint{Addresses: []string{ip},
					Conditions: discoveryv1.EndpointConditions{Ready: ptrTo(ready), Serving: ptrTo(ready), Terminating: &f},
					TargetRef:  &corev1.ObjectReference{Kind: "Pod", Namespace: ns, Name: p.name, UID: types.UID(p.uid)}, NodeName: &nn, Zone: &zone})
			}
		}
		es := &discoveryv1.EndpointSlice{
			TypeMeta: metav1.TypeMeta{Kind: "EndpointSlice", APIVersion: "discovery.k8s.io/v1"},
			ObjectMeta: metav1.ObjectMeta{Name: name, GenerateName: app + "-", Namespace: ns, UID: types.UID(o.uid), ResourceVersion: sentRV, Generation: 7,
				CreationTimestamp: metav1.Time{Time: created},
				Labels:            map[string]string{"app.kubernetes.io/managed-by": "Helm", "app.kubernetes.io/name": app, "endpointslice.kubernetes.io/managed-by": "endpointslice-controller.k8s.io", "kubernetes.io/service-name": app},
				Annotations:       map[string]string{"endpoints.kubernetes.io/last-change-trigger-time": sentTS},
				OwnerReferences:   []metav1.OwnerReference{{APIVersion: "v1", Kind: "Service", Name: app, UID: types.UID(svcUID), Controller: &t, BlockOwnerDeletion: &t}},
				ManagedFields: []metav1.ManagedFieldsEntry{managed("kube-controller-manager", "discovery.k8s.io/v1",
					`{"f:addressType":{},"f:endpoints":{},"f:metadata":{"f:annotations":{".":{},"f:endpoints.kubernetes.io/last-change-trigger-time":{}},"f:generateName":{},"f:labels":{".":{},"f:app.kubernetes.io/managed-by":{},"f:app.kubernetes.io/name":{},"f:endpointslice.kubernetes.io/managed-by":{},"f:kubernetes.io/service-name":{}},"f:ownerReferences":{".":{},"k:{\"uid\":\"`+svcUID+`\"}":{}}},"f:ports":{}}`, "", magicSec)}},
			AddressType: discoveryv1.AddressTypeIPv4,
			Endpoints:   eps,
			Ports:       []discoveryv1.EndpointPort{{Name: ptrTo("http"), Protocol: ptrTo(corev1.ProtocolTCP), Port: &port}},
		}
		full = append(full, es)
		if item == nil {
			it := *es
			it.TypeMeta = metav1.TypeMeta{}
			item = &it
		}
	}
	return finish(o, full, item)
}
