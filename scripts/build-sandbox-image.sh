#!/usr/bin/env bash
# Builds the sandbox image without a container registry (CI, air-gapped runners):
#   1. debootstrap a minimal Debian bookworm rootfs with the tools the Leaf loop needs (cached as a tar),
#   2. `docker import` it as a base image,
#   3. build runner/sandbox.Dockerfile on top of it (adds the non-root `agent` user and git settings).
# Usage: scripts/build-sandbox-image.sh [TAG]      (default TAG: frognano-sandbox:test)
# Env:   FROGNANO_CACHE_DIR (default .frognano/cache), DEBIAN_MIRROR (default http://deb.debian.org/debian)
# Why debootstrap and not busybox: the Leaf loop runs `bash -lc`, computes the patch with git inside the sandbox,
# and most repositories' tests need python; a busybox rootfs has none of them.
set -euo pipefail
cd "$(dirname "$0")/.."

TAG="${1:-frognano-sandbox:test}"
SUITE=bookworm
MIRROR="${DEBIAN_MIRROR:-http://deb.debian.org/debian}"
# Keep in step with PACKAGES in runner/sandbox.Dockerfile (npm and build-essential left out: they triple the build
# time and no test needs them). nodejs (bookworm: 18.20) runs the ESLint scan and the jest fixture's tests.
INCLUDE="bash,ca-certificates,git,make,patch,procps,passwd,python3,python3-bandit,python3-pytest,python3-venv,nodejs"
CACHE="${FROGNANO_CACHE_DIR:-.frognano/cache}"
KEY="$(printf '%s' "$SUITE $INCLUDE" | sha256sum | cut -c1-12)"
ROOTFS_TAR="$CACHE/sandbox-rootfs-$SUITE-$KEY.tar"
BASE_TAG="frognano-sandbox-base:$SUITE-$KEY"

started=$(date +%s)
mkdir -p "$CACHE"
command -v docker >/dev/null || { echo "docker CLI not found" >&2; exit 1; }

if ! docker image inspect "$BASE_TAG" >/dev/null 2>&1; then
  if [ ! -s "$ROOTFS_TAR" ]; then
    command -v debootstrap >/dev/null || { echo "debootstrap not found: apt-get install debootstrap" >&2; exit 1; }
    work="$(mktemp -d)"
    trap 'rm -rf "$work"' EXIT
    echo "debootstrap $SUITE ($INCLUDE) ..."
    debootstrap --variant=minbase --include="$INCLUDE" "$SUITE" "$work/rootfs" "$MIRROR" >"$work/debootstrap.log" 2>&1 \
      || { tail -n 40 "$work/debootstrap.log" >&2; exit 1; }
    # Package caches and lists only make the image bigger.
    rm -rf "$work"/rootfs/var/cache/apt/archives/*.deb "$work"/rootfs/var/lib/apt/lists/* "$work"/rootfs/var/log/*.log
    tar -C "$work/rootfs" --numeric-owner -cf "$ROOTFS_TAR.partial" .
    mv "$ROOTFS_TAR.partial" "$ROOTFS_TAR"
    rm -rf "$work"
    trap - EXIT
  fi
  docker import "$ROOTFS_TAR" "$BASE_TAG" >/dev/null
fi

# The verification scanners' bundles (runner/scanners), installed here from their lock files: the image copies them,
# so its build needs no registry either.
scripts/install-scanners.sh >/dev/null

# The classic builder needs no BuildKit frontend image (nothing can be pulled here). The build context is runner/
# (the Dockerfile copies runner/scanners; runner/.dockerignore keeps the rest out). The builder's deprecation
# notice is noise; real errors still show.
DOCKER_BUILDKIT=0 docker build -q -t "$TAG" --build-arg BASE="$BASE_TAG" --build-arg PACKAGES="" \
  -f runner/sandbox.Dockerfile runner/ >/dev/null 2>"$CACHE/build.log" || { cat "$CACHE/build.log" >&2; exit 1; }
echo "built $TAG in $(( $(date +%s) - started ))s"
