#!/usr/bin/env bash
# lib.sh: functions copied from ../../../shared/lab/k8s/run-cluster.sh (v1.33.13 control plane on
# loopback: etcd 3.4 + kube-apiserver + kube-controller-manager), extended for the kubesift
# sample recordings. Sourced by the record-*.sh scripts in this directory.
# Changes against the lab script:
#  * audit policy: the same RequestResponse rule, preceded by a Metadata-only rule for the user
#    `kubesift-snapshotter` (the identity that takes the periodic `kubectl get -o json` snapshots),
#    so that snapshot lists do not inflate the audit log with full list bodies;
#  * tokens.csv has a second static token for that user (lab tokens, not secrets);
#  * APISERVER_EXTRA (extra kube-apiserver flags), restart_apiserver, snapshot helpers,
#    sa_kubeconfig (token kubeconfig for a ServiceAccount), bounded background clients;
#  * ports, RUN, CONF and the etcd binary (ETCD_BIN) can be set from the environment, so that two
#    recordings can run side by side (each on its own ports and run directory) and etcd 3.5 can
#    replace Debian's 3.4.
set -euo pipefail
LAB=${LAB:-/tmp/k8s-lab}
SHARED=/work/shared/lab/k8s
K8S_VERSION=v1.33.13
ETCD_PORT=${ETCD_PORT:-23790}; ETCD_PEER_PORT=${ETCD_PEER_PORT:-23800}; ETCD_METRICS_PORT=${ETCD_METRICS_PORT:-23810}
API_PORT=${API_PORT:-16443}; KCM_PORT=${KCM_PORT:-20257}
BIN=$LAB/bin; RUN=${RUN:-$LAB/run/current}; CONF=${CONF:-$LAB/conf-kubesift}; PKI=$LAB/pki
ETCD_BIN=${ETCD_BIN:-$LAB/etcd-root/usr/bin/etcd}
KCM_EXTRA=${KCM_EXTRA:-}
ADMIN_TOKEN=lab-admin-token-0123456789abcdef
SNAP_TOKEN=lab-snapshot-token-0123456789abcdef
APISERVER_EXTRA=${APISERVER_EXTRA:-}
KA="kubectl --kubeconfig $CONF/admin.kubeconfig"
KS="kubectl --kubeconfig $CONF/snapshot.kubeconfig"

log() { echo "[$(date -u +%H:%M:%S)] $*" >&2; }
now() { date -u +%Y-%m-%dT%H:%M:%SZ; }
nowmicro() { date -u +%Y-%m-%dT%H:%M:%S.%6NZ; }

