#!/usr/bin/env bash
# record-ha.sh OUTDIR : a healthy HA control plane on the real lab binaries: two kube-apiservers on
# one etcd behind a TCP load balancer (haproxy, round robin), each with its own audit log, hostname
# (unshare --uts: its own identity Lease) and advertised address, the kubernetes Service's
# Endpoints kept by the default lease reconciler; two kube-controller-managers competing for their
# Lease. Every client goes through the load balancer, and both apiservers send a GOAWAY to 2% of
# requests (--goaway-chance), so that clients' connections move between the apiservers as they do
# behind a real load balancer. What happens:
#  * clients: client-go v0.33.13 reflectors (endpoints, endpointslices, services), informers of one
#    controller, a client-go v0.23 watch loop, `kubectl get endpointslices -w`, and a Lease election
#    of two candidates;
#  * a rolling update of shop/frontend;
#  * a rolling restart of the control plane: cp1 stopped (SIGTERM) and started again, then cp2;
#  * the leading kube-controller-manager stopped, the other one takes the Lease, the first one back;
#  * cp1 killed (SIGKILL) and started again 20 s later: its lease of the kubernetes Endpoints expires;
#  * a scale-up of shop/catalog.
# With REWINDER=1 (../ha-rewind/), also a buggy client through the load balancer: svc-cleanup-operator
# (../record/rewinder/, client-go v0.23) resumes every second watch of shop's services and endpoints
# from its startup resourceVersion, on whichever apiserver its connection reaches, and deletes the
# Endpoints of every Service whose DELETED event it is sent again; a human deletes and re-creates
# Service shop/checkout once.
# OUTDIR gets cp1/audit.log, cp2/audit.log, snapshots/, logs/ and stats.txt. Wall time ~8 min.
# Needs: haproxy (apt-get install -y haproxy), root (unshare --uts), the lab binaries.
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
LAB=${LAB:-/tmp/k8s-lab}
RUN=${RUN:-$LAB/run/ha}; CONF=${CONF:-$LAB/conf-ha}
APISERVER_PORT=${APISERVER_PORT:-16443}  # each apiserver's own port, on 127.0.0.1 (cp1) and 127.0.0.2 (cp2)
API_PORT=${LB_PORT:-16450}               # the load balancer: every kubeconfig of lib.sh points here
source "$HERE/lib.sh"
OUT=${1:?usage: record-ha.sh OUTDIR}; mkdir -p "$OUT/snapshots"; OUT=$(cd "$OUT" && pwd)
command -v haproxy >/dev/null || { echo "haproxy missing: apt-get install -y haproxy" >&2; exit 1; }
ensure_binaries; ensure_pki
[ -x $BIN/healthyclient ] || (cd "$HERE/healthyclient" && go build -trimpath -o $BIN/healthyclient .)
[ -x $BIN/trickyclient ] && [ $BIN/trickyclient -nt "$HERE/trickyclient/main.go" ] || (cd "$HERE/trickyclient" && go build -trimpath -o $BIN/trickyclient .)
REWINDER=${REWINDER:-0}
[ "$REWINDER" = 0 ] || [ -x $BIN/rewinder ] || (cd "$HERE/rewinder" && GOFLAGS=-mod=mod go build -trimpath -o $BIN/rewinder .)
export READY_PERIOD=10 LIVE_PERIOD=10

declare -A CP_IP=([cp1]=127.0.0.1 [cp2]=127.0.0.2) CP_ADV=([cp1]=192.0.2.101 [cp2]=192.0.2.102)
stop_ha() {
  for f in "$RUN"/snap-*.pid "$RUN"/client-*.pid "$RUN"/kcm-*.pid; do [ -e "$f" ] && stop_pid "$f" 20; done
  for f in "$RUN"/apiserver-*.pid; do [ -e "$f" ] && stop_pid "$f" 30; done
  stop_pid "$RUN/lb.pid" 5; stop_pid "$RUN/etcd.pid" 20
}
mkdir -p $LAB/run; [ -d "$RUN" ] && stop_ha; rm -rf "$RUN"; mkdir -p "$RUN"
trap 'stop_ha' EXIT; trap 'exit 130' INT TERM
for p in $ETCD_PORT $ETCD_PEER_PORT $ETCD_METRICS_PORT $API_PORT $KCM_PORT $((KCM_PORT + 1)); do
  port_free $p || { echo "port 127.0.0.1:$p is in use" >&2; exit 1; }
