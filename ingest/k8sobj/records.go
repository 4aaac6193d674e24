package k8sobj

import "time"

// CallerColumns are the leading columns of every table this package feeds. The decoder does not
// know them; the caller prepends them to Record.Values():
//
//	captured_at TIMESTAMPTZ  when the snapshot was taken (TimeFromFileName, --at, or the audit event time)
//	source      VARCHAR      'snapshot' for files decoded by Decode, 'audit' for bodies decoded by DecodeObject
//	source_file VARCHAR      the file the rows came from (- for stdin)
//	load_id     BIGINT       ingest_files.load_id of the load that added the row
//
// and appends the cluster (ClusterColumn: --cluster, the directory, or the audit event's) after them.
// A full row is therefore append([]any{capturedAt, source, file, loadID}, rec.Values()..., cluster).
var CallerColumns = []string{"captured_at", "source", "source_file", "load_id"}

// ClusterColumn is the last column of every table this package feeds, filled by the caller.
const ClusterColumn = "cluster"

// Record is one row for one of the tables documented in tables.go.
// Values returns the column values after CallerColumns, in table order. Values are nil (SQL NULL),
// string, bool, int64, time.Time or map[string]string; the caller converts map[string]string to the
// driver's MAP type (duckdb.Map) before appending.
type Record interface {
	Table() string
	Values() []any
}

// Table names, as in tables.go.
const (
	TableEndpointAddresses = "endpoint_addresses"
	TableServices          = "services"
	TablePods              = "pods"
	TablePodProbes         = "pod_probes"
	TableObjectAnnotations = "object_annotations"
	TableLeaderLocks       = "leader_locks"
)

// Origin says where an object was found in its input; it is common to every record.
type Origin struct {
	Line  int64  `col:"source_line"` // 1-based line where the object starts; 0 (NULL) when unknown
	Seq   int64  `col:"object_seq"`  // 1-based ordinal of the object in the file (list items count singly)
	Event string `col:"event"`       // "" (NULL) plain object; ADDED/MODIFIED/DELETED for watch events; the audit verb for DecodeObject
}

func (o Origin) values() []any {
	return []any{nzInt(o.Line), nzInt(o.Seq), nzStr(o.Event)}
}

// EndpointAddress is one row of endpoint_addresses: one address of one Endpoints or EndpointSlice
// object as seen at one point. Marker rows have IP == "": Deleted=false means the object exists but
// has no address at all; Deleted=true means the object was deleted (watch DELETED event or audit delete).
type EndpointAddress struct {
	Origin
	Kind            string    `col:"kind"`
	Namespace       string    `col:"namespace"`
	Name            string    `col:"name"`
	Service         string    `col:"service"`
	UID             string    `col:"uid"`
	ResourceVersion string    `col:"resource_version"`
	ChangeTime      time.Time `col:"change_time"`
	Deleted         bool      `col:"deleted"`
	AddressType     string    `col:"address_type"`
	IP              string    `col:"ip"`
	Hostname        string    `col:"hostname"`
	Ready           *bool     `col:"ready"`
	Serving         *bool     `col:"serving"`
	Terminating     *bool     `col:"terminating"`
	TargetKind      string    `col:"target_kind"`
	TargetName      string    `col:"target_name"`
	Pod             string    `col:"pod"`
	Node            string    `col:"node"`
	Zone            string    `col:"zone"`
	Ports           string    `col:"ports"`
}

func (EndpointAddress) Table() string { return TableEndpointAddresses }

func (r EndpointAddress) Values() []any {
	return append(r.Origin.values(),
		r.Kind, nzStr(r.Namespace), r.Name, nzStr(r.Service), nzStr(r.UID), nzStr(r.ResourceVersion),
		nzTime(r.ChangeTime), r.Deleted, nzStr(r.AddressType), nzStr(r.IP), nzStr(r.Hostname),
		nzBool(r.Ready), nzBool(r.Serving), nzBool(r.Terminating),
		nzStr(r.TargetKind), nzStr(r.TargetName), nzStr(r.Pod), nzStr(r.Node), nzStr(r.Zone), nzStr(r.Ports))
}

