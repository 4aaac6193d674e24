package auditgen

import (
	"strconv"
	"time"

	authnv1 "k8s.io/api/authentication/v1"
)

// amp is '&' as encoding/json writes it inside requestURI.
const amp = `\u0026`

type scenario struct {
	weight float64
	fn     func(g *gen)
}

// The traffic mix: weights are relative shares of requests.
var scenarios = []scenario{
	{14, (*gen).nodeLease},
	{4, (*gen).controlPlaneLease},
	{6, (*gen).legacyLock},
	{4, (*gen).endpointsUpdate},
	{4, (*gen).sliceUpdate},
	{6, (*gen).podStatusPatch},
	{4, (*gen).podGet},
	{9, (*gen).eventWrite},
	{5, (*gen).saToken},
	{5, (*gen).nodeStatus},
	{4, (*gen).configMapGet},
	{1, (*gen).autoscalerStatus},
	{3, (*gen).secretGet},
	{3, (*gen).listNamespaced},
	{3, (*gen).listCluster},
	{5, (*gen).watch},
	{1.5, (*gen).podChurn},
	{3, (*gen).workloadOps},
	{3, (*gen).reviews},
	{6, (*gen).nonResource},
	{2, (*gen).humanList},
	{0.3, (*gen).expiredList},
	{1, (*gen).clusterGets},
}

var scenarioCum = func() []float64 {
	var c []float64
	s := 0.0
	for _, sc := range scenarios {
		s += sc.weight
		c = append(c, s)
	}
	for i := range c {
		c[i] /= s
	}
	return c
}()

var anonymous = newActor(authnv1.UserInfo{Username: "system:anonymous", Groups: []string{"system:unauthenticated"}}, "10.0.0.2", "kube-probe/1.33",
	rbacReason("ClusterRoleBinding", "system:public-info-viewer", "ClusterRole", "system:public-info-viewer", "Group", "system:unauthenticated"))

func (g *gen) step() {
	if g.r.Float64() < g.opt.LargeBodyFraction {
		g.largeBody()
		return
	}
	x := g.r.Float64()
	for i, c := range scenarioCum {
		if x < c {
			scenarios[i].fn(g)
			return
		}
	}
	scenarios[len(scenarios)-1].fn(g)
}

// ---- helpers ----

func pick[T any](g *gen, s []T) T { return s[g.r.IntN(len(s))] }

func (g *gen) chance(p float64) bool { return g.r.Float64() < p }

func appendPath(b []byte, rt *resType, ns, name, sub string) []byte {
	b = append(b, rt.prefix...)
	if ns != "" {
		b = append(b, "/namespaces/"...)
		b = append(b, ns...)
	}
	b = append(b, '/')
	b = append(b, rt.resource...)
	if name != "" {
		b = append(b, '/')
		b = append(b, name...)
		if sub != "" {
			b = append(b, '/')
			b = append(b, sub...)
		}
	}
	return b
}

// appendQuery appends ?k=v&k=v with & escaped; pairs must be URL-encoded and
// sorted as client-go sends them.
func appendQuery(b []byte, kv ...string) []byte {
	for i := 0; i+1 < len(kv); i += 2 {
		if i == 0 {
			b = append(b, '?')
		} else {
			b = append(b, amp...)
		}
		b = append(b, kv[i]...)
		b = append(b, '=')
		b = append(b, kv[i+1]...)
	}
	return b
}

func appendRef(b []byte, rt *resType, ns, name, uid string, rv int64, sub string) []byte {
	b = append(b, `{"resource":"`...)
	b = append(b, rt.resource...)
	b = append(b, '"')
	if ns != "" {
		b = append(b, `,"namespace":"`...)
		b = append(b, ns...)
		b = append(b, '"')
	}
	if name != "" {
		b = append(b, `,"name":"`...)
		b = append(b, name...)
		b = append(b, '"')
	}
	if uid != "" {
		b = append(b, `,"uid":"`...)
		b = append(b, uid...)
		b = append(b, '"')
	}
	if rt.group != "" {
		b = append(b, `,"apiGroup":"`...)
		b = append(b, rt.group...)
		b = append(b, '"')
	}
	b = append(b, `,"apiVersion":"`...)
	b = append(b, rt.version...)
	b = append(b, '"')
	if rv > 0 {
		b = append(b, `,"resourceVersion":"`...)
		b = appendInt(b, rv)
		b = append(b, '"')
	}
	if sub != "" {
		b = append(b, `,"subresource":"`...)
		b = append(b, sub...)
		b = append(b, '"')
	}
	return append(b, '}')
}

