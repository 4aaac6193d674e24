#!/usr/bin/env bash
# Builds kubesift fully static and lays out the image's root filesystem in DIR: the binary, /tmp
# (1777) and /etc/passwd and /etc/group naming uid/gid 65532 "nonroot". deploy/Dockerfile builds the
# image FROM scratch with this tree: run in its golang stage, or on the host by deploy/build-image.sh.
#
#   deploy/rootfs.sh DIR [VERSION]
#
# Static: cgo links DuckDB (C++) with libstdc++, libgcc and glibc statically (-extldflags -static);
# netgo and osusergo keep name resolution and user lookups in Go, so no NSS module is loaded at run
# time (glibc cannot load them into a static binary). Needs gcc, g++ and libc6-dev (readelf comes
# with gcc's binutils).
set -euo pipefail
cd "$(dirname "$0")/.."
dir=${1:?usage: deploy/rootfs.sh DIR [VERSION]}
version=${2:-$(git describe --tags --always 2>/dev/null || echo dev)}
mkdir -p "$dir/usr/local/bin" "$dir/etc" "$dir/tmp" "$dir/var/lib/kubesift"
CGO_ENABLED=1 go build -tags duckdb_arrow,netgo,osusergo -trimpath \
  -ldflags "-s -w -buildid= -linkmode external -extldflags '-static' -X github.com/kubesift/kubesift/cli.Version=${version}" \
  -o "$dir/usr/local/bin/kubesift" .
# A dynamically linked ELF names its program interpreter (ld.so) in a PT_INTERP header.
if readelf -l "$dir/usr/local/bin/kubesift" | grep -q INTERP; then
  echo "deploy/rootfs.sh: the binary is not static: $(readelf -l "$dir/usr/local/bin/kubesift" | grep -A1 INTERP)" >&2
  exit 1
fi
chmod 1777 "$dir/tmp"
chown 65532:65532 "$dir/var/lib/kubesift" 2>/dev/null || true
printf 'root:x:0:0:root:/root:/sbin/nologin\nnonroot:x:65532:65532:nonroot:/tmp:/sbin/nologin\n' >"$dir/etc/passwd"
printf 'root:x:0:\nnonroot:x:65532:\n' >"$dir/etc/group"