// Service is one row of services.
type Service struct {
	Origin
	Deleted               bool              `col:"deleted"`
	Namespace             string            `col:"namespace"`
	Name                  string            `col:"name"`
	UID                   string            `col:"uid"`
	Type                  string            `col:"type"`
	ClusterIP             string            `col:"cluster_ip"`
	ExternalName          string            `col:"external_name"`
	Selector              map[string]string `col:"selector"`
	Ports                 string            `col:"ports"`
	PublishNotReady       bool              `col:"publish_not_ready_addresses"`
	InternalTrafficPolicy string            `col:"internal_traffic_policy"`
	ExternalTrafficPolicy string            `col:"external_traffic_policy"`
	ResourceVersion       string            `col:"resource_version"`
	CreationTimestamp     time.Time         `col:"creation_timestamp"`
}

func (Service) Table() string { return TableServices }

func (r Service) Values() []any {
	return append(r.Origin.values(),
		r.Deleted, nzStr(r.Namespace), r.Name, nzStr(r.UID), nzStr(r.Type), nzStr(r.ClusterIP), nzStr(r.ExternalName),
		nzMap(r.Selector), nzStr(r.Ports), r.PublishNotReady, nzStr(r.InternalTrafficPolicy), nzStr(r.ExternalTrafficPolicy),
		nzStr(r.ResourceVersion), nzTime(r.CreationTimestamp))
}

// ProbeSummary is the pods-table summary of one probe kind (readiness, liveness or startup):
// the probe of the first regular container (spec order) that has one.
type ProbeSummary struct {
	Type    string // http, tcp, exec, grpc; "" when no container has this probe
	Port    int64  // resolved port; 0 (NULL) for exec or an unresolvable named port
	PeriodS int64
}

func (p ProbeSummary) values() []any {
	if p.Type == "" {
		return []any{nil, nil, nil}
	}
	return []any{p.Type, nzInt(p.Port), p.PeriodS}
}

// Pod is one row of pods.
type Pod struct {
	Origin
	Deleted           bool              `col:"deleted"`
	Namespace         string            `col:"namespace"`
	Name              string            `col:"name"`
	UID               string            `col:"uid"`
	Node              string            `col:"node"`
	PodIP             string            `col:"pod_ip"`
	HostNetwork       bool              `col:"host_network"`
	Phase             string            `col:"phase"`
	Ready             *bool             `col:"ready"`
	Labels            map[string]string `col:"labels"`
	OwnerKind         string            `col:"owner_kind"`
	OwnerName         string            `col:"owner_name"`
	Containers        int64             `col:"containers"`
	Restarts          int64             `col:"restarts"`
	Readiness         ProbeSummary      `col:"readiness_probe_type,readiness_probe_port,readiness_period_s"`
	Liveness          ProbeSummary      `col:"liveness_probe_type,liveness_probe_port,liveness_period_s"`
	Startup           ProbeSummary      `col:"startup_probe_type,startup_probe_port,startup_period_s"`
	Probes            int64             `col:"probes"`
	ResourceVersion   string            `col:"resource_version"`
	CreationTimestamp time.Time         `col:"creation_timestamp"`
	DeletionTimestamp time.Time         `col:"deletion_timestamp"`
}

func (Pod) Table() string { return TablePods }

func (r Pod) Values() []any {
	v := append(r.Origin.values(),
		r.Deleted, nzStr(r.Namespace), r.Name, nzStr(r.UID), nzStr(r.Node), nzStr(r.PodIP), r.HostNetwork,
		nzStr(r.Phase), nzBool(r.Ready), nzMap(r.Labels), nzStr(r.OwnerKind), nzStr(r.OwnerName), r.Containers, r.Restarts)
	v = append(v, r.Readiness.values()...)
	v = append(v, r.Liveness.values()...)
	v = append(v, r.Startup.values()...)
	return append(v, r.Probes, nzStr(r.ResourceVersion), nzTime(r.CreationTimestamp), nzTime(r.DeletionTimestamp))
}

