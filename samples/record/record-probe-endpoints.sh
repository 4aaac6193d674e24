#!/usr/bin/env bash
# record-probe-endpoints.sh OUTDIR : the Kubernetes side of ../probe-conntrack/: Service shop/checkout-api
# with 20 pods on node lab-node-1 whose pod IPs are the probed addresses 10.200.0.2 .. 10.200.0.21
# (set through the pods/status subresource, as a kubelet would), each with an httpGet readiness probe
# on :8080 and a tcpSocket liveness probe on :8081, both periodSeconds 1 (what probe_load.py generated).
# Writes OUTDIR/endpoints-<RFC3339>.json (+ .yaml) with the real kubectl; no audit log is kept.
# With CONNTRACK_OUT=DIR it runs conntrack-probe.sh DIR (root) while the cluster is up, between two
# snapshots, so that the capture bundles and the snapshots are from the same minutes.
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
source "$HERE/lib.sh"
OUT=${1:?usage: record-probe-endpoints.sh OUTDIR}; mkdir -p "$OUT"; OUT=$(cd "$OUT" && pwd)
ensure_binaries; ensure_pki
mkdir -p $LAB/run; stop_all; rm -rf "$RUN"; mkdir -p "$RUN"
trap 'stop_all' EXIT; trap 'exit 130' INT TERM
start_control_plane
mknode; mkns shop
mksvc shop checkout-api checkout-api
for i in $(seq 0 19); do
  $KA apply -f - >/dev/null <<YAML
apiVersion: v1
kind: Pod
metadata: {name: checkout-api-$i, namespace: shop, labels: {app: checkout-api}}
spec:
  nodeName: lab-node-1
  containers:
  - name: app
    image: registry.invalid/checkout-api:4.2.0
    ports: [{containerPort: 8080, name: http}, {containerPort: 8081, name: health}]
    readinessProbe: {httpGet: {path: /healthz, port: 8080}, periodSeconds: 1, timeoutSeconds: 1}
    livenessProbe: {tcpSocket: {port: 8081}, periodSeconds: 1, timeoutSeconds: 1}
YAML
  set_pod shop checkout-api-$i True 10.200.0.$((i + 2))
done
for _ in $(seq 1 60); do [ "$($KA -n shop get endpoints checkout-api -o jsonpath='{.subsets[0].addresses[*].ip}' 2>/dev/null | wc -w)" = 20 ] && break; sleep 0.25; done
sleep 2
snapshot_json "$OUT"; snapshot_yaml "$OUT"
if [ -n "${CONNTRACK_OUT:-}" ]; then
  bash "$HERE/conntrack-probe.sh" "$CONNTRACK_OUT"
  snapshot_json "$OUT"
fi
log "stopping"; stop_all
