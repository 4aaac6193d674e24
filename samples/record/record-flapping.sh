#!/usr/bin/env bash
# record-flapping.sh OUTDIR : batch readiness flapping of shop/cart, recorded on the real lab control plane.
# See ../flapping/README.md. Wall time ~1.5 min (plus ~15 s startup).
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
source "$HERE/lib.sh"
OUT=${1:?usage: record-flapping.sh OUTDIR}; mkdir -p "$OUT/snapshots" "$OUT/watch"; OUT=$(cd "$OUT" && pwd)
CYCLES=${CYCLES:-6}
ensure_binaries; ensure_pki
mkdir -p $LAB/run; stop_all; rm -rf "$RUN"; mkdir -p "$RUN"
trap 'stop_all' EXIT; trap 'exit 130' INT TERM

start_control_plane
mknode; mkns shop
mksvc shop cart cart; mksvc shop catalog catalog
for n in 1 2 3 4 5 6; do mkpod shop cart-$n cart registry.invalid/cart:2.3.0; set_pod shop cart-$n True 192.0.2.3$n; done
for n in 1 2; do mkpod shop catalog-$n catalog; set_pod shop catalog-$n True 192.0.2.4$n; done
for _ in $(seq 1 40); do [ "$($KA -n shop get endpoints cart -o jsonpath='{.subsets[0].addresses[*].ip}' 2>/dev/null | wc -w)" = 6 ] && break; sleep 0.25; done
log "shop/cart 6 ready pods (192.0.2.31-36), shop/catalog 2 ready pods (192.0.2.41-42)"

( for _ in $(seq 1 40); do heartbeat; sleep 3; done ) >/dev/null 2>&1 & echo $! > $RUN/client-heartbeat.pid
WSTART=$(now)
start_bg client-watch-endpoints-json timeout 70 $KS -n shop get endpoints -w -o json
sleep 1
snapshot_loop "$OUT/snapshots" 55 1 & echo $! > $RUN/snap-loop.pid
sleep 3
# batch in-place upgrade gone wrong: cart-1..3 are restarted together, become ready, fail again, ...
for c in $(seq 1 $CYCLES); do
  log "cycle $c: cart-1,cart-2,cart-3 -> notReady"
  for n in 1 2 3; do set_pod shop cart-$n False 192.0.2.3$n; done
  [ $c = 3 ] && { log "single blip: catalog-2 -> notReady"; set_pod shop catalog-2 False 192.0.2.42; }
  sleep 2.5
  log "cycle $c: cart-1,cart-2,cart-3 -> ready"
  for n in 1 2 3; do set_pod shop cart-$n True 192.0.2.3$n; done
  [ $c = 3 ] && { log "single blip: catalog-2 -> ready"; set_pod shop catalog-2 True 192.0.2.42; }
  sleep 3.5
done
sleep 2
snapshot_yaml "$OUT/snapshots"
for _ in $(seq 1 100); do kill -0 "$(cat $RUN/snap-loop.pid)" 2>/dev/null || break; sleep 0.2; done
stop_pid $RUN/snap-loop.pid 5; stop_pid $RUN/client-heartbeat.pid 2
stop_pid $RUN/client-watch-endpoints-json.pid 2
grep -v '^Warning:' $RUN/client-watch-endpoints-json.log > "$OUT/watch/endpoints-shop-watch-$WSTART.json" || true
rm -f "$OUT"/snapshots/*.tmp
log "stopping"; stop_all
finish "$OUT"
log "done: $(head -1 "$OUT/stats.txt") -> $OUT"