func appendCode(b []byte, code int) []byte {
	b = append(b, `{"metadata":{},"code":`...)
	b = strconv.AppendInt(b, int64(code), 10)
	return append(b, '}')
}

// appendFailure appends a metav1.Status body. msg must already be JSON
// string content (quotes escaped). asObject adds kind/apiVersion, as in a
// responseObject.
func appendFailure(b []byte, asObject bool, code int, reason, msg string, rt *resType, name string, cause string) []byte {
	if asObject {
		b = append(b, `{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"`...)
	} else {
		b = append(b, `{"metadata":{},"status":"Failure","message":"`...)
	}
	b = append(b, msg...)
	b = append(b, `","reason":"`...)
	b = append(b, reason...)
	b = append(b, '"')
	if rt != nil || cause != "" {
		b = append(b, `,"details":{`...)
		if rt != nil {
			b = append(b, `"name":"`...)
			b = append(b, name...)
			b = append(b, '"')
			if rt.group != "" {
				b = append(b, `,"group":"`...)
				b = append(b, rt.group...)
				b = append(b, '"')
			}
			b = append(b, `,"kind":"`...)
			b = append(b, rt.resource...)
			b = append(b, '"')
		}
		if cause != "" {
			if rt != nil {
				b = append(b, ',')
			}
			b = append(b, `"causes":[{"message":"`...)
			b = append(b, cause...)
			b = append(b, `"}]`...)
		}
		b = append(b, '}')
	}
	b = append(b, `,"code":`...)
	b = strconv.AppendInt(b, int64(code), 10)
	return append(b, '}')
}

func notFoundMsg(rt *resType, name string) string {
	return rt.qualified + ` \"` + name + `\" not found`
}

func conflictMsg(rt *resType, name string) string {
	return `Operation cannot be fulfilled on ` + rt.qualified + ` \"` + name + `\": the object has been modified; please apply your changes to the latest version and try again`
}

const etcdTimeout = "etcdserver: request timed out"

// fail sets an error status; with RequestResponse the Status is also the
// responseObject.
func (g *gen) fail(c *request, code int, reason, msg string, rt *resType, name, cause string) {
	c.status = appendFailure(c.status[:0], false, code, reason, msg, rt, name, cause)
	c.resp = c.resp[:0]
	if c.level == lvlRR {
		c.resp = appendFailure(c.resp, true, code, reason, msg, rt, name, cause)
	}
}

func (g *gen) internalError(c *request, rt *resType, name string) {
	g.fail(c, 500, "InternalError", "Internal error occurred: "+etcdTimeout, rt, name, etcdTimeout)
}

func levelOf(rt *resType) string {
	if rt.rr {
		return lvlRR
	}
	return lvlMeta
}

func annOf(rt *resType) int {
	if rt.deprecated {
		return annDeprecated
	}
	return 0
}

// renderObj renders variant v of o with resourceVersion rv.
func (g *gen) renderObj(dst []byte, o *object, rv int64) []byte {
	g.ctx.rv = rv
	if o.holders != nil {
		g.ctx.holder, g.ctx.trans = o.holders[o.holder], o.trans
	}
	return o.full[o.cur].render(dst, &g.ctx)
}

// update emits an update of o by a: requestObject at the old
// resourceVersion, responseObject at a new one (or a 409 Conflict).
func (g *gen) update(o *object, a *actor, query []string, conflictP float64, latency int64) {
	c := g.begin(levelOf(o.rt), "update", a, g.latency(latency))
	c.uri = appendQuery(appendPath(c.uri, o.rt, o.ns, o.name, ""), query...)
	c.ref = appendRef(c.ref, o.rt, o.ns, o.name, o.uid, o.rv, "")
	c.ann = annOf(o.rt)
	c.req = g.renderObj(c.req, o, o.rv)
	if g.chance(conflictP) {
		g.fail(c, 409, "Conflict", conflictMsg(o.rt, o.name), o.rt, o.name, "")
	} else {
		o.rv = g.nextRV()
		c.status = append(c.status, statusOK...)
		c.resp = g.renderObj(c.resp, o, o.rv)
	}
	g.finish(c, false, 0)
}

