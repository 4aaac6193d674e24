#!/usr/bin/env bash
# record-election.sh OUTDIR : legacy Endpoints/ConfigMap leader-election locks renewing every 2 s,
# several Endpoints watchers, holder transitions; recorded on the real lab control plane.
# See ../election-lock-churn/README.md. Wall time ~1.5 min (plus ~15 s startup).
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
source "$HERE/lib.sh"
OUT=${1:?usage: record-election.sh OUTDIR}; mkdir -p "$OUT/snapshots"; OUT=$(cd "$OUT" && pwd)
ensure_binaries; ensure_pki
mkdir -p $LAB/run; stop_all; rm -rf "$RUN"; mkdir -p "$RUN"
trap 'stop_all' EXIT; trap 'exit 130' INT TERM
LE="-lease-duration 10s -renew-deadline 6s -retry-period 2s"

start_control_plane
mknode; mkns lab; mkns monitoring; mkns ingress-nginx
$KA apply -f - >/dev/null <<'YAML'
apiVersion: v1
kind: ServiceAccount
metadata: {name: orders-operator, namespace: lab}
---
apiVersion: v1
kind: ServiceAccount
metadata: {name: billing-operator, namespace: lab}
---
apiVersion: v1
kind: ServiceAccount
metadata: {name: reports-operator, namespace: lab}
---
apiVersion: v1
kind: ServiceAccount
metadata: {name: ingress-nginx, namespace: ingress-nginx}
---
apiVersion: v1
kind: ServiceAccount
metadata: {name: prometheus, namespace: monitoring}
---
apiVersion: v1
kind: ServiceAccount
metadata: {name: blackbox-exporter, namespace: monitoring}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: Role
metadata: {name: leader-election, namespace: lab}
rules:
- apiGroups: [""]
  resources: ["endpoints", "configmaps"]
  verbs: ["get", "list", "watch", "create", "update", "patch"]
- apiGroups: ["coordination.k8s.io"]
  resources: ["leases"]
  verbs: ["get", "list", "watch", "create", "update", "patch"]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata: {name: leader-election, namespace: lab}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: Role, name: leader-election}
subjects:
- {kind: ServiceAccount, name: orders-operator, namespace: lab}
- {kind: ServiceAccount, name: billing-operator, namespace: lab}
- {kind: ServiceAccount, name: reports-operator, namespace: lab}
- {kind: ServiceAccount, name: ingress-nginx, namespace: ingress-nginx}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata: {name: endpoints-watchers-view}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: view}
subjects:
- {kind: ServiceAccount, name: ingress-nginx, namespace: ingress-nginx}
- {kind: ServiceAccount, name: prometheus, namespace: monitoring}
- {kind: ServiceAccount, name: blackbox-exporter, namespace: monitoring}
YAML
KC_ORD=$(sa_kubeconfig lab orders-operator); KC_BILL=$(sa_kubeconfig lab billing-operator)
KC_REP=$(sa_kubeconfig lab reports-operator); KC_ING=$(sa_kubeconfig ingress-nginx ingress-nginx)
KC_PROM=$(sa_kubeconfig monitoring prometheus); KC_BB=$(sa_kubeconfig monitoring blackbox-exporter)
# the orders operator's metrics Service: its Endpoints object doubles as the lock (Service exists)
$KA apply -f - >/dev/null <<'YAML'
apiVersion: v1
kind: Service
metadata: {name: orders-operator, namespace: lab}
spec:
  selector: {app: orders-operator}
  ports: [{name: metrics, port: 8383, targetPort: 8383}]
YAML
mkpod lab orders-operator-0 orders-operator registry.invalid/orders-operator:0.9.2; set_pod lab orders-operator-0 True 192.0.2.51
mksvc lab web web; for n in 1 2; do mkpod lab web-$n web; set_pod lab web-$n True 192.0.2.6$n; done
log "lab/orders-operator Service + pod, lab/web Service + 2 pods"

