#!/usr/bin/env bash
# Builds the web UI (ui/) into ui/dist, which `sluice serve` / `sluice up`
# serve at /. Skips the work when dist is newer than every source file and
# node_modules matches package-lock.json.
set -euo pipefail
cd "$(dirname "$0")/../ui"

if ! command -v npm >/dev/null; then
  echo "build-ui: npm not found; install Node.js 20+ (the API runs without the UI)" >&2
  exit 1
fi
if [ ! -f node_modules/.package-lock.json ] || [ package-lock.json -nt node_modules/.package-lock.json ]; then
  npm ci --no-audit --no-fund --loglevel=error
fi
if [ -f dist/index.html ] && [ -z "$(find src index.html package-lock.json vite.config.ts tsconfig.json -newer dist/index.html -print -quit)" ]; then
  echo "build-ui: ui/dist is up to date"
  exit 0
fi
npm run build --silent
