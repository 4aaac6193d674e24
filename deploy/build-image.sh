#!/usr/bin/env bash
# Builds the runtime image FROM scratch with buildah, from a local tree (no registry, no pull), and
# runs it the way the CronJob does: as uid 65532 with a read-only root filesystem and a tmpfs /tmp,
# `kubesift version` and `kubesift run samples/` (mounted read-only). .ci/run calls it when buildah
# is installed; run it as root (apt-get install buildah).
#
#   deploy/build-image.sh [TAG]        default TAG: localhost/kubesift:dev
set -euo pipefail
cd "$(dirname "$0")/.."
tag=${1:-localhost/kubesift:dev}
bah() { buildah --storage-driver vfs "$@"; }

# deploy/Dockerfile (for users with a registry) must end like deploy/Containerfile.
runtime() { sed -n '/^FROM scratch/,$p' "$1" | grep -v '^#' | sed 's#^COPY .* /$#COPY ROOTFS /#'; }
if ! diff <(runtime deploy/Containerfile) <(runtime deploy/Dockerfile); then
  echo "deploy/build-image.sh: the runtime stage of deploy/Dockerfile differs from deploy/Containerfile" >&2
  exit 1
fi

work=$(mktemp -d)
ctr=""
cleanup() {
  if [ -n "$ctr" ]; then bah umount "$ctr" >/dev/null 2>&1 || true; bah rm "$ctr" >/dev/null 2>&1 || true; fi
  rm -rf "$work"
}
trap cleanup EXIT

deploy/rootfs.sh "$work/rootfs" "${VERSION:-dev}"
cp deploy/Containerfile "$work/Containerfile"
bah bud --isolation chroot --quiet -f "$work/Containerfile" -t "$tag" "$work"
echo "built $tag: $(bah images --format '{{.Size}}' "$tag")"

ctr=$(bah from "$tag")
root=$(bah mount "$ctr")
user=$(bah inspect --format '{{.OCIv1.Config.User}}' "$tag")
entry=$(bah inspect --format '{{index .OCIv1.Config.Entrypoint 0}}' "$tag")
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
