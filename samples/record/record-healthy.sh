#!/usr/bin/env bash
# record-healthy.sh OUTDIR : normal operation on the real lab control plane: Lease-based leader election
# (client-go v0.33.13 LeaseLock + kube-controller-manager's own Lease), correct watchers (client-go v0.33.13
# reflectors, kubectl -w, a list+watch loop that resumes from the newest RV), a rolling update of
# shop/frontend, no flapping, and one kube-apiserver restart after which the clients relist correctly.
# See ../healthy/README.md. Wall time ~2 min (plus ~15 s startup).
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
APISERVER_EXTRA="--etcd-compaction-interval=15s"
source "$HERE/lib.sh"
OUT=${1:?usage: record-healthy.sh OUTDIR}; mkdir -p "$OUT/snapshots"; OUT=$(cd "$OUT" && pwd)
ensure_binaries; ensure_pki
mkdir -p $LAB/run; stop_all; rm -rf "$RUN"; mkdir -p "$RUN"
trap 'stop_all' EXIT; trap 'exit 130' INT TERM
[ -x $BIN/healthyclient ] || (cd "$HERE/healthyclient" && go build -trimpath -o $BIN/healthyclient .)
export READY_PERIOD=10 LIVE_PERIOD=10

start_control_plane
mknode; mkns shop; mkns monitoring
$KA apply -f - >/dev/null <<'YAML'
apiVersion: v1
kind: ServiceAccount
metadata: {name: frontend-controller, namespace: shop}
---
apiVersion: v1
kind: ServiceAccount
metadata: {name: lab-watcher, namespace: shop}
---
apiVersion: v1
kind: ServiceAccount
metadata: {name: endpoint-exporter, namespace: monitoring}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: Role
metadata: {name: leader-election, namespace: shop}
rules:
- apiGroups: ["coordination.k8s.io"]
  resources: ["leases"]
  verbs: ["get", "list", "watch", "create", "update", "patch"]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata: {name: leader-election, namespace: shop}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: Role, name: leader-election}
subjects: [{kind: ServiceAccount, name: frontend-controller, namespace: shop}]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata: {name: lab-watcher-view, namespace: shop}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: view}
subjects: [{kind: ServiceAccount, name: lab-watcher, namespace: shop}]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata: {name: endpoint-exporter}
rules:
- apiGroups: [""]
  resources: ["endpoints", "services"]
  verbs: ["get", "list", "watch"]
- apiGroups: ["discovery.k8s.io"]
  resources: ["endpointslices"]
  verbs: ["get", "list", "watch"]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata: {name: endpoint-exporter}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: endpoint-exporter}
subjects: [{kind: ServiceAccount, name: endpoint-exporter, namespace: monitoring}]
YAML
KC_FC=$(sa_kubeconfig shop frontend-controller); KC_W=$(sa_kubeconfig shop lab-watcher); KC_EX=$(sa_kubeconfig monitoring endpoint-exporter)
mksvc shop frontend frontend; mksvc shop catalog catalog
for n in 1 2 3; do mkpod shop frontend-v1-$n frontend registry.invalid/frontend:1.0; set_pod shop frontend-v1-$n True 10.200.0.$((4 + n)); done
for n in 1 2; do mkpod shop catalog-$n catalog; set_pod shop catalog-$n True 192.0.2.7$n; done
for _ in $(seq 1 40); do [ "$($KA -n shop get endpoints frontend -o jsonpath='{.subsets[0].addresses[*].ip}' 2>/dev/null | wc -w)" = 3 ] && break; sleep 0.25; done
log "shop/frontend v1 pods 10.200.0.5-7 ready, shop/catalog 2 pods"

( for _ in $(seq 1 50); do heartbeat; sleep 3; done ) >/dev/null 2>&1 & echo $! > $RUN/client-heartbeat.pid
start_bg client-informer $BIN/healthyclient -mode informer -kubeconfig "$KC_EX" -for 110s -user-agent "endpoint-exporter/v1.2.0 (linux/amd64) client-go/v0.33.13"
start_bg client-watchloop $BIN/leclient -mode watch -kubeconfig "$KC_W" -namespace shop -for 110s -watch-timeout 5
start_bg client-kubectl-watch-slices timeout 110 $KA get endpointslices -A -w -o name
start_bg client-le-a $BIN/healthyclient -mode leader -kubeconfig "$KC_FC" -namespace shop -name frontend-controller -id frontend-controller-6b7d9-x2k4p -for 60s -user-agent "frontend-controller/v3.0.1 (linux/amd64) client-go/v0.33.13 leader-election"
sleep 1
start_bg client-le-b $BIN/healthyclient -mode leader -kubeconfig "$KC_FC" -namespace shop -name frontend-controller -id frontend-controller-6b7d9-q8m2z -for 108s -user-agent "frontend-controller/v3.0.1 (linux/amd64) client-go/v0.33.13 leader-election"
snapshot_loop "$OUT/snapshots" 112 2 & echo $! > $RUN/snap-loop.pid
sleep 6
log "rolling update shop/frontend v1 -> v2 (maxSurge 1, maxUnavailable 0)"
for n in 1 2 3; do
  mkpod shop frontend-v2-$n frontend registry.invalid/frontend:2.0
  sleep 1; set_pod shop frontend-v2-$n True 10.200.0.$((1 + n))
  sleep 2
  $KA -n shop delete pod frontend-v1-$n --wait=false >/dev/null          # terminating: leaves the endpoints
  sleep 2
  $KA -n shop delete pod frontend-v1-$n --grace-period=0 --force >/dev/null 2>&1 || true   # what the kubelet would confirm
  sleep 1
done
log "rollout done; steady state"
sleep 12
restart_apiserver
kill -0 "$(cat $RUN/kcm.pid)" 2>/dev/null || { log "kcm exited during the restart; starting it again"; start_kcm -2; }
log "after the restart: clients relist / resume; frontend-controller-a releases its Lease at ~60 s"
for f in $RUN/client-le-b.pid $RUN/client-informer.pid $RUN/snap-loop.pid; do
  for _ in $(seq 1 600); do kill -0 "$(cat $f)" 2>/dev/null || break; sleep 0.2; done
done
stop_pid $RUN/client-heartbeat.pid 2
snapshot_json "$OUT/snapshots" || true; snapshot_yaml "$OUT/snapshots"; rm -f "$OUT"/snapshots/*.tmp
log "stopping"; stop_all
finish "$OUT"
log "done: $(head -1 "$OUT/stats.txt") -> $OUT"