// PodProbe is one row of pod_probes: one probe (readiness, liveness or startup) of one container.
type PodProbe struct {
	Origin
	Namespace        string `col:"namespace"`
	Pod              string `col:"pod"`
	UID              string `col:"uid"`
	Node             string `col:"node"`
	PodIP            string `col:"pod_ip"`
	Container        string `col:"container"`
	ContainerType    string `col:"container_type"`
	Probe            string `col:"probe"`
	Type             string `col:"type"`
	Port             int64  `col:"port"`
	PortName         string `col:"port_name"`
	Path             string `col:"path"`
	Scheme           string `col:"scheme"`
	Host             string `col:"host"`
	PeriodS          int64  `col:"period_s"`
	TimeoutS         int64  `col:"timeout_s"`
	InitialDelayS    int64  `col:"initial_delay_s"`
	FailureThreshold int64  `col:"failure_threshold"`
	SuccessThreshold int64  `col:"success_threshold"`
}

func (PodProbe) Table() string { return TablePodProbes }

func (r PodProbe) Values() []any {
	return append(r.Origin.values(),
		nzStr(r.Namespace), r.Pod, nzStr(r.UID), nzStr(r.Node), nzStr(r.PodIP), r.Container, r.ContainerType, r.Probe, r.Type,
		nzInt(r.Port), nzStr(r.PortName), nzStr(r.Path), nzStr(r.Scheme), nzStr(r.Host),
		r.PeriodS, r.TimeoutS, r.InitialDelayS, r.FailureThreshold, r.SuccessThreshold)
}

// ObjectAnnotation is one row of object_annotations.
type ObjectAnnotation struct {
	Origin
	Kind            string `col:"kind"`
	Namespace       string `col:"namespace"`
	Name            string `col:"name"`
	Key             string `col:"key"`
	Value           string `col:"value"`
	ResourceVersion string `col:"resource_version"`
}

func (ObjectAnnotation) Table() string { return TableObjectAnnotations }

func (r ObjectAnnotation) Values() []any {
	return append(r.Origin.values(), r.Kind, nzStr(r.Namespace), r.Name, r.Key, r.Value, nzStr(r.ResourceVersion))
}

// LeaderLock is one row of leader_locks: the leader-election record of a Lease (spec) or of an
// Endpoints/ConfigMap control-plane.alpha.kubernetes.io/leader annotation.
type LeaderLock struct {
	Origin
	Kind            string    `col:"kind"`
	Namespace       string    `col:"namespace"`
	Name            string    `col:"name"`
	LockType        string    `col:"lock_type"` // lease or annotation
	Holder          string    `col:"holder"`
	LeaseDurationS  *int64    `col:"lease_duration_s"`
	AcquireTime     time.Time `col:"acquire_time"`
	RenewTime       time.Time `col:"renew_time"`
	Transitions     *int64    `col:"transitions"`
	ResourceVersion string    `col:"resource_version"`
}

func (LeaderLock) Table() string { return TableLeaderLocks }

func (r LeaderLock) Values() []any {
	return append(r.Origin.values(), r.Kind, nzStr(r.Namespace), r.Name, r.LockType, nzStr(r.Holder),
		nzIntPtr(r.LeaseDurationS), nzTime(r.AcquireTime), nzTime(r.RenewTime), nzIntPtr(r.Transitions), nzStr(r.ResourceVersion))
}

func nzStr(s string) any {
	if s == "" {
		return nil
	}
	return s
}

func nzInt(i int64) any {
	if i == 0 {
		return nil
	}
	return i
}

func nzIntPtr(i *int64) any {
	if i == nil {
		return nil
	}
	return *i
}

func nzBool(b *bool) any {
	if b == nil {
		return nil
	}
	return *b
}

func nzTime(t time.Time) any {
	if t.IsZero() {
		return nil
	}
	return t.UTC()
}

func nzMap(m map[string]string) any {
	if m == nil {
		return nil
	}
	return m
}
