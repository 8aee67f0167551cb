#!/usr/bin/env bash
# Installs the benchmark peers (bench/peers/*/package.json) into their own node_modules.
# They are never dependencies of skein; `npm run bench` prints "skipped: not installed"
# for a peer that is missing.
set -euo pipefail
cd "$(dirname "$0")"
for dir in */; do
  [ -f "$dir/package.json" ] || continue
  echo "installing bench peer ${dir%/}"
  (cd "$dir" && npm install --no-audit --no-fund --no-package-lock)
done