done
port_free_on() { ! (exec 3<>/dev/tcp/$1/$2) 2>/dev/null; }

ready() { # cp : the apiserver answers /readyz directly (not through the load balancer)
  curl -sfk -o /dev/null -H "Authorization: Bearer $ADMIN_TOKEN" "https://${CP_IP[$1]}:$APISERVER_PORT/readyz"
}
start_cp() { # cp [log-suffix] : kube-apiserver under its own hostname, audit log $RUN/cp/audit.log
  local cp=$1
  mkdir -p "$RUN/$cp"
  # shellcheck disable=SC2016
  unshare --uts sh -c 'hostname "$0"; exec "$@"' "$cp" "$BIN/kube-apiserver" "${LAB_APISERVER_FLAGS[@]}" \
    --etcd-servers=http://127.0.0.1:$ETCD_PORT --bind-address=${CP_IP[$cp]} --secure-port=$APISERVER_PORT \
    --advertise-address=${CP_ADV[$cp]} --endpoint-reconciler-type=lease --goaway-chance=0.02 \
    --shutdown-delay-duration=3s --audit-log-path=$RUN/$cp/audit.log \
    --cert-dir=$RUN/$cp/certs >"$RUN/apiserver-$cp${2:-}.log" 2>&1 &
  echo $! > "$RUN/apiserver-$cp.pid"
  for _ in $(seq 1 160); do ready "$cp" && break; sleep 0.25; done
  ready "$cp"
  log "kube-apiserver $cp ready on ${CP_IP[$cp]}:$APISERVER_PORT (pid $(cat "$RUN/apiserver-$cp.pid"))"
}
stop_cp() { # cp signal : TERM waits for a graceful exit, KILL does not
  log "kube-apiserver $1: SIG$2"
  if [ "$2" = TERM ]; then stop_pid "$RUN/apiserver-$1.pid" 60
  else kill -KILL "$(cat "$RUN/apiserver-$1.pid")"; rm -f "$RUN/apiserver-$1.pid"; fi
  for _ in $(seq 1 100); do port_free_on "${CP_IP[$1]}" $APISERVER_PORT && break; sleep 0.1; done
}
start_lb() {
  cat > "$RUN/haproxy.cfg" <<CFG
global
  maxconn 4000
defaults
  mode tcp
  timeout connect 2s
  timeout client 1h
  timeout server 1h
frontend apiserver
  bind 127.0.0.1:$API_PORT
  default_backend apiservers
backend apiservers
  balance roundrobin
  server cp1 ${CP_IP[cp1]}:$APISERVER_PORT check inter 1s fall 1 rise 2
  server cp2 ${CP_IP[cp2]}:$APISERVER_PORT check inter 1s fall 1 rise 2
CFG
  start_bg lb haproxy -db -f "$RUN/haproxy.cfg"
  for _ in $(seq 1 50); do port_free $API_PORT || break; sleep 0.1; done
  log "haproxy on 127.0.0.1:$API_PORT (pid $(cat "$RUN/lb.pid"))"
}
start_kcm_ha() { # name port [log-suffix] : kube-controller-manager under its own hostname
  # shellcheck disable=SC2016
  unshare --uts sh -c 'hostname "$0"; exec "$@"' "$1" "$BIN/kube-controller-manager" --kubeconfig=$CONF/kcm.kubeconfig \
    --authentication-kubeconfig=$CONF/kcm.kubeconfig --authorization-kubeconfig=$CONF/kcm.kubeconfig \
    --bind-address=127.0.0.1 --secure-port=$2 --cert-dir=$RUN/kcm-$1-certs \
    --leader-elect=true --use-service-account-credentials=true \
    --service-account-private-key-file=$PKI/sa.key --root-ca-file=$PKI/ca.crt \
    --cluster-signing-cert-file=$PKI/ca.crt --cluster-signing-key-file=$PKI/ca.key \
    --cluster-name=lab --controllers='*' >"$RUN/kcm-$1${3:-}.log" 2>&1 &
  echo $! > "$RUN/kcm-$1.pid"
}
kcm_leader() { $KA -n kube-system get lease kube-controller-manager -o jsonpath='{.spec.holderIdentity}' | cut -d_ -f1; }