# ---------------------------------------------------------------- process control (as in the lab)
stop_pid() { # pidfile [grace-seconds]
  local f=$1 g=${2:-20} pid
  [ -f "$f" ] || return 0
  pid=$(cat "$f")
  # snap-*.pid are subshells of the recording script itself (their cmdline is the script's)
  if [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null && tr '\0' ' ' </proc/$pid/cmdline 2>/dev/null | grep -q -e "$LAB" -e "kubectl" -e "timeout" -e "samples/record/"; then
    kill -TERM "$pid" 2>/dev/null || true
    for _ in $(seq 1 $((g * 10))); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    kill -0 "$pid" 2>/dev/null && { log "SIGKILL $pid ($f)"; kill -KILL "$pid" 2>/dev/null || true; }
  fi
  rm -f "$f"
}
stop_all() {
  [ -d "$RUN" ] || return 0
  for f in "$RUN"/snap-*.pid "$RUN"/client-*.pid; do [ -e "$f" ] && stop_pid "$f" 5; done
  stop_pid "$RUN/kcm.pid" 20
  stop_pid "$RUN/apiserver.pid" 30
  stop_pid "$RUN/etcd.pid" 20
}
start_bg() { # name cmd... ; stdout+stderr -> $RUN/name.log, pid -> $RUN/name.pid
  local name=$1; shift
  "$@" >"$RUN/$name.log" 2>&1 &
  echo $! >"$RUN/$name.pid"
}
port_free() { ! (exec 3<>/dev/tcp/127.0.0.1/$1) 2>/dev/null; }

ensure_binaries() { # [client binaries the recording needs from the lab build; default: leclient]
  local c; for c in "${@:-leclient}"; do [ -x "$BIN/$c" ] || { echo "lab client $BIN/$c missing: run  bash $SHARED/run-cluster.sh /tmp/warmup 2  once" >&2; exit 1; }; done
  [ -x "$ETCD_BIN" ] && [ -x $LAB/etcd-root/usr/bin/etcdctl ] && [ -x $BIN/kube-apiserver ] && [ -x $BIN/kube-controller-manager ] || {
    echo "lab binaries missing: run  bash $SHARED/run-cluster.sh /tmp/warmup 2  once (builds them into $LAB)" >&2; exit 1; }
}

ensure_pki() {
  [ -f $PKI/sa.pub ] && [ -f $PKI/kcm.crt ] && [ -f $PKI/apiserver.crt ] || { echo "no lab PKI in $PKI: run the lab script once" >&2; exit 1; }
  mkdir -p $CONF
  cat > $CONF/audit-policy.yaml <<'POL'
apiVersion: audit.k8s.io/v1
kind: Policy
omitStages:
  - "RequestReceived"
rules:
  - level: Metadata
    users: ["kubesift-snapshotter"]
  - level: RequestResponse
    resources:
      - group: ""
        resources: ["endpoints", "configmaps", "services", "services/status", "pods", "pods/status"]
      - group: "coordination.k8s.io"
        resources: ["leases"]
      - group: "discovery.k8s.io"
        resources: ["endpointslices"]
  - level: Metadata
POL
  printf '%s,admin,1000,"system:masters"\n%s,kubesift-snapshotter,1001,"system:masters"\n' $ADMIN_TOKEN $SNAP_TOKEN > $CONF/tokens.csv
  mkkc() { local f=$CONF/$1.kubeconfig; shift; rm -f $f
    kubectl config --kubeconfig=$f set-cluster lab --server=https://127.0.0.1:$API_PORT --certificate-authority=$PKI/ca.crt --embed-certs=true >/dev/null
    kubectl config --kubeconfig=$f set-credentials u "$@" >/dev/null
    kubectl config --kubeconfig=$f set-context lab --cluster=lab --user=u >/dev/null
    kubectl config --kubeconfig=$f use-context lab >/dev/null; }
  mkkc admin --token=$ADMIN_TOKEN
  mkkc snapshot --token=$SNAP_TOKEN
  mkkc kcm --client-certificate=$PKI/kcm.crt --client-key=$PKI/kcm.key --embed-certs=true
}

start_etcd() {
  start_bg etcd "$ETCD_BIN" --name lab --data-dir $RUN/etcd-data \
    --listen-client-urls http://127.0.0.1:$ETCD_PORT --advertise-client-urls http://127.0.0.1:$ETCD_PORT \
    --listen-peer-urls http://127.0.0.1:$ETCD_PEER_PORT --initial-advertise-peer-urls http://127.0.0.1:$ETCD_PEER_PORT \
    --initial-cluster lab=http://127.0.0.1:$ETCD_PEER_PORT --listen-metrics-urls http://127.0.0.1:$ETCD_METRICS_PORT
  for _ in $(seq 1 100); do ETCDCTL_API=3 $LAB/etcd-root/usr/bin/etcdctl --endpoints http://127.0.0.1:$ETCD_PORT endpoint health >/dev/null 2>&1 && break; sleep 0.2; done
  log "etcd up (pid $(cat $RUN/etcd.pid))"
}
# LAB_APISERVER_FLAGS are what every lab kube-apiserver takes: certificates, authentication, service
# accounts, the Service range and the audit policy. A recording adds its etcd, where it listens and
# what it advertises, its endpoint reconciler, its audit log and its cert dir.
LAB_APISERVER_FLAGS=(
  --tls-cert-file=$PKI/apiserver.crt --tls-private-key-file=$PKI/apiserver.key --client-ca-file=$PKI/ca.crt
  --requestheader-client-ca-file=$PKI/ca.crt --requestheader-allowed-names=front-proxy-client
  --requestheader-username-headers=X-Remote-User --requestheader-group-headers=X-Remote-Group --requestheader-extra-headers-prefix=X-Remote-Extra-
  --token-auth-file=$CONF/tokens.csv --authorization-mode=RBAC
  --service-account-issuer=https://kubernetes.default.svc.cluster.local
  --service-account-key-file=$PKI/sa.pub --service-account-signing-key-file=$PKI/sa.key
  --service-cluster-ip-range=10.96.0.0/16 --allow-privileged=true
  --audit-policy-file=$CONF/audit-policy.yaml --audit-log-format=json
)
start_apiserver() { # [log-suffix]
  local n=apiserver${1:-}
  # shellcheck disable=SC2086
  "$BIN/kube-apiserver" "${LAB_APISERVER_FLAGS[@]}" \
    --etcd-servers=http://127.0.0.1:$ETCD_PORT --bind-address=127.0.0.1 --secure-port=$API_PORT --advertise-address=127.0.0.1 \
    --endpoint-reconciler-type=none --audit-log-path=$RUN/audit.log \
    --cert-dir=$RUN/apiserver-certs $APISERVER_EXTRA >"$RUN/$n.log" 2>&1 &
  echo $! > $RUN/apiserver.pid
  for _ in $(seq 1 120); do $KA get --raw /readyz >/dev/null 2>&1 && break; sleep 0.25; done
  $KA get --raw /readyz >/dev/null
  log "kube-apiserver ready (pid $(cat $RUN/apiserver.pid))"
}
start_kcm() { # [log-suffix]
  # shellcheck disable=SC2086
  "$BIN/kube-controller-manager" --kubeconfig=$CONF/kcm.kubeconfig \
    --authentication-kubeconfig=$CONF/kcm.kubeconfig --authorization-kubeconfig=$CONF/kcm.kubeconfig \
    --bind-address=127.0.0.1 --secure-port=$KCM_PORT --cert-dir=$RUN/kcm-certs \
    --leader-elect=true --use-service-account-credentials=true \
    --service-account-private-key-file=$PKI/sa.key --root-ca-file=$PKI/ca.crt \
    --cluster-signing-cert-file=$PKI/ca.crt --cluster-signing-key-file=$PKI/ca.key \
    --cluster-name=lab --controllers='*' $KCM_EXTRA >"$RUN/kcm${1:-}.log" 2>&1 &
  echo $! > $RUN/kcm.pid
  for _ in $(seq 1 120); do $KA -n kube-system get lease kube-controller-manager >/dev/null 2>&1 && break; sleep 0.5; done
  $KA -n kube-system get lease kube-controller-manager >/dev/null
  log "kube-controller-manager is leader (pid $(cat $RUN/kcm.pid))"
}
start_control_plane() {
  for p in $ETCD_PORT $ETCD_PEER_PORT $ETCD_METRICS_PORT $API_PORT $KCM_PORT; do
    port_free $p || { echo "port 127.0.0.1:$p is in use; stop whatever holds it first" >&2; exit 1; }
  done
  start_etcd; start_apiserver; start_kcm
}
restart_apiserver() { # SIGTERM (graceful), start the new one as soon as the old one stopped listening
  # (same etcd, same audit log file; the old process may take ~10 s more to exit)
  log "restarting kube-apiserver"
  mv "$RUN/apiserver.pid" "$RUN/apiserver-old.pid"
  kill -TERM "$(cat "$RUN/apiserver-old.pid")"
  for _ in $(seq 1 150); do port_free $API_PORT && break; sleep 0.1; done
  start_apiserver -2
  ( stop_pid "$RUN/apiserver-old.pid" 30 ) &
}

restart_kcm() { # SIGTERM (it does not release its Lease), then a new process that waits for the Lease to expire
  log "restarting kube-controller-manager"
  stop_pid "$RUN/kcm.pid" 20
  start_kcm -2
}

# ---------------------------------------------------------------- objects
heartbeat() { # simulated kubelet: renew node lease (+ node status with $1=status)
  $KA -n kube-node-lease patch lease lab-node-1 --type=merge -p "{\"spec\":{\"renewTime\":\"$(nowmicro)\"}}" >/dev/null
  if [ "${1:-}" = status ]; then
    $KA patch node lab-node-1 --subresource=status --type=strategic -p "{\"status\":{\"conditions\":[{\"type\":\"Ready\",\"status\":\"True\",\"reason\":\"KubeletReady\",\"message\":\"kubelet is posting ready status\",\"lastHeartbeatTime\":\"$(now)\"}]}}" >/dev/null
  fi
}
mknode() {
  $KA apply -f - >/dev/null <<YAML
apiVersion: v1
kind: Node
metadata:
  name: lab-node-1
  labels: {kubernetes.io/hostname: lab-node-1, kubernetes.io/os: linux, topology.kubernetes.io/zone: lab-a}
---
apiVersion: coordination.k8s.io/v1
kind: Lease
metadata: {name: lab-node-1, namespace: kube-node-lease}
spec: {holderIdentity: lab-node-1, leaseDurationSeconds: 40, renewTime: "$(nowmicro)"}
YAML
  $KA patch node lab-node-1 --subresource=status --type=merge -p "{\"status\":{\"conditions\":[{\"type\":\"Ready\",\"status\":\"True\",\"reason\":\"KubeletReady\",\"message\":\"kubelet is posting ready status\",\"lastHeartbeatTime\":\"$(now)\",\"lastTransitionTime\":\"$(now)\"}]}}" >/dev/null
}
mkns() { # name
  $KA create namespace "$1" >/dev/null
  for _ in $(seq 1 60); do $KA -n "$1" get sa default >/dev/null 2>&1 && break; sleep 0.5; done
}
set_pod() { # ns name ready(True|False) ip
  $KA -n "$1" patch pod "$2" --subresource=status -p "{\"status\":{\"phase\":\"Running\",\"podIP\":\"$4\",\"podIPs\":[{\"ip\":\"$4\"}],\"conditions\":[{\"type\":\"Ready\",\"status\":\"$3\",\"lastTransitionTime\":\"$(now)\"},{\"type\":\"ContainersReady\",\"status\":\"$3\",\"lastTransitionTime\":\"$(now)\"}]}}" >/dev/null
}
mkpod() { # ns name app [image]  (readiness httpGet :8080 every READY_PERIOD=5 s, liveness tcpSocket :8081 every LIVE_PERIOD=10 s)
  $KA apply -f - >/dev/null <<YAML
apiVersion: v1
kind: Pod
metadata: {name: $2, namespace: $1, labels: {app: $3}}
spec:
  nodeName: lab-node-1
  containers:
  - name: app
    image: ${4:-registry.invalid/$3:1.0}
    ports: [{containerPort: 8080, name: http}]
    readinessProbe: {httpGet: {path: /healthz, port: 8080}, periodSeconds: ${READY_PERIOD:-5}}
    livenessProbe: {tcpSocket: {port: 8081}, periodSeconds: ${LIVE_PERIOD:-10}}
YAML
}
mksvc() { # ns name app
  $KA apply -f - >/dev/null <<YAML
apiVersion: v1
kind: Service
metadata: {name: $2, namespace: $1}
spec:
  selector: {app: $3}
  ports: [{name: http, port: 80, targetPort: 8080}]
YAML
}
sa_kubeconfig() { # ns sa -> prints kubeconfig path (token valid 2h)
  local tok f=$RUN/$1-$2.kubeconfig
  tok=$($KA -n "$1" create token "$2" --duration=2h)
  cp $CONF/admin.kubeconfig "$f"
  kubectl config --kubeconfig="$f" set-credentials u --token="$tok" >/dev/null
  echo "$f"
}

# ---------------------------------------------------------------- snapshots
snapshot_json() { # dir : one combined dump named with its capture time
  local t; t=$(now)
  if $KS get endpoints,endpointslices,services,pods -A -o json > "$1/endpoints-$t.json.tmp" 2>>"$RUN/snap-errors.log"; then
    mv "$1/endpoints-$t.json.tmp" "$1/endpoints-$t.json"
  else rm -f "$1/endpoints-$t.json.tmp"; fi
}
snapshot_yaml() { local t; t=$(now); $KS get endpoints,endpointslices,services,pods -A -o yaml > "$1/endpoints-$t.yaml"; }
snapshot_loop() { # dir seconds interval
  local end=$(( $(date +%s) + $2 ))
  while [ "$(date +%s)" -lt $end ]; do snapshot_json "$1" || true; sleep "${3:-1}"; done
}

# ---------------------------------------------------------------- finish
finish() { # OUT : copy audit log + logs, write stats
  local OUT=$1
  cp $RUN/audit.log* "$OUT"/
  mkdir -p "$OUT/logs"
  for f in $RUN/*.log; do case $(basename $f) in audit.log) ;; *) cp "$f" "$OUT/logs/";; esac; done
  python3 "$(dirname "${BASH_SOURCE[0]}")/stats.py" "$OUT/audit.log" > "$OUT/stats.txt"
}

# ---------------------------------------------------------------- etcd 3.5 (for WatchList streams)
# kube-apiserver v1.33 serves sendInitialEvents=true watches only on an etcd that supports
# RequestWatchProgress (3.5); Debian's 3.4 refuses them. Built from the Go module proxy, the etcd
# version k8s.io/apiserver v0.33.13 depends on.
ETCD35_VERSION=v3.5.21
ensure_etcd35() { # -> $BIN/etcd-3.5
  [ -x $BIN/etcd-3.5 ] && return 0
  log "building etcd $ETCD35_VERSION from the module proxy"
  mkdir -p $LAB/build-etcd35 && (cd $LAB/build-etcd35 &&
    { [ -f go.mod ] || go mod init k8slab/etcd35 >/dev/null 2>&1; } &&
    go get go.etcd.io/etcd/server/v3@$ETCD35_VERSION &&
    go build -trimpath -ldflags "-s -w" -o $BIN/etcd-3.5 go.etcd.io/etcd/server/v3)
}