// get emits a get of o (RequestResponse bodies if the policy says so).
func (g *gen) get(o *object, a *actor, query []string, latency int64) {
	c := g.begin(levelOf(o.rt), "get", a, g.latency(latency))
	c.uri = appendQuery(appendPath(c.uri, o.rt, o.ns, o.name, ""), query...)
	c.ref = appendRef(c.ref, o.rt, o.ns, o.name, "", 0, "")
	c.ann = annOf(o.rt)
	if g.chance(0.0005) {
		g.internalError(c, o.rt, o.name)
	} else {
		c.status = append(c.status, statusOK...)
		if c.level == lvlRR {
			c.resp = g.renderObj(c.resp, o, o.rv)
		}
	}
	g.finish(c, false, 0)
}

// getMissing emits a 404 get of a named object.
func (g *gen) getMissing(rt *resType, ns, name string, a *actor) {
	c := g.begin(levelOf(rt), "get", a, g.latency(400))
	c.uri = appendPath(c.uri, rt, ns, name, "")
	c.ref = appendRef(c.ref, rt, ns, name, "", 0, "")
	c.ann = annOf(rt)
	g.fail(c, 404, "NotFound", notFoundMsg(rt, name), rt, name, "")
	g.finish(c, false, 0)
}

// simple emits a Metadata-level request without bodies.
func (g *gen) simple(verb string, a *actor, rt *resType, ns, name, sub string, code int, latency int64, query ...string) {
	c := g.begin(lvlMeta, verb, a, g.latency(latency))
	if verb == "create" && sub == "" {
		c.uri = appendQuery(appendPath(c.uri, rt, ns, "", ""), query...)
	} else {
		c.uri = appendQuery(appendPath(c.uri, rt, ns, name, sub), query...)
	}
	c.ref = appendRef(c.ref, rt, ns, name, "", 0, sub)
	c.ann = annOf(rt)
	c.status = appendCode(c.status, code)
	if code == 404 {
		g.fail(c, 404, "NotFound", notFoundMsg(rt, name), rt, name, "")
	}
	if verb == "create" || verb == "update" || verb == "patch" || verb == "delete" {
		g.nextRV()
	}
	g.finish(c, false, 0)
}

func (g *gen) appNS() *namespace { return pick(g, g.w.appNS) }
func (g *gen) service() *service { return pick(g, g.appNS().services) }

// ---- scenarios ----

// nodeLease: every kubelet renews its Lease in kube-node-lease every 10s.
func (g *gen) nodeLease() {
	n := pick(g, g.w.nodes)
	g.update(n.lease, n.kubelet, []string{"timeout", "10s"}, 0.002, 2500)
}

// controlPlaneLease: kube-controller-manager and kube-scheduler leader
// election (get, then update, every 2s).
func (g *gen) controlPlaneLease() {
	o, a := g.w.kcmLease, g.w.kcmLeader
	if g.chance(0.5) {
		o, a = g.w.schedLease, g.w.schedLeader
	}
	if g.chance(0.3) {
		g.get(o, a, []string{"timeout", "5s"}, 500)
		return
	}
	g.update(o, a, []string{"timeout", "5s"}, 0.002, 2500)
}

// legacyLock: client-go < 0.24 leader election on an Endpoints or ConfigMap
// lock: candidates get the lock; the leader updates the
// control-plane.alpha.kubernetes.io/leader annotation.
func (g *gen) legacyLock() {
	var ns *namespace
	for ns == nil || ns.operator == nil {
		ns = g.appNS()
	}
	o := ns.epLock
	if g.chance(0.45) {
		o = ns.cmLock
	}
	g.get(o, ns.operator, nil, 600)
	if g.chance(0.5) {
		if g.chance(0.003) { // handover
			o.holder = (o.holder + 1) % len(o.holders)
			o.trans++
		}
		g.update(o, ns.operator, nil, 0.01, 2500)
	}
}

func (g *gen) endpointsUpdate() {
	s := g.service()
	o := s.endpoints
	o.cur = (o.cur + 1 + g.r.IntN(len(o.full)-1)) % len(o.full)
	g.update(o, g.w.epCtl, nil, 0.01, 2500)
}

