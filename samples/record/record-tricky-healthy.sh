#!/usr/bin/env bash
# record-tricky-healthy.sh OUTDIR : healthy clients that naive detectors confuse, on the real lab control plane
# with etcd 3.5 and WatchList switched on (kube-apiserver --feature-gates=WatchList=true,
# kube-controller-manager --feature-gates=WatchListClient=true):
#  * inventory-controller: one process, three informers on endpoints of namespace lab (unfiltered,
#    label-selected tier=frontend, metadata-only), classic list + watch;
#  * mesh-agent: one process with WatchList streams (KUBE_FEATURE_WatchListClient=true): services
#    (unfiltered, label-selected, metadata-only) and endpointslices, all namespaces;
#  * kube-proxy on 8 "nodes": the same ServiceAccount and User-Agent from 127.0.0.11..18, watching
#    services, endpointslices (kube-proxy's label selector) and endpoints;
#  * a legacy Endpoints leader lock (ingress-controller-leader, client-go v0.23 leclient) for ~4 min:
#    the one unhealthy thing, so that the lock's watcher fan-out counts the 8 kube-proxies;
#  * a rolling update, a deliberate Service delete + re-create by a human (kubectl), a
#    kube-controller-manager restart and a kube-apiserver restart (the WatchList clients re-stream).
# See ../tricky-healthy/README.md. Wall time ~8 min (plus startup and the etcd 3.5 build on first use).
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
LAB=${LAB:-/tmp/k8s-lab}
APISERVER_EXTRA="--feature-gates=WatchList=true"
KCM_EXTRA="--feature-gates=WatchListClient=true"
ETCD_BIN=$LAB/bin/etcd-3.5
source "$HERE/lib.sh"
OUT=${1:?usage: record-tricky-healthy.sh OUTDIR}; mkdir -p "$OUT/snapshots"; OUT=$(cd "$OUT" && pwd)
ensure_etcd35; ensure_binaries; ensure_pki
mkdir -p $LAB/run; stop_all; rm -rf "$RUN"; mkdir -p "$RUN"
trap 'stop_all' EXIT; trap 'exit 130' INT TERM
[ -x $BIN/trickyclient ] && [ $BIN/trickyclient -nt "$HERE/trickyclient/main.go" ] || (cd "$HERE/trickyclient" && go build -trimpath -o $BIN/trickyclient .)
export READY_PERIOD=10 LIVE_PERIOD=10

start_control_plane
mknode; mkns lab
$KA apply -f - >/dev/null <<'YAML'
apiVersion: v1
kind: ServiceAccount
metadata: {name: inventory-controller, namespace: lab}
---
apiVersion: v1
kind: ServiceAccount
metadata: {name: ingress-controller, namespace: lab}
---
apiVersion: v1
kind: ServiceAccount
metadata: {name: mesh-agent, namespace: kube-system}
---
apiVersion: v1
kind: ServiceAccount
metadata: {name: kube-proxy, namespace: kube-system}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: Role
metadata: {name: inventory-controller, namespace: lab}
rules:
- apiGroups: [""]
  resources: ["endpoints"]
  verbs: ["get", "list", "watch"]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata: {name: inventory-controller, namespace: lab}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: Role, name: inventory-controller}
subjects: [{kind: ServiceAccount, name: inventory-controller, namespace: lab}]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: Role
metadata: {name: ingress-leader-election, namespace: lab}
rules:
- apiGroups: [""]
  resources: ["endpoints"]
  verbs: ["get", "create", "update"]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata: {name: ingress-leader-election, namespace: lab}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: Role, name: ingress-leader-election}
subjects: [{kind: ServiceAccount, name: ingress-controller, namespace: lab}]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata: {name: mesh-agent}
rules:
- apiGroups: [""]
  resources: ["services"]
  verbs: ["get", "list", "watch"]
- apiGroups: ["discovery.k8s.io"]
  resources: ["endpointslices"]
  verbs: ["get", "list", "watch"]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata: {name: mesh-agent}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: mesh-agent}