start_etcd; start_cp cp1; start_cp cp2; start_lb
start_kcm_ha cp1 $KCM_PORT; start_kcm_ha cp2 $((KCM_PORT + 1))
for _ in $(seq 1 120); do [ -n "$(kcm_leader 2>/dev/null)" ] && break; sleep 0.5; done
log "kube-controller-manager leader: $(kcm_leader)"
for _ in $(seq 1 60); do [ "$($KA -n default get endpoints kubernetes -o jsonpath='{.subsets[0].addresses[*].ip}' 2>/dev/null | wc -w)" = 2 ] && break; sleep 0.5; done
log "default/kubernetes endpoints: $($KA -n default get endpoints kubernetes -o jsonpath='{.subsets[0].addresses[*].ip}')"

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
apiVersion: v1
kind: ServiceAccount
metadata: {name: ingress-controller, namespace: shop}
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
subjects:
- {kind: ServiceAccount, name: endpoint-exporter, namespace: monitoring}
- {kind: ServiceAccount, name: ingress-controller, namespace: shop}
YAML
KC_FC=$(sa_kubeconfig shop frontend-controller); KC_W=$(sa_kubeconfig shop lab-watcher)
KC_EX=$(sa_kubeconfig monitoring endpoint-exporter); KC_ING=$(sa_kubeconfig shop ingress-controller)
mksvc shop frontend frontend; mksvc shop catalog catalog
for n in 1 2 3; do mkpod shop frontend-v1-$n frontend registry.invalid/frontend:1.0; set_pod shop frontend-v1-$n True 192.0.2.$((10 + n)); done
for n in 1 2; do mkpod shop catalog-$n catalog; set_pod shop catalog-$n True 192.0.2.7$n; done
for _ in $(seq 1 40); do [ "$($KA -n shop get endpoints frontend -o jsonpath='{.subsets[0].addresses[*].ip}' 2>/dev/null | wc -w)" = 3 ] && break; sleep 0.25; done
log "shop/frontend v1 pods 192.0.2.11-13 ready, shop/catalog 2 pods"

DUR=430
( end=$(( $(date +%s) + DUR + 10 )); while [ "$(date +%s)" -lt $end ]; do heartbeat || true; sleep 5; done ) >/dev/null 2>&1 & echo $! > $RUN/client-heartbeat.pid
snapshot_loop "$OUT/snapshots" $(( DUR + 5 )) 15 & echo $! > $RUN/snap-loop.pid
start_bg client-exporter $BIN/healthyclient -mode informer -kubeconfig "$KC_EX" -for ${DUR}s -user-agent "endpoint-exporter/v1.2.0 (linux/amd64) client-go/v0.33.13"
start_bg client-ingress $BIN/trickyclient -kubeconfig "$KC_ING" -for ${DUR}s -watch-timeout 20s \
  -user-agent "ingress-controller/v1.12.1 (linux/amd64) client-go/v0.33.13" \
  -informer services -informer endpointslices -informer 'endpoints|metadata'
start_bg client-watchloop $BIN/leclient -mode watch -kubeconfig "$KC_W" -namespace shop -for ${DUR}s -watch-timeout 5
start_bg client-kubectl-watch-slices timeout $DUR $KA get endpointslices -A -w -o name
start_bg client-le-a $BIN/healthyclient -mode leader -kubeconfig "$KC_FC" -namespace shop -name frontend-controller -id frontend-controller-6b7d9-x2k4p -for ${DUR}s -user-agent "frontend-controller/v3.0.1 (linux/amd64) client-go/v0.33.13 leader-election"
sleep 1
start_bg client-le-b $BIN/healthyclient -mode leader -kubeconfig "$KC_FC" -namespace shop -name frontend-controller -id frontend-controller-6b7d9-q8m2z -for ${DUR}s -user-agent "frontend-controller/v3.0.1 (linux/amd64) client-go/v0.33.13 leader-election"
log "clients: endpoint-exporter reflectors, ingress-controller informers, watch loop, kubectl -w, Lease election x2"
if [ "$REWINDER" = 1 ]; then
  $KA apply -f - >/dev/null <<'YAML'