func (g *gen) sliceUpdate() {
	s := g.service()
	o := s.slice
	o.cur = (o.cur + 1 + g.r.IntN(len(o.full)-1)) % len(o.full)
	g.update(o, g.w.epsCtl, nil, 0.01, 2500)
}

// podStatusPatch: the kubelet patches pods/status (strategic merge patch).
func (g *gen) podStatusPatch() {
	p := pick(g, g.w.pods)
	n := g.nodeByName(p.podNode)
	c := g.begin(lvlRR, "patch", n.kubelet, g.latency(3000))
	c.uri = appendPath(c.uri, rtPods, p.ns, p.name, "status")
	c.ref = appendRef(c.ref, rtPods, p.ns, p.name, "", 0, "status")
	c.req = p.patch.render(c.req, &g.ctx)
	p.rv = g.nextRV()
	c.status = append(c.status, statusOK...)
	c.resp = g.renderObj(c.resp, p, p.rv)
	g.finish(c, false, 0)
}

func (g *gen) nodeByName(name string) *node {
	for _, n := range g.w.nodes {
		if n.name == name {
			return n
		}
	}
	return g.w.nodes[0]
}

func (g *gen) podGet() {
	p := pick(g, g.w.pods)
	switch {
	case g.chance(0.03):
		g.getMissing(rtPods, p.ns, p.name[:len(p.name)-5]+randSuffix(g.r, 5), g.w.admin)
	case g.chance(0.5):
		g.get(p, g.nodeByName(p.podNode).kubelet, nil, 600)
	default:
		g.get(p, pick(g, []*actor{g.w.admin, g.w.alice, g.w.gcCtl, g.w.rsCtl}), nil, 600)
	}
}

// eventWrite: components record Events (create, or patch to bump count).
func (g *gen) eventWrite() {
	p := pick(g, g.w.pods)
	name := p.name + "." + randHex(g.r, 16)
	a := g.nodeByName(p.podNode).kubelet
	if g.chance(0.3) {
		a = pick(g, []*actor{g.w.rsCtl, g.w.deployCtl, g.w.nodeCtl})
	}
	switch {
	case g.chance(0.15):
		g.simple("create", g.w.scheduler, rtEventsV1, p.ns, name, "", 201, 1500)
	case g.chance(0.25):
		g.simple("patch", a, rtEvents, p.ns, name, "", 200, 1500)
	default:
		g.simple("create", a, rtEvents, p.ns, name, "", 201, 1500)
	}
}

// saToken: kubelets request projected service account tokens.
func (g *gen) saToken() {
	p := pick(g, g.w.pods)
	sa := p.name[:indexDash(p.name)] // pods run as their app's service account
	g.simple("create", g.nodeByName(p.podNode).kubelet, rtServiceAccts, p.ns, sa, "token", 201, 2000)
}

func indexDash(s string) int {
	for i := 0; i < len(s); i++ {
		if s[i] == '-' {
			return i
		}
	}
	return -1
}

func (g *gen) nodeStatus() {
	n := pick(g, g.w.nodes)
	switch {
	case g.chance(0.5):
		g.simple("get", n.kubelet, rtNodes, "", n.name, "", 200, 400, "resourceVersion", "0", "timeout", "10s")
	case g.chance(0.7):
		g.simple("patch", n.kubelet, rtNodes, "", n.name, "status", 200, 3000, "timeout", "10s")
	default:
		g.simple("patch", g.w.nodeCtl, rtNodes, "", n.name, "", 200, 2500)
	}
}

func (g *gen) configMapGet() {
	ns := pick(g, g.w.namespaces)
	if len(ns.configMaps) == 0 {
		ns = g.appNS()
	}
	if g.chance(0.05) {
		g.getMissing(rtConfigMaps, ns.name, pick(g, []string{"feature-flags", "extension-apiserver-authentication", "istio-ca-root-cert"}), pick(g, []*actor{g.w.admin, g.w.apiserver}))
		return
	}
	o := pick(g, ns.configMaps)
	a := g.w.kcm
	if ns.operator != nil && g.chance(0.5) {
		a = ns.operator
	}
	g.get(o, a, nil, 500)
}

