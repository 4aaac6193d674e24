#!/usr/bin/env bash
# record-slow-rewind.sh OUTDIR : a slow rewinder on the real lab control plane. The svc-cleanup-operator
# (rewinder/, client-go v0.23.16) watches services and endpoints of namespace lab with 20 s watches and
# resumes correctly from the newest resourceVersion, except at REWINDS (default 3) moments, one per
# 15-minute window of the wall clock, where it resumes once from the checkpoint it listed at startup.
# Meanwhile a CI user annotates Service lab/web every minute and a rolling replacement swaps one web pod
# every 3 minutes, so both collections advance and each rewind goes visibly backwards.
# See ../slow-rewind/README.md. Wall time: until ~2.5 min into the REWINDS-th window (20-35 min for 3).
# It runs on its own ports and run directory (below), so another recording can run at the same time.
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
LAB=${LAB:-/tmp/k8s-lab}
ETCD_PORT=${ETCD_PORT:-23791}; ETCD_PEER_PORT=${ETCD_PEER_PORT:-23801}; ETCD_METRICS_PORT=${ETCD_METRICS_PORT:-23811}
API_PORT=${API_PORT:-16444}; KCM_PORT=${KCM_PORT:-20258}
RUN=${RUN:-$LAB/run/slow-rewind}; CONF=${CONF:-$LAB/conf-slow-rewind}
REWINDS=${REWINDS:-3}
source "$HERE/lib.sh"
OUT=${1:?usage: record-slow-rewind.sh OUTDIR}; mkdir -p "$OUT/snapshots"; OUT=$(cd "$OUT" && pwd)
[ -x $BIN/rewinder ] && [ $BIN/rewinder -nt "$HERE/rewinder/main.go" ] || (cd "$HERE/rewinder" && GOFLAGS=-mod=mod go build -trimpath -o $BIN/rewinder .)
ensure_binaries rewinder; ensure_pki
mkdir -p $LAB/run; stop_all; rm -rf "$RUN"; mkdir -p "$RUN"
trap 'stop_all' EXIT; trap 'exit 130' INT TERM

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
  resources: ["services", "endpoints"]
  verbs: ["get", "list", "watch"]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata: {name: svc-cleanup-operator, namespace: lab}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: Role, name: svc-cleanup-operator}
subjects: [{kind: ServiceAccount, name: svc-cleanup-operator, namespace: lab}]
YAML
KC_OP=$(sa_kubeconfig lab svc-cleanup-operator)
mksvc lab web web; mksvc lab api api
for n in 1 2 3; do mkpod lab web-$n web; set_pod lab web-$n True 192.0.2.$((10 + n)); done
for n in 1 2; do mkpod lab api-$n api; set_pod lab api-$n True 192.0.2.$((50 + n)); done
for _ in $(seq 1 40); do [ "$($KA -n lab get endpoints web -o jsonpath='{.subsets[0].addresses[*].ip}' 2>/dev/null | wc -w)" = 3 ] && break; sleep 0.25; done
log "services lab/web (3 pods), lab/api (2 pods) ready"
snapshot_json "$OUT/snapshots"

# rewind times: one per 15-minute window of the wall clock (…:00, :15, :30, :45). The first comes 90 s after the
# client starts (after the first pod replacement), if that is at least 60 s before its window ends (else 60 s
# into the next window); each later one 60 s into the following window.
S=$(date +%s); Q=$(( (S / 900 + 1) * 900 ))
if [ $(( S + 90 )) -le $(( Q - 60 )) ]; then AT=("$(( S + 90 ))"); else AT=("$(( Q + 60 ))"); Q=$(( Q + 900 )); fi
while [ ${#AT[@]} -lt "$REWINDS" ]; do AT+=("$(( Q + 60 ))"); Q=$(( Q + 900 )); done
END=$(( ${AT[-1]} + 90 ))
REWIND_AT=$(for r in "${AT[@]}"; do date -u -d "@$r" +%Y-%m-%dT%H:%M:%SZ; done | paste -sd,)
log "rewinds planned at $REWIND_AT; end at $(date -u -d "@$END" +%H:%M:%S)"
start_bg client-rewinder $BIN/rewinder -kubeconfig "$KC_OP" -namespace lab -for "$(( END - $(date +%s) ))s" \
  -watch-timeout 20 -rewind-at "$REWIND_AT" -delete-endpoints-on-service-delete=false

( while [ "$(date +%s)" -lt $END ]; do heartbeat || true; sleep 10; done ) >/dev/null 2>&1 & echo $! > $RUN/client-heartbeat.pid
( rev=0; while [ "$(date +%s)" -lt $END ]; do   # a CI job stamps the deployed revision on the Service
    rev=$(( rev + 1 )); $KA -n lab annotate service web "ci.example.com/revision=$rev" --overwrite >/dev/null || true; sleep 60
  done ) >>"$RUN/client-annotate.log" 2>&1 & echo $! > $RUN/client-annotate.pid
( n=3; sleep 60; while [ "$(date +%s)" -lt $(( END - 60 )) ]; do   # rolling replacement every 3 min (first after 1 min):
    n=$(( n + 1 ))                                                     # one new web pod, then the oldest goes
    { mkpod lab web-$n web && set_pod lab web-$n True 192.0.2.$(( 10 + n )); } || true; sleep 5
    $KA -n lab delete pod web-$(( n - 3 )) --grace-period=0 --force >/dev/null 2>&1 || true
    sleep 175
  done ) >>"$RUN/client-rollout.log" 2>&1 & echo $! > $RUN/client-rollout.pid

for _ in $(seq 1 $(( (END - S + 120) * 5 ))); do kill -0 "$(cat $RUN/client-rewinder.pid)" 2>/dev/null || break; sleep 0.2; done
for f in $RUN/client-annotate.pid $RUN/client-rollout.pid $RUN/client-heartbeat.pid; do stop_pid "$f" 5; done
snapshot_json "$OUT/snapshots"; rm -f "$OUT"/snapshots/*.tmp
log "stopping"; stop_all
finish "$OUT"
log "done: $(head -1 "$OUT/stats.txt") -> $OUT"
