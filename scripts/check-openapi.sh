#!/usr/bin/env bash
# Starts a Parley server on a fresh SQLite folder, takes its /api/openapi.json, lints it with
# Redocly, and regenerates the client's types from it: fails when the types checked in under
# packages/client/src/openapi.ts differ (run `scripts/check-openapi.sh --write` to update them).
set -euo pipefail
export REDOCLY_TELEMETRY=off REDOCLY_SUPPRESS_UPDATE_NOTICE=true
cd "$(dirname "$0")/.."
work=$(mktemp -d)
port=${OPENAPI_CHECK_PORT:-39517}
cleanup() { [[ -n "${pid:-}" ]] && kill "$pid" 2>/dev/null || true; rm -rf "$work"; }
trap cleanup EXIT
env -u DATABASE_URL -u REDIS_URL PARLEY_DATA_DIR="$work/data" LOG_LEVEL=warn \
  node dist/cli/main.js serve --port "$port" >"$work/serve.log" 2>&1 &
pid=$!
for _ in $(seq 1 100); do
  curl -sf "http://127.0.0.1:$port/api/health" >/dev/null 2>&1 && break
  sleep 0.2
done
curl -sf "http://127.0.0.1:$port/api/openapi.json" -o "$work/openapi.json" || { cat "$work/serve.log"; exit 1; }
npx redocly lint "$work/openapi.json" --format=stylish
npx openapi-typescript "$work/openapi.json" -o "$work/openapi.ts" >/dev/null
if [[ "${1:-}" == "--write" ]]; then
  cp "$work/openapi.ts" packages/client/src/openapi.ts
  echo "packages/client/src/openapi.ts updated"
elif ! diff -u packages/client/src/openapi.ts "$work/openapi.ts" >"$work/drift.diff"; then
  head -60 "$work/drift.diff"
  echo "packages/client/src/openapi.ts differs from the served API description: run scripts/check-openapi.sh --write" >&2
  exit 1
else
  echo "client types match the served API description"
fi