func (g *gen) autoscalerStatus() {
	g.update(g.w.autoscalerStatus, g.w.autoscaler, nil, 0.005, 3000)
}

func (g *gen) secretGet() {
	ns := g.appNS()
	name := pick(g, ns.secrets)
	a := pick(g, []*actor{g.w.apiserver, g.w.admin, g.w.ciBot, ns.events})
	if g.chance(0.05) {
		g.getMissing(rtSecrets, ns.name, name+"-old", a)
		return
	}
	g.simple("get", a, rtSecrets, ns.name, name, "", 200, 400)
}

// listNamespaced: informer-style list of a RequestResponse resource in one
// namespace, with the list body.
func (g *gen) listNamespaced() {
	ns := g.appNS()
	var items []*object
	var rt *resType
	switch g.r.IntN(5) {
	case 0:
		rt = rtPods
		items = ns.pods
	case 1:
		rt = rtConfigMaps
		items = ns.configMaps
	case 2:
		rt = rtEndpoints
		for _, s := range ns.services {
			items = append(items, s.endpoints)
		}
	case 3:
		rt = rtServices
		for _, s := range ns.services {
			items = append(items, s.svc)
		}
	default:
		rt = rtLeases
		items = ns.leases
	}
	if len(items) > 4 {
		items = items[:4]
	}
	a := pick(g, []*actor{g.w.kcm, g.w.prometheus, g.w.coredns, ns.events})
	c := g.begin(lvlRR, "list", a, g.latency(1500))
	q := []string{"limit", "500", "resourceVersion", "0"}
	if rt == rtPods && g.chance(0.5) {
		s := pick(g, ns.services)
		q = []string{"labelSelector", s.selector, "limit", "500", "resourceVersion", "0"}
		items = s.pods
		if len(items) > 4 {
			items = items[:4]
		}
	}
	c.uri = appendQuery(appendPath(c.uri, rt, ns.name, "", ""), q...)
	c.ref = appendRef(c.ref, rt, ns.name, "", "", 0, "")
	c.ann = annOf(rt)
	if g.chance(0.0005) {
		g.internalError(c, nil, "")
	} else {
		c.status = append(c.status, statusOK...)
		c.resp = g.appendList(c.resp, rt, items)
	}
	g.finish(c, false, 0)
}

func (g *gen) appendList(b []byte, rt *resType, items []*object) []byte {
	b = append(b, `{"kind":"`...)
	b = append(b, rt.kind...)
	b = append(b, `List","apiVersion":"`...)
	if rt.group != "" {
		b = append(b, rt.group...)
		b = append(b, '/')
	}
	b = append(b, rt.version...)
	b = append(b, `","metadata":{"resourceVersion":"`...)
	b = appendInt(b, g.rv)
	b = append(b, `"},"items":[`...)
	for i, o := range items {
		if i > 0 {
			b = append(b, ',')
		}
		g.ctx.rv = o.rv
		if o.holders != nil {
			g.ctx.holder, g.ctx.trans = o.holders[o.holder], o.trans
		}
		b = o.item.render(b, &g.ctx)
	}
	return append(b, "]}"...)
}

var clusterLists = []*resType{rtSecrets, rtNodes, rtNamespaces, rtServiceAccts, rtDeployments, rtReplicaSets, rtPVCs, rtJobs, rtCRDs, rtClusterRoles, rtRoleBindings, rtStatefulSets, rtDaemonSets}

// listCluster: Metadata-level cluster-wide lists (informer relists).
func (g *gen) listCluster() {
	rt := pick(g, clusterLists)
	a := pick(g, []*actor{g.w.kcm, g.w.apiserver, g.w.prometheus, g.w.ciBot, g.w.scheduler})
	c := g.begin(lvlMeta, "list", a, g.latency(3000))
	if rt == rtSecrets && g.chance(0.5) {
		c.uri = appendQuery(appendPath(c.uri, rt, "", "", ""), "fieldSelector", "type%3Dkubernetes.io%2Ftls", "limit", "500", "resourceVersion", "0")
	} else {
		c.uri = appendQuery(appendPath(c.uri, rt, "", "", ""), "limit", "500", "resourceVersion", "0")
	}
	c.ref = appendRef(c.ref, rt, "", "", "", 0, "")
	c.status = append(c.status, statusOK...)
	g.finish(c, false, 0)
}