apiVersion: v1
kind: ServiceAccount
metadata: {name: svc-cleanup-operator, namespace: shop}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: Role
metadata: {name: svc-cleanup-operator, namespace: shop}
rules:
- apiGroups: [""]
  resources: ["services"]
  verbs: ["get", "list", "watch"]
- apiGroups: [""]
  resources: ["endpoints"]
  verbs: ["get", "list", "watch", "delete"]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata: {name: svc-cleanup-operator, namespace: shop}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: Role, name: svc-cleanup-operator}
subjects: [{kind: ServiceAccount, name: svc-cleanup-operator, namespace: shop}]
YAML
  KC_OP=$(sa_kubeconfig shop svc-cleanup-operator)
  mksvc shop checkout checkout
  for n in 1 2; do mkpod shop checkout-$n checkout; set_pod shop checkout-$n True 192.0.2.3$n; done
  start_bg client-rewinder $BIN/rewinder -kubeconfig "$KC_OP" -namespace shop -for 300s -watch-timeout 4 -rewind-every 2
  sleep 3
  log "human: kubectl delete service shop/checkout, re-create it 2 s later"
  $KA -n shop delete service checkout >/dev/null; sleep 2; mksvc shop checkout checkout
  log "svc-cleanup-operator (rewinder) through the load balancer for 300 s, across the restarts"
fi
sleep 25

log "rolling update shop/frontend v1 -> v2"
for n in 1 2 3; do
  mkpod shop frontend-v2-$n frontend registry.invalid/frontend:2.0
  sleep 1; set_pod shop frontend-v2-$n True 192.0.2.$((20 + n)); sleep 3
  $KA -n shop delete pod frontend-v1-$n --grace-period=0 --force >/dev/null 2>&1 || true
  sleep 2
done
sleep 20

log "rolling restart of the control plane"
stop_cp cp1 TERM; sleep 5; start_cp cp1 -2
sleep 40
stop_cp cp2 TERM; sleep 5; start_cp cp2 -2
sleep 30

leader=$(kcm_leader); other=cp1; [ "$leader" = cp1 ] && other=cp2
log "kube-controller-manager: stopping the leader $leader; $other takes over"
stop_pid "$RUN/kcm-$leader.pid" 20
for _ in $(seq 1 60); do [ "$(kcm_leader)" = "$other" ] && break; sleep 1; done
log "kube-controller-manager leader: $(kcm_leader)"
port=$KCM_PORT; [ "$leader" = cp2 ] && port=$((KCM_PORT + 1))
start_kcm_ha "$leader" $port -2
sleep 30

stop_cp cp1 KILL; sleep 20; start_cp cp1 -3
sleep 40

log "scale-up: shop/catalog-3"
mkpod shop catalog-3 catalog; set_pod shop catalog-3 True 192.0.2.73
for f in $RUN/client-exporter.pid $RUN/client-ingress.pid $RUN/snap-loop.pid; do
  for _ in $(seq 1 $(( (DUR + 30) * 5 ))); do kill -0 "$(cat $f)" 2>/dev/null || break; sleep 0.2; done
done
stop_pid $RUN/client-heartbeat.pid 2
snapshot_json "$OUT/snapshots" || true; rm -f "$OUT"/snapshots/*.tmp
log "stopping"; stop_ha
mkdir -p "$OUT/cp1" "$OUT/cp2" "$OUT/logs"
cp $RUN/cp1/audit.log* "$OUT/cp1/"; cp $RUN/cp2/audit.log* "$OUT/cp2/"
for f in $RUN/*.log; do cp "$f" "$OUT/logs/"; done
cat "$OUT"/cp1/audit.log "$OUT"/cp2/audit.log > "$RUN/both.log"
python3 "$HERE/stats.py" "$RUN/both.log" > "$OUT/stats.txt"
log "done: $(head -1 "$OUT/stats.txt") -> $OUT"
