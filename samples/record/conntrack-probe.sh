#!/bin/bash
# conntrack-probe.sh OUTDIR
#
# Derived from ../shared/lab/conntrack/capture.sh (same namespaces, same nft rule, same
# safety checks). Records a REAL conntrack capture-bundle series of one "node" under a
# kubelet-like probe load, in the kubesift bundle layout:
#   OUTDIR/<NODE>/<RFC3339 capture time>/{conntrack_L.txt,conntrack_S.txt,conntrack_C.txt,
#                                          sysctl.txt,dmesg.txt,proc_net_stat_nf_conntrack.txt}
#  * netns ctlab-node (10.200.0.1, the node/kubelet) <-veth-> ctlab-pod holding PODS pod
#    IPs 10.200.0.2 .. 10.200.0.(PODS+1); HTTP :8080 and TCP :8081 servers in ctlab-pod
#  * probe_load.py (this directory): every PERIOD s one httpGet :8080 + one tcpSocket :8081
#    probe per pod IP, SO_LINGER{1,1} like kubelet -> one TIME_WAIT entry (120 s) per probe
#  * global nf_conntrack_max is set to MAX for the run (restored on exit; refused if the
#    root netns has any nft/iptables rule), so the table fills in about MAX/rate seconds
#  * a bundle every SNAP_EVERY s, and one more FULL_EXTRA s after the table is full
# Env: NODE (lab-node-1) PODS (20) PERIOD (1) MAX (2048) DURATION (75) SNAP_EVERY (15)
#      FULL_EXTRA (10) PROBE_TIMEOUT (0.2) ; set MAX=keep to leave nf_conntrack_max untouched (healthy runs).
set -u
OUT="${1:?usage: conntrack-probe.sh OUTDIR}"
NODE=${NODE:-lab-node-1}; PODS=${PODS:-20}; PERIOD=${PERIOD:-1}; MAX=${MAX:-2048}
DURATION=${DURATION:-75}; SNAP_EVERY=${SNAP_EVERY:-15}; FULL_EXTRA=${FULL_EXTRA:-10}
[ "$(id -u)" = 0 ] || { echo "must run as root"; exit 2; }
HERE="$(cd "$(dirname "$0")" && pwd)"
SERVER=/work/shared/lab/conntrack/probe_server.py; PY=/usr/bin/python3
NS_NODE=ctlab-node; NS_POD=ctlab-pod
INN="ip netns exec $NS_NODE"; INP="ip netns exec $NS_POD"
mkdir -p "$OUT/$NODE"; OUT="$(cd "$OUT" && pwd)"
LOG="$OUT/record.log"
log() { echo "[$(date -u +%H:%M:%S.%3N)] $*" | tee -a "$LOG"; }
ORIG_MAX=$(cat /proc/sys/net/netfilter/nf_conntrack_max)
PIDS=()
cleanup() {
  trap - EXIT INT TERM
  for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null && wait "$p" 2>/dev/null; done
  [ "$(cat /proc/sys/net/netfilter/nf_conntrack_max)" != "$ORIG_MAX" ] && echo "$ORIG_MAX" > /proc/sys/net/netfilter/nf_conntrack_max
  ip netns del $NS_NODE 2>/dev/null; ip netns del $NS_POD 2>/dev/null
  log "cleanup: nf_conntrack_max=$(cat /proc/sys/net/netfilter/nf_conntrack_max) (orig $ORIG_MAX), ctlab netns left: $(ip netns list | grep -c ctlab)"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

if [ "$MAX" != keep ]; then
  LEGACY_RULES=$( (iptables-legacy-save 2>/dev/null; ip6tables-legacy-save 2>/dev/null) | grep -c "^-A")
  [ "$(nft list ruleset | wc -l)" = 0 ] && [ "$LEGACY_RULES" = 0 ] || { echo "root netns has firewall rules; refusing to lower nf_conntrack_max"; exit 2; }
fi
for ns in $NS_NODE $NS_POD; do ip netns list | grep -qw "$ns" && ip netns del "$ns"; done
ip netns add $NS_NODE && ip netns add $NS_POD || exit 1
ip -n $NS_NODE link add veth-node type veth peer name veth-pod netns $NS_POD
ip -n $NS_NODE addr add 10.200.0.1/24 dev veth-node
IPS=""
for i in $(seq 2 $((PODS + 1))); do ip -n $NS_POD addr add 10.200.0.$i/24 dev veth-pod 2>/dev/null || ip -n $NS_POD addr add 10.200.0.$i/32 dev veth-pod; IPS="$IPS,10.200.0.$i"; done
IPS=${IPS#,}
for ns in $NS_NODE $NS_POD; do ip -n $ns link set lo up; done
ip -n $NS_NODE link set veth-node up; ip -n $NS_POD link set veth-pod up
$INN nft -f - <<'NFT'
table inet ctlab {
  chain input {
    type filter hook input priority filter; policy accept;
    ct state established,related counter accept
  }
}
NFT
sleep 1
$INP $PY "$SERVER" 0.0.0.0 8080 $((DURATION + 60)) >/dev/null 2>&1 & PIDS+=($!)
$INP $PY "$SERVER" 0.0.0.0 8081 $((DURATION + 60)) >/dev/null 2>&1 & PIDS+=($!)
sleep 0.6
{ uname -r; conntrack --version; nft --version; } > "$OUT/env.txt" 2>&1
DL0=$(dmesg | wc -l)

snap() {
  local at d; at=$(date -u +%Y-%m-%dT%H:%M:%SZ); d="$OUT/$NODE/$at"; mkdir -p "$d"
  $INN conntrack -L > "$d/conntrack_L.txt" 2>"$d/.stderr"
  $INN conntrack -S > "$d/conntrack_S.txt" 2>>"$d/.stderr"
  $INN conntrack -C > "$d/conntrack_C.txt" 2>>"$d/.stderr"
  $INN cat /proc/net/stat/nf_conntrack > "$d/proc_net_stat_nf_conntrack.txt"
  $INN sysctl net.netfilter > "$d/sysctl.txt" 2>>"$d/.stderr"
  dmesg | tail -n +$((DL0 + 1)) > "$d/dmesg.txt"
  log "bundle $at: count=$(cat "$d/conntrack_C.txt") max=$(cat /proc/sys/net/netfilter/nf_conntrack_max) TIME_WAIT=$(grep -c TIME_WAIT "$d/conntrack_L.txt") dmesg_lines=$(wc -l < "$d/dmesg.txt") stderr: $(tr '\n' ' ' < "$d/.stderr")"
  rm -f "$d/.stderr"
}

if [ "$MAX" != keep ]; then echo "$MAX" > /proc/sys/net/netfilter/nf_conntrack_max; fi
log "node=$NODE pods=$PODS ($IPS) period=${PERIOD}s nf_conntrack_max=$(cat /proc/sys/net/netfilter/nf_conntrack_max) duration=${DURATION}s"
snap
$INN $PY "$HERE/probe_load.py" --ips "$IPS" --period "$PERIOD" --duration "$DURATION" --timeout "${PROBE_TIMEOUT:-0.2}" > "$OUT/probe_load.log" 2>&1 & LOAD=$!
T0=$(date +%s); next=$((T0 + SNAP_EVERY)); full_at=0
while kill -0 $LOAD 2>/dev/null; do
  sleep 0.5
  now=$(date +%s)
  if [ "$MAX" != keep ] && [ $full_at = 0 ] && [ "$($INN cat /proc/sys/net/netfilter/nf_conntrack_count)" -ge "$MAX" ]; then
    full_at=$now; log "table full reached ($MAX entries)"
  fi
  if [ $full_at != 0 ] && [ $now -ge $((full_at + FULL_EXTRA)) ]; then snap; break; fi
  if [ $now -ge $next ]; then snap; next=$((now + SNAP_EVERY)); fi
done
kill $LOAD 2>/dev/null; wait $LOAD 2>/dev/null
log "probe rounds: $(wc -l < "$OUT/probe_load.log"), failing probes: $(awk -F'fail=' '{s+=$2} END{print s}' "$OUT/probe_load.log")"
exit 0
