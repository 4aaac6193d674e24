package k8sobj

import (
	"encoding/json"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/bytedance/sonic"
	coordv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	discv1 "k8s.io/api/discovery/v1"
	discv1beta1 "k8s.io/api/discovery/v1beta1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// LeaderAnnotation is the annotation client-go's Endpoints and ConfigMap resource locks keep the
// leader-election record in.
const LeaderAnnotation = "control-plane.alpha.kubernetes.io/leader"

// changeTriggerAnnotation is set by the endpoints and endpointslice controllers to the time of the
// last pod or service change that the object reflects.
const changeTriggerAnnotation = "endpoints.kubernetes.io/last-change-trigger-time"

const serviceNameLabel = "kubernetes.io/service-name"

// Kinds this package turns into rows; every other kind is counted in Stats.Ignored.
const (
	KindEndpoints     = "Endpoints"
	KindEndpointSlice = "EndpointSlice"
	KindService       = "Service"
	KindPod           = "Pod"
	KindConfigMap     = "ConfigMap"
	KindLease         = "Lease"
)

// normalizeKind maps a Kind or an audit objectRef.resource (endpoints, endpointslices, ...) to the Kind.
func normalizeKind(k string) string {
	switch strings.ToLower(k) {
	case "endpoints":
		return KindEndpoints
	case "endpointslice", "endpointslices":
		return KindEndpointSlice
	case "service", "services":
		return KindService
	case "pod", "pods":
		return KindPod
	case "configmap", "configmaps":
		return KindConfigMap
	case "lease", "leases":
		return KindLease
	}
	return k
}

// objectError is a problem with one object that does not stop decoding.
type objectError struct{ reason string }

func (e *objectError) Error() string { return e.reason }

// emitter turns decoded objects into records.
type emitter struct {
	h     Handler
	stats *Stats
}

func (e *emitter) row(r Record) error {
	if err := e.h.Row(r); err != nil {
		return err
	}
	if e.stats != nil {
		if e.stats.Rows == nil {
			e.stats.Rows = map[string]int{}
		}
		e.stats.Rows[r.Table()]++
	}
	return nil
}

// unmarshalObject decodes raw into v, turning JSON type errors into an objectError.
func unmarshalObject(kind string, raw []byte, v any) error {
	if err := unmarshal(raw, v); err != nil {
		return &objectError{fmt.Sprintf("decoding %s: %v", kind, err)}
	}
	return nil
}

// unmarshal decodes data into v as encoding/json does, about four times as fast: with sonic's
// decoder in its encoding/json mode, which calls the same UnmarshalJSON methods (times,
// quantities, int-or-strings). Where sonic fails, v is decoded again by encoding/json itself,
// whose result and error stand: an object either decoder rejects is judged as encoding/json
// judges it, with its message (what sonic decoded before it failed comes from the same data, so
// encoding/json decodes over it). TestUnmarshalAsEncodingJSON holds the two to the same result.
func unmarshal(data []byte, v any) error {
	if sonic.ConfigStd.Unmarshal(data, v) == nil {
		return nil
	}
	return json.Unmarshal(data, v)
}

// object emits the rows of one object of kind (already resolved). deleted says the object was
// deleted (watch DELETED or audit delete). It returns a handler error, or an *objectError.
func (e *emitter) object(kind, apiVersion string, raw []byte, o Origin, deleted bool) error {
	switch kind {
	case KindEndpoints:
		var ep corev1.Endpoints
		if err := unmarshalObject(kind, raw, &ep); err != nil {
			return err
		}
		if err := e.endpoints(&ep, o, deleted); err != nil {
			return err
		}
		if deleted {
			return nil
		}
		return e.annotations(kind, &ep.ObjectMeta, o)
	case KindEndpointSlice:
		var s discv1.EndpointSlice
		if strings.HasSuffix(apiVersion, "/v1beta1") {
			var b discv1beta1.EndpointSlice
			if err := unmarshalObject(kind, raw, &b); err != nil {
				return err
			}
			s = sliceFromV1beta1(&b)
		} else if err := unmarshalObject(kind, raw, &s); err != nil {
			return err
		}
		if err := e.endpointSlice(&s, o, deleted); err != nil {
			return err
		}
		if deleted {
			return nil
		}
		return e.annotations(kind, &s.ObjectMeta, o)
	case KindService:
		var s corev1.Service
		if err := unmarshalObject(kind, raw, &s); err != nil {
			return err
		}
		if err := e.row(serviceRecord(&s, o, deleted)); err != nil {
			return err
		}
		if deleted {
			return nil
		}
		return e.annotations(kind, &s.ObjectMeta, o)
	case KindPod:
		var p corev1.Pod
		if err := unmarshalObject(kind, raw, &p); err != nil {
			return err
		}
		return e.pod(&p, o, deleted)
	case KindConfigMap:
		if deleted {
			return nil
		}
		// Only the metadata matters; a ConfigMap's data can be large and of any shape.
		var cm struct {
			Metadata metav1.ObjectMeta `json:"metadata"`
		}
		if err := unmarshalObject(kind, raw, &cm); err != nil {
			return err
		}
		return e.annotations(kind, &cm.Metadata, o)
	case KindLease:
		if deleted {
			return nil
		}
		var l coordv1.Lease
		if err := unmarshalObject(kind, raw, &l); err != nil {
			return err
		}
		if err := e.annotations(kind, &l.ObjectMeta, o); err != nil {
			return err
		}
		return e.row(leaseRecord(&l, o))
	}
	return nil
}

func changeTime(m *metav1.ObjectMeta) time.Time {
	if s, ok := m.Annotations[changeTriggerAnnotation]; ok {
		if t, err := time.Parse(time.RFC3339Nano, s); err == nil {
			return t
		}
	}
	return time.Time{}
}

func boolp(b bool) *bool { return &b }

func (e *emitter) endpoints(ep *corev1.Endpoints, o Origin, deleted bool) error {
	base := EndpointAddress{
		Origin: o, Kind: KindEndpoints, Namespace: ep.Namespace, Name: ep.Name, Service: ep.Name,
		UID: string(ep.UID), ResourceVersion: ep.ResourceVersion, ChangeTime: changeTime(&ep.ObjectMeta),
	}
	if deleted {
		base.Deleted = true
		return e.row(base)
	}
	n := 0
	for _, ss := range ep.Subsets {
		ports := endpointPorts(ss.Ports)
		for i, list := range [][]corev1.EndpointAddress{ss.Addresses, ss.NotReadyAddresses} {
			ready := i == 0
			for _, a := range list {
				r := base
				r.IP = a.IP
				r.AddressType = addressType(a.IP)
				r.Hostname = a.Hostname
				r.Ready = boolp(ready)
				r.Serving = boolp(ready)
				if a.NodeName != nil {
					r.Node = *a.NodeName
				}
				r.setTarget(a.TargetRef)
				r.Ports = ports
				if err := e.row(r); err != nil {
					return err
				}
				n++
			}
		}
	}
	if n == 0 {
		return e.row(base)
	}
	return nil
}

func addressType(ip string) string {
	switch {
	case ip == "":
		return ""
	case strings.Contains(ip, ":"):
		return "IPv6"
	case strings.Count(ip, ".") == 3 && strings.Trim(ip, "0123456789.") == "":
		return "IPv4"
	}
	return "FQDN"
}

func portText(name string, port int32, proto corev1.Protocol) string {
	if proto == "" {
		proto = corev1.ProtocolTCP
	}
	s := strconv.Itoa(int(port)) + "/" + string(proto)
	if name != "" {
		s = name + ":" + s
	}
	return s
}

func endpointPorts(ps []corev1.EndpointPort) string {
	parts := make([]string, 0, len(ps))
	for _, p := range ps {
		parts = append(parts, portText(p.Name, p.Port, p.Protocol))
	}
	return strings.Join(parts, ",")
}

func slicePorts(ps []discv1.EndpointPort) string {
	parts := make([]string, 0, len(ps))
	for _, p := range ps {
		var name string
		var port int32
		var proto corev1.Protocol
		if p.Name != nil {
			name = *p.Name
		}
		if p.Port != nil {
			port = *p.Port
		}
		if p.Protocol != nil {
			proto = *p.Protocol
		}
		if p.Port == nil {
			// A nil port means "all ports" in an EndpointSlice.
			if name != "" {
				parts = append(parts, name+":*")
			} else {
				parts = append(parts, "*")
			}
			continue
		}
		parts = append(parts, portText(name, port, proto))
	}
	return strings.Join(parts, ",")
}

func sliceFromV1beta1(b *discv1beta1.EndpointSlice) discv1.EndpointSlice {
	s := discv1.EndpointSlice{
		TypeMeta:    b.TypeMeta,
		ObjectMeta:  b.ObjectMeta,
		AddressType: discv1.AddressType(b.AddressType),
	}
	for _, p := range b.Ports {
		s.Ports = append(s.Ports, discv1.EndpointPort{Name: p.Name, Protocol: p.Protocol, Port: p.Port, AppProtocol: p.AppProtocol})
	}
	for _, ep := range b.Endpoints {
		n := discv1.Endpoint{
			Addresses: ep.Addresses,
			Conditions: discv1.EndpointConditions{
				Ready: ep.Conditions.Ready, Serving: ep.Conditions.Serving, Terminating: ep.Conditions.Terminating,
			},
			Hostname:  ep.Hostname,
			TargetRef: ep.TargetRef,
			NodeName:  ep.NodeName,
		}
		if z, ok := ep.Topology[corev1.LabelTopologyZone]; ok {
			n.Zone = &z
		} else if z, ok := ep.Topology[corev1.LabelFailureDomainBetaZone]; ok {
			n.Zone = &z
		}
		if n.NodeName == nil {
			if h, ok := ep.Topology[corev1.LabelHostname]; ok {
				n.NodeName = &h
			}
		}
		s.Endpoints = append(s.Endpoints, n)
	}
	return s
}

func (e *emitter) endpointSlice(s *discv1.EndpointSlice, o Origin, deleted bool) error {
	base := EndpointAddress{
		Origin: o, Kind: KindEndpointSlice, Namespace: s.Namespace, Name: s.Name, Service: s.Labels[serviceNameLabel],
		UID: string(s.UID), ResourceVersion: s.ResourceVersion, ChangeTime: changeTime(&s.ObjectMeta),
		AddressType: string(s.AddressType),
	}
	if deleted {
		base.Deleted = true
		return e.row(base)
	}
	ports := slicePorts(s.Ports)
	n := 0
	for _, ep := range s.Endpoints {
		c := ep.Conditions
		// API semantics: a nil ready means unknown and is to be read as ready; a nil serving
		// is read as ready; a nil terminating as false.
		ready := c.Ready == nil || *c.Ready
		serving := ready
		if c.Serving != nil {
			serving = *c.Serving
		}
		terminating := c.Terminating != nil && *c.Terminating
		for _, ip := range ep.Addresses {
			r := base
			r.IP = ip
			if r.AddressType == "" {
				r.AddressType = addressType(ip)
			}
			if ep.Hostname != nil {
				r.Hostname = *ep.Hostname
			}
			r.Ready, r.Serving, r.Terminating = boolp(ready), boolp(serving), boolp(terminating)
			if ep.NodeName != nil {
				r.Node = *ep.NodeName
			}
			if ep.Zone != nil {
				r.Zone = *ep.Zone
			}
			r.setTarget(ep.TargetRef)
			r.Ports = ports
			if err := e.row(r); err != nil {
				return err
			}
			n++
		}
	}
	if n == 0 {
		return e.row(base)
	}
	return nil
}

func serviceRecord(s *corev1.Service, o Origin, deleted bool) Service {
	r := Service{
		Origin: o, Deleted: deleted, Namespace: s.Namespace, Name: s.Name, UID: string(s.UID),
		Type: string(s.Spec.Type), ClusterIP: s.Spec.ClusterIP, ExternalName: s.Spec.ExternalName,
		Selector: s.Spec.Selector, PublishNotReady: s.Spec.PublishNotReadyAddresses,
		ResourceVersion: s.ResourceVersion, CreationTimestamp: s.CreationTimestamp.Time,
		ExternalTrafficPolicy: string(s.Spec.ExternalTrafficPolicy),
	}
	if r.Type == "" {
		r.Type = string(corev1.ServiceTypeClusterIP)
	}
	if s.Spec.InternalTrafficPolicy != nil {
		r.InternalTrafficPolicy = string(*s.Spec.InternalTrafficPolicy)
	}
	parts := make([]string, 0, len(s.Spec.Ports))
	for _, p := range s.Spec.Ports {
		t := portText(p.Name, p.Port, p.Protocol)
		target := p.TargetPort.String()
		if p.TargetPort.Type == intstr.Int && p.TargetPort.IntVal == 0 {
			target = ""
		}
		if target != "" && target != strconv.Itoa(int(p.Port)) {
			// name:port->target/PROTO
			i := strings.LastIndexByte(t, '/')
			t = t[:i] + "->" + target + t[i:]
		}
		if p.NodePort != 0 {
			t += fmt.Sprintf("(node:%d)", p.NodePort)
		}
		parts = append(parts, t)
	}
	r.Ports = strings.Join(parts, ",")
	return r
}

func leaseRecord(l *coordv1.Lease, o Origin) LeaderLock {
	r := LeaderLock{Origin: o, Kind: KindLease, Namespace: l.Namespace, Name: l.Name, LockType: "lease",
		ResourceVersion: l.ResourceVersion}
	if l.Spec.HolderIdentity != nil {
		r.Holder = *l.Spec.HolderIdentity
	}
	if l.Spec.LeaseDurationSeconds != nil {
		d := int64(*l.Spec.LeaseDurationSeconds)
		r.LeaseDurationS = &d
	}
	if l.Spec.AcquireTime != nil {
		r.AcquireTime = l.Spec.AcquireTime.Time
	}
	if l.Spec.RenewTime != nil {
		r.RenewTime = l.Spec.RenewTime.Time
	}
	if l.Spec.LeaseTransitions != nil {
		t := int64(*l.Spec.LeaseTransitions)
		r.Transitions = &t
	}
	return r
}

// leaderRecord is client-go's LeaderElectionRecord as stored in the leader annotation.
type leaderRecord struct {
	HolderIdentity       string  `json:"holderIdentity"`
	LeaseDurationSeconds *int64  `json:"leaseDurationSeconds"`
	AcquireTime          string  `json:"acquireTime"`
	RenewTime            string  `json:"renewTime"`
	LeaderTransitions    *int64  `json:"leaderTransitions"`
	Strategy             *string `json:"strategy,omitempty"`
}

// annotations emits one object_annotations row per annotation, sorted by key, and a leader_locks
// row for a parseable leader annotation. An unparseable leader annotation is an objectError after
// the rows have been emitted.
func (e *emitter) annotations(kind string, m *metav1.ObjectMeta, o Origin) error {
	keys := make([]string, 0, len(m.Annotations))
	for k := range m.Annotations {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		if err := e.row(ObjectAnnotation{Origin: o, Kind: kind, Namespace: m.Namespace, Name: m.Name, Key: k,
			Value: m.Annotations[k], ResourceVersion: m.ResourceVersion}); err != nil {
			return err
		}
	}
	v, ok := m.Annotations[LeaderAnnotation]
	if !ok {
		return nil
	}
	var lr leaderRecord
	if err := json.Unmarshal([]byte(v), &lr); err != nil {
		return &objectError{fmt.Sprintf("%s %s/%s: annotation %s is not a leader-election record: %v", kind, m.Namespace, m.Name, LeaderAnnotation, err)}
	}
	r := LeaderLock{Origin: o, Kind: kind, Namespace: m.Namespace, Name: m.Name, LockType: "annotation",
		Holder: lr.HolderIdentity, LeaseDurationS: lr.LeaseDurationSeconds, Transitions: lr.LeaderTransitions,
		ResourceVersion: m.ResourceVersion}
	var bad []string
	for _, f := range []struct {
		name string
		s    string
		t    *time.Time
	}{{"acquireTime", lr.AcquireTime, &r.AcquireTime}, {"renewTime", lr.RenewTime, &r.RenewTime}} {
		if f.s == "" {
			continue
		}
		t, err := time.Parse(time.RFC3339Nano, f.s)
		if err != nil {
			bad = append(bad, fmt.Sprintf("%s %q", f.name, f.s))
			continue
		}
		*f.t = t
	}
	if err := e.row(r); err != nil {
		return err
	}
	if len(bad) > 0 {
		return &objectError{fmt.Sprintf("%s %s/%s: leader annotation has unparseable %s", kind, m.Namespace, m.Name, strings.Join(bad, ", "))}
	}
	return nil
}

// probeDefaults are the API server's defaults for unset (zero) probe fields.
func probeValue(v int32, def int64) int64 {
	if v <= 0 {
		return def
	}
	return int64(v)
}

func resolvePort(p intstr.IntOrString, c *corev1.Container) (int64, string) {
	if p.Type == intstr.Int {
		return int64(p.IntVal), ""
	}
	if n, err := strconv.Atoi(p.StrVal); err == nil {
		return int64(n), ""
	}
	for _, cp := range c.Ports {
		if cp.Name == p.StrVal {
			return int64(cp.ContainerPort), p.StrVal
		}
	}
	return 0, p.StrVal
}

func probeRow(pr *corev1.Probe, c *corev1.Container) PodProbe {
	r := PodProbe{
		PeriodS:          probeValue(pr.PeriodSeconds, 10),
		TimeoutS:         probeValue(pr.TimeoutSeconds, 1),
		InitialDelayS:    probeValue(pr.InitialDelaySeconds, 0),
		FailureThreshold: probeValue(pr.FailureThreshold, 3),
		SuccessThreshold: probeValue(pr.SuccessThreshold, 1),
	}
	switch h := pr.ProbeHandler; {
	case h.HTTPGet != nil:
		r.Type = "http"
		r.Port, r.PortName = resolvePort(h.HTTPGet.Port, c)
		r.Path, r.Host = h.HTTPGet.Path, h.HTTPGet.Host
		r.Scheme = string(h.HTTPGet.Scheme)
		if r.Scheme == "" {
			r.Scheme = "HTTP"
		}
	case h.TCPSocket != nil:
		r.Type = "tcp"
		r.Port, r.PortName = resolvePort(h.TCPSocket.Port, c)
		r.Host = h.TCPSocket.Host
	case h.GRPC != nil:
		r.Type = "grpc"
		r.Port = int64(h.GRPC.Port)
	case h.Exec != nil:
		r.Type = "exec"
	default:
		r.Type = "unknown"
	}
	return r
}

func (e *emitter) pod(p *corev1.Pod, o Origin, deleted bool) error {
	r := Pod{
		Origin: o, Deleted: deleted, Namespace: p.Namespace, Name: p.Name, UID: string(p.UID), Node: p.Spec.NodeName,
		PodIP: p.Status.PodIP, HostNetwork: p.Spec.HostNetwork, Phase: string(p.Status.Phase), Labels: p.Labels,
		Containers: int64(len(p.Spec.Containers)), ResourceVersion: p.ResourceVersion,
		CreationTimestamp: p.CreationTimestamp.Time,
	}
	if p.DeletionTimestamp != nil {
		r.DeletionTimestamp = p.DeletionTimestamp.Time
	}
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			r.Ready = boolp(c.Status == corev1.ConditionTrue)
		}
	}
	for _, s := range p.Status.ContainerStatuses {
		r.Restarts += int64(s.RestartCount)
	}
	var owner *metav1.OwnerReference
	for i := range p.OwnerReferences {
		ref := &p.OwnerReferences[i]
		if owner == nil || (ref.Controller != nil && *ref.Controller) {
			owner = ref
			if ref.Controller != nil && *ref.Controller {
				break
			}
		}
	}
	if owner != nil {
		r.OwnerKind, r.OwnerName = owner.Kind, owner.Name
	}
	var probes []PodProbe
	add := func(c *corev1.Container, ctype string) {
		for _, k := range []struct {
			name string
			pr   *corev1.Probe
			sum  *ProbeSummary
		}{{"readiness", c.ReadinessProbe, &r.Readiness}, {"liveness", c.LivenessProbe, &r.Liveness}, {"startup", c.StartupProbe, &r.Startup}} {
			if k.pr == nil {
				continue
			}
			pp := probeRow(k.pr, c)
			pp.Origin, pp.Namespace, pp.Pod, pp.UID, pp.Node, pp.PodIP = o, p.Namespace, p.Name, string(p.UID), p.Spec.NodeName, p.Status.PodIP
			pp.Container, pp.ContainerType, pp.Probe = c.Name, ctype, k.name
			probes = append(probes, pp)
			if ctype == "container" && k.sum.Type == "" {
				*k.sum = ProbeSummary{Type: pp.Type, Port: pp.Port, PeriodS: pp.PeriodS}
			}
		}
	}
	for i := range p.Spec.Containers {
		add(&p.Spec.Containers[i], "container")
	}
	for i := range p.Spec.InitContainers {
		c := &p.Spec.InitContainers[i]
		// Only sidecars (restartable init containers) are probed by the kubelet.
		if c.RestartPolicy != nil && *c.RestartPolicy == corev1.ContainerRestartPolicyAlways {
			add(c, "sidecar")
		}
	}
	r.Probes = int64(len(probes))
	if err := e.row(r); err != nil {
		return err
	}
	if deleted {
		return nil
	}
	for _, pp := range probes {
		if err := e.row(pp); err != nil {
			return err
		}
	}
	return nil
}

// setTarget fills the target columns from an address's targetRef (Endpoints and slices alike).
func (r *EndpointAddress) setTarget(ref *corev1.ObjectReference) {
	if ref == nil {
		return
	}
	r.TargetKind, r.TargetName = ref.Kind, ref.Name
	if ref.Kind == KindPod {
		r.Pod = ref.Name
	}
}