( for _ in $(seq 1 40); do heartbeat; sleep 3; done ) >/dev/null 2>&1 & echo $! > $RUN/client-heartbeat.pid
# Endpoints watchers (all bounded)
start_bg client-watch-prometheus timeout 85 kubectl --kubeconfig "$KC_PROM" get endpoints -A -w -o name
start_bg client-watch-blackbox  timeout 85 kubectl --kubeconfig "$KC_BB" get endpoints -A -w --output-watch-events -o name
start_bg client-watch-ingress   $BIN/leclient -mode watch -kubeconfig "$KC_ING" -namespace "" -for 85s -watch-timeout 30 -user-agent "nginx-ingress-controller/v1.9.6 (linux/amd64) client-go/v0.23.16"
start_bg client-watch-admin     timeout 85 $KA -n lab get endpoints -w -o wide
snapshot_loop "$OUT/snapshots" 80 2 & echo $! > $RUN/snap-loop.pid
sleep 1
# Endpoints lock WITH a Service of that name: three candidates
start_bg client-le-orders-a $BIN/leclient -mode leader -lock endpoints -kubeconfig "$KC_ORD" -namespace lab -name orders-operator -id orders-operator-7c9f-a -for 25s $LE -user-agent "orders-operator/v0.9.2 (linux/amd64) client-go/v0.23.16 leader-election"
sleep 1
start_bg client-le-orders-b $BIN/leclient -mode leader -lock endpoints -kubeconfig "$KC_ORD" -namespace lab -name orders-operator -id orders-operator-7c9f-b -for 45s $LE -user-agent "orders-operator/v0.9.2 (linux/amd64) client-go/v0.23.16 leader-election"
start_bg client-le-orders-c $BIN/leclient -mode leader -lock endpoints -kubeconfig "$KC_ORD" -namespace lab -name orders-operator -id orders-operator-7c9f-c -for 72s $LE -user-agent "orders-operator/v0.9.2 (linux/amd64) client-go/v0.23.16 leader-election"
# Endpoints lock with NO Service of that name
start_bg client-le-ingress $BIN/leclient -mode leader -lock endpoints -kubeconfig "$KC_ING" -namespace lab -name ingress-controller-leader -id ingress-nginx-controller-5d8b -for 72s $LE -user-agent "nginx-ingress-controller/v1.9.6 (linux/amd64) client-go/v0.23.16 leader-election"
# ConfigMap lock: two candidates, the first one "crashes" (no release) -> takeover after lease expiry
start_bg client-le-billing-a $BIN/leclient -mode leader -lock configmaps -kubeconfig "$KC_BILL" -namespace lab -name billing-operator-lock -id billing-operator-a -for 35s -release=false $LE -user-agent "billing-operator/v2.1.0 (linux/amd64) client-go/v0.23.16 leader-election"
sleep 1
start_bg client-le-billing-b $BIN/leclient -mode leader -lock configmaps -kubeconfig "$KC_BILL" -namespace lab -name billing-operator-lock -id billing-operator-b -for 70s $LE -user-agent "billing-operator/v2.1.0 (linux/amd64) client-go/v0.23.16 leader-election"
# contrast: a Lease lock renewing every 2 s (must not fire)
start_bg client-le-reports $BIN/leclient -mode leader -lock leases -kubeconfig "$KC_REP" -namespace lab -name reports-operator -id reports-operator-0 -for 70s $LE -user-agent "reports-operator/v1.4.0 (linux/amd64) client-go/v0.23.16 leader-election"
log "candidates started"
sleep 76
for f in $RUN/client-le-*.pid $RUN/client-watch-*.pid $RUN/snap-loop.pid; do
  for _ in $(seq 1 60); do kill -0 "$(cat $f)" 2>/dev/null || break; sleep 0.2; done
done
stop_pid $RUN/client-heartbeat.pid 2
snapshot_json "$OUT/snapshots" || true; snapshot_yaml "$OUT/snapshots"; rm -f "$OUT"/snapshots/*.tmp
log "stopping"; stop_all
finish "$OUT"
log "done: $(head -1 "$OUT/stats.txt") -> $OUT"
