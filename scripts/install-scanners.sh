#!/usr/bin/env bash
# Installs the scanner bundles the verification scans run inside the sandbox (src/verify/scans/): today the pinned
# ESLint security bundle in runner/scanners/eslint (package-lock.json, production dependencies only, no install
# scripts). The bwrap sandbox binds runner/scanners read-only at /opt/frognano/scanners; the sandbox image copies
# it there (runner/sandbox.Dockerfile). Idempotent: a bundle whose installed lock matches its package-lock.json is
# left alone.
# Usage: scripts/install-scanners.sh [--check]     (--check: exit 1 when a bundle is missing or stale, install nothing)
set -euo pipefail
cd "$(dirname "$0")/.."

check=0
[ "${1:-}" = "--check" ] && check=1
status=0
for dir in runner/scanners/*/; do
  dir="${dir%/}"
  [ -f "$dir/package-lock.json" ] || continue
  # npm ci writes node_modules/.package-lock.json; the same packages as the lock means nothing to do.
  if [ -f "$dir/node_modules/.package-lock.json" ] && node -e '
      const fs = require("node:fs");
      const want = JSON.parse(fs.readFileSync(process.argv[1] + "/package-lock.json", "utf8")).packages;
      const have = JSON.parse(fs.readFileSync(process.argv[1] + "/node_modules/.package-lock.json", "utf8")).packages;
      const ver = (p) => Object.entries(p).filter(([k, v]) => k && !v.dev).map(([k, v]) => k + "@" + v.version).sort().join();
      process.exit(ver(want) === ver(have) ? 0 : 1);' "$dir"; then
    echo "$dir: up to date"
    continue
  fi
  if [ "$check" = 1 ]; then
    echo "$dir: not installed or stale (run scripts/install-scanners.sh)" >&2
    status=1
    continue
  fi
  echo "$dir: npm ci --omit=dev ..."
  (cd "$dir" && npm ci --omit=dev --ignore-scripts --no-audit --no-fund --loglevel=error)
done
exit "$status"
