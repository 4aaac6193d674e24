#!/usr/bin/env bash
# Builds deploy/Dockerfile with buildah from a local tree (no registry, no pull): deploy/rootfs.sh
# lays out the root filesystem on the host, a local image holds it as /out/rootfs (ownership kept),
# and --build-context replaces the Dockerfile's compiled stage by that image; the image is FROM scratch.
# Checks that the image holds exactly that tree (file list with modes and owners, the binary's
# sha256), then runs it the way the CronJob does: as uid 65532 with a read-only root filesystem and a
# tmpfs /tmp, `kubesift version` and `kubesift run samples/` (mounted read-only).
# .ci/run calls it when buildah is installed; run it as root (apt-get install buildah).
#
#   deploy/build-image.sh [TAG]        default TAG: localhost/kubesift:dev
set -euo pipefail
cd "$(dirname "$0")/.."
tag=${1:-localhost/kubesift:dev}
bah() { buildah --storage-driver vfs "$@"; }

work=$(mktemp -d)
ctr="" base=""
cleanup() {
  for c in "$ctr" "$base"; do
    if [ -n "$c" ]; then bah umount "$c" >/dev/null 2>&1 || true; bah rm "$c" >/dev/null 2>&1 || true; fi
  done
  rm -rf "$work"
}
trap cleanup EXIT

deploy/rootfs.sh "$work/rootfs" "${VERSION:-dev}"
echo "static binary (no program interpreter): $(stat -c %s "$work/rootfs/usr/local/bin/kubesift") bytes"
base=$(bah from scratch)
base_root=$(bah mount "$base")
mkdir "$base_root/out"
cp -a "$work/rootfs" "$base_root/out/rootfs"
bah umount "$base" >/dev/null
bah commit --quiet --rm "$base" "$tag-rootfs" >/dev/null
base=""
mkdir "$work/context"
bah bud --isolation chroot --quiet --build-context compiled=container-image://"$tag-rootfs" -f deploy/Dockerfile -t "$tag" "$work/context" >/dev/null
bah rmi --force "$tag-rootfs" >/dev/null # and the stage container buildah leaves on it
echo "built $tag: $(bah images --format '{{.Size}}' "$tag")"

ctr=$(bah from "$tag")
root=$(bah mount "$ctr")
user=$(bah inspect --format '{{.OCIv1.Config.User}}' "$tag")
entry=$(bah inspect --format '{{index .OCIv1.Config.Entrypoint 0}}' "$tag")
listing() { (cd "$1" && find . -mindepth 1 -printf '%p %m %U:%G\n' | sort); }
if ! diff <(listing "$work/rootfs") <(listing "$root"); then
  echo "deploy/build-image.sh: the image's files differ from the tree deploy/rootfs.sh laid out" >&2
  exit 1
fi
sum=$(sha256sum <"$root$entry" | cut -d' ' -f1)
if [ "$sum" != "$(sha256sum <"$work/rootfs$entry" | cut -d' ' -f1)" ]; then
  echo "deploy/build-image.sh: $entry in the image is not the binary deploy/rootfs.sh built" >&2
  exit 1
fi
echo "the image holds the $(listing "$root" | wc -l) paths deploy/rootfs.sh laid out; $entry sha256 $sum"
mkdir -p "$root/samples"
# A private mount namespace: the image's root bound read-only, /tmp a tmpfs, samples/ read-only;
# then the entrypoint as the image's user with the image's environment.
unshare --mount --fork bash -euo pipefail -c '
  root=$1 user=$2 entry=$3 samples=$4
  mount --bind "$root" "$root"
  mount -t tmpfs -o mode=1777 tmpfs "$root/tmp"
  mount --bind "$samples" "$root/samples"
  mount -o remount,bind,ro "$root/samples"
  mount -o remount,bind,ro "$root"
  if touch "$root/usr/local/bin/written" 2>/dev/null; then echo "the root filesystem is writable" >&2; exit 1; fi
  chroot=$(command -v chroot)
  in_image() { env -i HOME=/tmp TMPDIR=/tmp "$chroot" --userspec="$user" "$root" "$entry" "$@"; }
  in_image version
  in_image run --quiet -o html --out /tmp/report.html /samples/
  in_image run --quiet /samples/ >"$root/tmp/findings.txt"
  head -3 "$root/tmp/findings.txt"
  grep -q "<svg class=\"chart\"" "$root/tmp/report.html"
  echo "ran as $user on a read-only root: kubesift version, kubesift run samples/ ($(wc -c <"$root/tmp/report.html") bytes of HTML report)"
' bash "$root" "$user" "$entry" "$PWD/samples"
