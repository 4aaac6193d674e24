#!/usr/bin/env bash
# record-rewind.sh OUTDIR : watch-rewind + endpoints-phantom-recreate, recorded on the real lab control plane.
# See ../watch-rewind/README.md. Wall time ~2 min (plus ~15 s startup).
# RESTART=0 (used for ../endpoints-phantom-recreate/): no apiserver restart, default etcd compaction,
# phase 1 only (PHASE1 seconds, default 42).
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
RESTART=${RESTART:-1}; PHASE1=${PHASE1:-42}
[ "$RESTART" = 1 ] && APISERVER_EXTRA="--etcd-compaction-interval=15s"   # the apiserver's own etcd compaction, every 15 s (default 5m)
source "$HERE/lib.sh"
OUT=${1:?usage: record-rewind.sh OUTDIR}; mkdir -p "$OUT/snapshots"; OUT=$(cd "$OUT" && pwd)
ensure_binaries; ensure_pki
mkdir -p $LAB/run; stop_all; rm -rf "$RUN"; mkdir -p "$RUN"
trap 'stop_all' EXIT; trap 'exit 130' INT TERM
[ -x $BIN/rewinder ] || (cd "$HERE/rewinder" && GOFLAGS=-mod=mod go build -trimpath -o $BIN/rewinder .)

start_control_plane
mknode; mkns lab
$KA apply -f - >/dev/null <<'YAML'
apiVersion: v1
kind: ServiceAccount
metadata: {name: svc-cleanup-operator, namespace: lab}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: Role
metadata: {name: svc-cleanup-operator, namespace: lab}
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
metadata: {name: svc-cleanup-operator, namespace: lab}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: Role, name: svc-cleanup-operator}
subjects: [{kind: ServiceAccount, name: svc-cleanup-operator, namespace: lab}]
YAML
KC_OP=$(sa_kubeconfig lab svc-cleanup-operator)
mksvc lab checkout checkout; mksvc lab catalog catalog; mksvc lab legacy-batch legacy-batch
i=20; for p in checkout-1 checkout-2 checkout-3 catalog-1 catalog-2 legacy-batch-1; do
  mkpod lab $p ${p%-*}; set_pod lab $p True 192.0.2.$i; i=$((i + 1)); done
for _ in $(seq 1 40); do $KA -n lab get endpoints checkout -o jsonpath='{.subsets[0].addresses[2].ip}' 2>/dev/null | grep -q . && break; sleep 0.25; done
log "services lab/checkout (3 pods), lab/catalog (2), lab/legacy-batch (1) ready"

( for _ in $(seq 1 60); do heartbeat; sleep 3; done ) >/dev/null 2>&1 & echo $! > $RUN/client-heartbeat.pid
snapshot_loop "$OUT/snapshots" 130 2 & echo $! > $RUN/snap-loop.pid
start_bg client-rewinder $BIN/rewinder -kubeconfig "$KC_OP" -namespace lab -for 110s -watch-timeout 4 -rewind-every 2
sleep 3
log "T1: legitimate delete + re-create of Service lab/checkout (gap ~2 s), permanent delete of lab/legacy-batch"
$KA -n lab delete service checkout >/dev/null
$KA -n lab delete service legacy-batch >/dev/null
sleep 2
mksvc lab checkout checkout
$KA -n lab delete pod legacy-batch-1 --grace-period=0 --force >/dev/null 2>&1 || true
log "phase 1: rewinds are served from the watch cache and replay the DELETED event"
sleep "$PHASE1"
if [ "$RESTART" = 1 ]; then
  restart_apiserver
  kill -0 "$(cat $RUN/kcm.pid)" 2>/dev/null || { log "kcm exited during the restart; starting it again"; start_kcm -2; }
  log "phase 2: the checkpoint is older than the new watch cache and compacted in etcd"
  sleep 40
else
  stop_pid $RUN/client-rewinder.pid 5
fi
for _ in $(seq 1 150); do kill -0 "$(cat $RUN/client-rewinder.pid)" 2>/dev/null || break; sleep 0.2; done
stop_pid $RUN/snap-loop.pid 5; stop_pid $RUN/client-heartbeat.pid 2
snapshot_json "$OUT/snapshots"; rm -f "$OUT"/snapshots/*.tmp
log "stopping"; stop_all
finish "$OUT"
log "done: $(head -1 "$OUT/stats.txt") -> $OUT"