var watchTypes = []*resType{rtPods, rtEndpoints, rtEndpointSlices, rtServices, rtConfigMaps, rtLeases, rtSecrets, rtNodes, rtNamespaces, rtServiceAccts, rtDeployments, rtReplicaSets, rtJobs}

// watch: a reflector watch (ResponseStarted now, ResponseComplete when its
// timeout expires), a kubelet pod watch, or kubectl get --watch.
func (g *gen) watch() {
	var a *actor
	var rt *resType
	var ns string
	var q []string
	rv := strconv.FormatInt(g.rv-int64(g.r.IntN(2000)), 10)
	tos := int64(300 + g.r.IntN(300))
	tosS := strconv.FormatInt(tos, 10)
	timeout := (time.Duration(tos) * time.Second).String()
	switch x := g.r.IntN(10); {
	case x < 3: // kubelet: own pods, and secrets/configmaps it mounts
		n := pick(g, g.w.nodes)
		a = n.kubelet
		if x == 0 {
			rt = rtPods
			q = []string{"allowWatchBookmarks", "true", "fieldSelector", "spec.nodeName%3D" + n.name, "resourceVersion", rv, "timeoutSeconds", tosS, "watch", "true"}
		} else {
			rt = pick(g, []*resType{rtConfigMaps, rtSecrets})
			p := pick(g, g.w.pods)
			ns = p.ns
			name := "kube-root-ca.crt"
			if rt == rtSecrets {
				name = pick(g, g.w.appNS[0].secrets)
			}
			q = []string{"allowWatchBookmarks", "true", "fieldSelector", "metadata.name%3D" + name, "resourceVersion", rv, "timeout", timeout, "timeoutSeconds", tosS, "watch", "true"}
		}
	case x < 5: // kubectl get --watch
		a = pick(g, []*actor{g.w.admin, g.w.alice})
		rt = pick(g, []*resType{rtPods, rtEndpoints, rtServices})
		ns = g.appNS().name
		tos = int64(10 + g.r.IntN(120))
		q = []string{"resourceVersion", rv, "watch", "true"}
	default:
		a = pick(g, []*actor{g.w.kcm, g.w.apiserver, g.w.scheduler, g.w.proxy, g.w.coredns, g.w.prometheus})
		rt = pick(g, watchTypes)
		if g.chance(0.3) && rt.namespaced {
			ns = g.appNS().name
		}
		if rt == rtPods && g.chance(0.3) {
			q = []string{"allowWatchBookmarks", "true", "labelSelector", g.service().selector, "resourceVersion", rv, "timeout", timeout, "timeoutSeconds", tosS, "watch", "true"}
		} else {
			q = []string{"allowWatchBookmarks", "true", "resourceVersion", rv, "timeout", timeout, "timeoutSeconds", tosS, "watch", "true"}
		}
	}
	c := g.begin(levelOf(rt), "watch", a, 0)
	c.uri = appendQuery(appendPath(c.uri, rt, ns, "", ""), q...)
	c.ref = appendRef(c.ref, rt, ns, "", "", 0, "")
	c.ann = annOf(rt)
	c.status = append(c.status, statusOK...)
	g.finish(c, true, tos)
}

var deleteOptions = []byte(`{"kind":"DeleteOptions","apiVersion":"meta.k8s.io/__internal","propagationPolicy":"Background"}`)

// podChurn: the ReplicaSet controller creates a pod, or someone deletes one.
func (g *gen) podChurn() {
	p := pick(g, g.w.pods)
	if g.chance(0.5) {
		c := g.begin(lvlRR, "create", g.w.rsCtl, g.latency(6000))
		c.uri = appendPath(c.uri, rtPods, p.ns, "", "")
		c.ref = appendRef(c.ref, rtPods, p.ns, p.name, "", 0, "")
		c.ann = annPodSecurity
		c.req = g.renderObj(c.req, p, p.rv)
		if g.chance(0.01) {
			g.fail(c, 409, "AlreadyExists", rtPods.qualified+` \"`+p.name+`\" already exists`, rtPods, p.name, "")
		} else {
			p.rv = g.nextRV()
			c.status = appendCode(c.status, 201)
			c.resp = g.renderObj(c.resp, p, p.rv)
		}
		g.finish(c, false, 0)
		return
	}
	a := pick(g, []*actor{g.w.admin, g.w.rsCtl, g.w.gcCtl, g.w.ciBot})
	c := g.begin(lvlRR, "delete", a, g.latency(4000))
	c.uri = appendPath(c.uri, rtPods, p.ns, p.name, "")
	c.ref = appendRef(c.ref, rtPods, p.ns, p.name, "", 0, "")
	c.req = append(c.req, deleteOptions...)
	if g.chance(0.05) {
		g.fail(c, 404, "NotFound", notFoundMsg(rtPods, p.name), rtPods, p.name, "")
	} else {
		p.rv = g.nextRV()
		c.status = append(c.status, statusOK...)
		c.resp = g.renderObj(c.resp, p, p.rv)
	}
	g.finish(c, false, 0)
}