subjects: [{kind: ServiceAccount, name: mesh-agent, namespace: kube-system}]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata: {name: kube-proxy}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: system:node-proxier}
subjects: [{kind: ServiceAccount, name: kube-proxy, namespace: kube-system}]
YAML
KC_INV=$(sa_kubeconfig lab inventory-controller); KC_ING=$(sa_kubeconfig lab ingress-controller)
KC_MESH=$(sa_kubeconfig kube-system mesh-agent); KC_PROXY=$(sa_kubeconfig kube-system kube-proxy)
mksvc_labelled() { # ns name app tier
  $KA apply -f - >/dev/null <<YAML
apiVersion: v1
kind: Service
metadata: {name: $2, namespace: $1, labels: {tier: $4}}
spec:
  selector: {app: $3}
  ports: [{name: http, port: 80, targetPort: 8080}]
YAML
}
mksvc_labelled lab frontend frontend frontend; mksvc_labelled lab backend backend backend
for n in 1 2 3; do mkpod lab frontend-v1-$n frontend registry.invalid/frontend:1.0; set_pod lab frontend-v1-$n True 192.0.2.$((10 + n)); done
for n in 1 2; do mkpod lab backend-$n backend; set_pod lab backend-$n True 192.0.2.$((40 + n)); done
for _ in $(seq 1 40); do [ "$($KA -n lab get endpoints frontend -o jsonpath='{.subsets[0].addresses[*].ip}' 2>/dev/null | wc -w)" = 3 ] && break; sleep 0.25; done
log "lab/frontend (3 pods, tier=frontend), lab/backend (2 pods, tier=backend) ready"

DUR=420
( end=$(( $(date +%s) + DUR + 20 )); while [ "$(date +%s)" -lt $end ]; do heartbeat || true; sleep 5; done ) >/dev/null 2>&1 & echo $! > $RUN/client-heartbeat.pid
snapshot_loop "$OUT/snapshots" $(( DUR + 10 )) 15 & echo $! > $RUN/snap-loop.pid
start_bg client-inventory $BIN/trickyclient -kubeconfig "$KC_INV" -namespace lab -for ${DUR}s -watch-timeout 20s \
  -user-agent "inventory-controller/v2.4.0 (linux/amd64) client-go/v0.33.13" \
  -informer endpoints -informer 'endpoints|label=tier=frontend' -informer 'endpoints|metadata'
KUBE_FEATURE_WatchListClient=true start_bg client-mesh $BIN/trickyclient -kubeconfig "$KC_MESH" -for ${DUR}s -watch-timeout 30s \
  -user-agent "mesh-agent/v1.9.2 (linux/amd64) client-go/v0.33.13" \
  -informer services -informer 'services|label=tier=frontend' -informer 'services|metadata' -informer endpointslices
PROXY_SEL='!service.kubernetes.io/headless,!service.kubernetes.io/service-proxy-name'
for n in 1 2 3 4 5 6 7 8; do
  start_bg client-kube-proxy-$n $BIN/trickyclient -kubeconfig "$KC_PROXY" -for $(( DUR - 4 * n ))s -watch-timeout 30s \
    -source-ip 127.0.0.$(( 10 + n )) -user-agent "kube-proxy/v1.33.13 (linux/amd64) kubernetes/lab" \
    -informer "services|label=$PROXY_SEL" -informer "endpointslices|label=$PROXY_SEL" -informer endpoints
  sleep 4
done
log "clients: inventory-controller (3 endpoints informers), mesh-agent (WatchList), kube-proxy x8 (127.0.0.11-18)"
sleep 8
start_bg client-ingress-lock $BIN/leclient -mode leader -lock endpoints -kubeconfig "$KC_ING" -namespace lab \
  -name ingress-controller-leader -id ingress-controller-7d9f8-k2x4q -for 240s -release=false \
  -lease-duration 15s -renew-deadline 10s -retry-period 2s \
  -user-agent "nginx-ingress-controller/v0.34.1 (linux/amd64) ingress-nginx/lab"
sleep 20
log "rolling update lab/frontend v1 -> v2"
for n in 1 2 3; do
  mkpod lab frontend-v2-$n frontend registry.invalid/frontend:2.0
  sleep 1; set_pod lab frontend-v2-$n True 192.0.2.$((20 + n)); sleep 3
  $KA -n lab delete pod frontend-v1-$n --grace-period=0 --force >/dev/null 2>&1 || true
  sleep 2
done
sleep 20
log "human: kubectl delete service lab/backend, re-create it 5 s later"
$KA -n lab delete service backend >/dev/null
sleep 5
mksvc_labelled lab backend backend backend
sleep 40
restart_kcm
sleep 60
restart_apiserver
kill -0 "$(cat $RUN/kcm.pid)" 2>/dev/null || { log "kcm exited during the restart; starting it again"; start_kcm -3; }
sleep 40
log "scale-up: backend-3"
mkpod lab backend-3 backend; set_pod lab backend-3 True 192.0.2.43
for f in $RUN/client-inventory.pid $RUN/client-mesh.pid $RUN/snap-loop.pid; do
  for _ in $(seq 1 $(( (DUR + 30) * 5 ))); do kill -0 "$(cat $f)" 2>/dev/null || break; sleep 0.2; done
done
stop_pid $RUN/client-heartbeat.pid 2
snapshot_json "$OUT/snapshots" || true; rm -f "$OUT"/snapshots/*.tmp
log "stopping"; stop_all
finish "$OUT"
log "done: $(head -1 "$OUT/stats.txt") -> $OUT"
