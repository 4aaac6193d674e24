#!/usr/bin/env bash
# capture-conntrack.sh OUTDIR [NODE]
#
# Takes one conntrack capture bundle of this node, in the layout kubesift reads:
#   OUTDIR/<node>/<RFC3339 UTC time>/conntrack_L.txt              conntrack -L (or /proc/net/nf_conntrack)
#                                    conntrack_S.txt              conntrack -S (if conntrack is installed)
#                                    proc_net_stat_nf_conntrack.txt
#                                    conntrack_C.txt              entry count
#                                    sysctl.txt                   net.netfilter.nf_conntrack_* settings
#                                    dmesg.txt                    kernel lines about nf_conntrack
# Run it as root on the node (or in `kubectl debug node/<node> -it --image=<image with bash>`
# with `chroot /host`), every few minutes during an incident, then:
#   kubesift ingest OUTDIR
# It reads only; it changes nothing on the node. Without the conntrack tool it falls back to /proc.
set -euo pipefail
out=${1:?usage: capture-conntrack.sh OUTDIR [NODE]}
node=${2:-$(hostname)}
at=$(date -u +%Y-%m-%dT%H:%M:%SZ)
dir="$out/$node/$at"
mkdir -p "$dir"

if command -v conntrack >/dev/null 2>&1; then
  # conntrack prints its "N flow entries have been shown." trailer on stderr: keep it apart.
  conntrack -L >"$dir/conntrack_L.txt" 2>"$dir/conntrack_L.stderr" || true
  conntrack -S >"$dir/conntrack_S.txt" 2>/dev/null || true
  conntrack -C >"$dir/conntrack_C.txt" 2>/dev/null || true
  rm -f "$dir/conntrack_L.stderr"
elif [ -r /proc/net/nf_conntrack ]; then
  cat /proc/net/nf_conntrack >"$dir/conntrack_L.txt"
  cat /proc/sys/net/netfilter/nf_conntrack_count >"$dir/conntrack_C.txt"
else
  echo "capture-conntrack: neither conntrack nor /proc/net/nf_conntrack is available (is nf_conntrack loaded? are you root?)" >&2
fi
[ -r /proc/net/stat/nf_conntrack ] && cat /proc/net/stat/nf_conntrack >"$dir/proc_net_stat_nf_conntrack.txt"
sysctl -a 2>/dev/null | grep -E '^net\.netfilter\.nf_conntrack_' >"$dir/sysctl.txt" || true
# dmesg may be restricted (kernel.dmesg_restrict); journalctl -k is the fallback.
{ dmesg 2>/dev/null || journalctl -k -o short-iso --no-pager 2>/dev/null || true; } | grep 'nf_conntrack' >"$dir/dmesg.txt" || true

echo "$dir"