// workloadOps: Deployment/ReplicaSet status updates and CI patches
// (Metadata level by policy).
func (g *gen) workloadOps() {
	s := g.service()
	switch g.r.IntN(5) {
	case 0:
		g.simple("update", g.w.rsCtl, rtReplicaSets, s.ns.name, s.name+"-"+s.pods[0].name[len(s.name)+1:len(s.name)+11], "status", 200, 2500)
	case 1:
		g.simple("update", g.w.deployCtl, rtDeployments, s.ns.name, s.name, "status", 200, 2500)
	case 2:
		g.simple("patch", g.w.ciBot, rtDeployments, s.ns.name, s.name, "", 200, 3000, "fieldManager", "argocd-controller", "force", "true")
	case 3:
		g.simple("get", g.w.ciBot, rtDeployments, s.ns.name, s.name, "", 200, 400)
	default:
		if g.chance(0.5) {
			g.simple("patch", g.w.admin, rtDeployments, s.ns.name, s.name, "", 200, 3000, "fieldManager", "kubectl-rollout")
		} else {
			g.simple("update", g.w.rsCtl, rtReplicaSets, s.ns.name, s.name+"-"+s.pods[0].name[len(s.name)+1:len(s.name)+11], "", 409, 2500)
		}
	}
}

// reviews: webhooks and metrics-server delegate authn/authz.
func (g *gen) reviews() {
	a := pick(g, []*actor{g.w.metrics, g.w.prometheus})
	if g.chance(0.5) {
		g.simple("create", a, rtSAR, "", "", "", 201, 800)
	} else {
		g.simple("create", a, rtTokenReviews, "", "", "", 201, 800)
	}
}

var nonResourcePaths = []string{"/healthz", "/livez", "/readyz", "/version", "/api", "/apis", "/openapi/v2", "/metrics", "/readyz?verbose", "/openapi/v3"}

func (g *gen) nonResource() {
	path := pick(g, nonResourcePaths)
	var a *actor
	switch path {
	case "/healthz", "/livez", "/readyz", "/readyz?verbose":
		a = anonymous
	case "/metrics":
		a = g.w.prometheus
	default:
		a = pick(g, []*actor{g.w.dispatcher, g.w.admin, g.w.alice, g.w.ciBot})
	}
	c := g.begin(lvlMeta, "get", a, g.latency(500))
	c.uri = append(c.uri, path...)
	if a == g.w.dispatcher && path == "/version" {
		c.uri = append(c.uri, "?timeout=5s"...)
	}
	code := 200
	switch {
	case path == "/readyz" && g.chance(0.01):
		code = 500
	case path == "/openapi/v3" || path == "/openapi/v2":
		if g.chance(0.6) {
			code = 304
		}
	}
	c.status = appendCode(c.status, code)
	g.finish(c, false, 0)
}

// humanList: kubectl get pods -l ... (RequestResponse list body).
func (g *gen) humanList() {
	s := g.service()
	a := pick(g, []*actor{g.w.admin, g.w.alice})
	c := g.begin(lvlRR, "list", a, g.latency(2500))
	c.uri = appendQuery(appendPath(c.uri, rtPods, s.ns.name, "", ""), "labelSelector", s.selector, "limit", "500")
	c.ref = appendRef(c.ref, rtPods, s.ns.name, "", "", 0, "")
	c.status = append(c.status, statusOK...)
	c.resp = g.appendList(c.resp, rtPods, s.pods)
	g.finish(c, false, 0)
}

