#!/usr/bin/env bash
# Makes test/fixtures/verify/jest/node_modules.tgz: jest 29.7.0 (pinned by the fixture's package-lock.json) vendored as
# a committed tarball, because the verification sandbox has no network and the fixture's setup command only unpacks
# it (test/verify/verifyJest.test.ts). Run once, when the lock changes; commit the tarball.
# What is pruned never runs: type declarations, source maps, docs, tests (≈36 MB installed → ≈2 MB gzipped).
# The tar is reproducible (sorted names, fixed mtime and owner, gzip -n).
set -euo pipefail
cd "$(dirname "$0")/../test/fixtures/verify/jest"

work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
cp package.json package-lock.json "$work/"
(cd "$work" && npm ci --ignore-scripts --no-audit --no-fund --loglevel=error)
nm="$work/node_modules"
find "$nm" -type f \( -name '*.d.ts' -o -name '*.d.mts' -o -name '*.d.cts' -o -name '*.map' -o -iname '*.md' \
  -o -iname '*.markdown' -o -iname 'CHANGELOG*' -o -name '*.flow' -o -name '*.tsbuildinfo' \) -delete
rm -rf "$nm/@types" "$nm/.package-lock.json"
find "$nm" -type d \( -name __tests__ -o -name test -o -name tests -o -name docs -o -name example -o -name examples \) \
  -prune -exec rm -rf {} +
tar -C "$work" --sort=name --mtime='2024-01-01 00:00:00Z' --owner=0 --group=0 --numeric-owner -cf - node_modules \
  | gzip -9n >node_modules.tgz.partial
mv node_modules.tgz.partial node_modules.tgz
echo "node_modules.tgz: $(du -h node_modules.tgz | cut -f1) ($(tar tzf node_modules.tgz | wc -l) entries)"