// expiredList: a paginated or exact-RV list whose resourceVersion was
// compacted away: 410 Expired.
func (g *gen) expiredList() {
	ns := g.appNS()
	rt := pick(g, []*resType{rtPods, rtConfigMaps, rtEndpoints})
	a := pick(g, []*actor{g.w.prometheus, g.w.ciBot, g.w.kcm})
	c := g.begin(lvlRR, "list", a, g.latency(800))
	old := strconv.FormatInt(g.rv-200000-int64(g.r.IntN(100000)), 10)
	var msg string
	if g.chance(0.5) {
		c.uri = appendQuery(appendPath(c.uri, rt, ns.name, "", ""), "limit", "500", "resourceVersion", old, "resourceVersionMatch", "Exact")
		msg = "The resourceVersion for the provided list is too old."
	} else {
		c.uri = appendQuery(appendPath(c.uri, rt, ns.name, "", ""), "continue", "eyJ2IjoibWV0YS5rOHMuaW8vdjEiLCJydiI6"+old+"fQ", "limit", "500")
		msg = "The provided continue parameter is too old to display a consistent list result. You can start a new list without the continue parameter, or use the continue token in this response to retrieve the remainder of the results. Continuing with the provided token results in an inconsistent list - objects that were created, modified, or deleted between the time the first chunk was returned and now may show up in the list."
	}
	c.ref = appendRef(c.ref, rt, ns.name, "", "", 0, "")
	c.ann = annOf(rt)
	g.fail(c, 410, "Expired", msg, nil, "", "")
	g.finish(c, false, 0)
}

func (g *gen) clusterGets() {
	switch g.r.IntN(4) {
	case 0:
		g.simple("get", g.w.ciBot, rtCRDs, "", pick(g, g.w.crds), "", 200, 400)
	case 1:
		g.simple("get", g.w.apiserver, rtClusterRoles, "", pick(g, g.w.clusterRoles), "", 200, 400)
	case 2:
		g.simple("get", g.w.nsCtl, rtNamespaces, "", g.appNS().name, "", 200, 400)
	default:
		g.simple("get", g.w.admin, rtNamespaces, "", "does-not-exist", "", 404, 400)
	}
}

// largeBody: a cluster-wide pod list or a Grafana dashboards ConfigMap of a
// few hundred KB.
func (g *gen) largeBody() {
	lb := &g.w.large[g.r.IntN(len(g.w.large))]
	if lb.kind == 0 {
		a := pick(g, []*actor{g.w.prometheus, g.w.admin, g.w.alice})
		c := g.begin(lvlRR, "list", a, g.latency(80000))
		c.uri = appendQuery(appendPath(c.uri, rtPods, "", "", ""), "limit", "500")
		c.ref = appendRef(c.ref, rtPods, "", "", "", 0, "")
		c.status = append(c.status, statusOK...)
		g.ctx.rv = g.rv
		c.resp = lb.body.render(c.resp, &g.ctx)
		c.large = true
		g.finish(c, false, 0)
		return
	}
	o := lb.obj
	if g.chance(0.5) {
		g.updateLarge(o)
		return
	}
	c := g.begin(lvlRR, "get", pick(g, []*actor{g.w.prometheus, g.w.ciBot}), g.latency(20000))
	c.uri = appendPath(c.uri, rtConfigMaps, o.ns, o.name, "")
	c.ref = appendRef(c.ref, rtConfigMaps, o.ns, o.name, "", 0, "")
	c.status = append(c.status, statusOK...)
	c.resp = g.renderObj(c.resp, o, o.rv)
	c.large = true
	g.finish(c, false, 0)
}

func (g *gen) updateLarge(o *object) {
	c := g.begin(lvlRR, "update", g.w.ciBot, g.latency(30000))
	c.uri = appendQuery(appendPath(c.uri, rtConfigMaps, o.ns, o.name, ""), "fieldManager", "argocd-controller")
	c.ref = appendRef(c.ref, rtConfigMaps, o.ns, o.name, o.uid, o.rv, "")
	c.req = g.renderObj(c.req, o, o.rv)
	o.rv = g.nextRV()
	c.status = append(c.status, statusOK...)
	c.resp = g.renderObj(c.resp, o, o.rv)
	c.large = true
	g.finish(c, false, 0)
}
