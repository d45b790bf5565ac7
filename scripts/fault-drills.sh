#!/usr/bin/env bash
# The fault drills at full size, by hand (CI runs the PostgreSQL and full-disk drills small):
# PostgreSQL backends terminated during sends, Redis killed and restarted during sends and a
# campaign, a node killed at three points of a campaign, and a full disk. Each asserts that every
# send gets a final answer, nothing is lost and nothing is sent twice (the sandbox's own log of
# what it accepted). Figures are printed as `[fault drill] ...` lines.
#
#   DATABASE_URL=postgres://postgres@127.0.0.1:5432/<db> scripts/fault-drills.sh
#
# Without DATABASE_URL the PostgreSQL drill is skipped and the others run on SQLite. The full-disk
# drill mounts a tmpfs: it needs root (it is skipped otherwise). The Redis drill starts a
# redis-server of its own on a free port; the PostgreSQL drill terminates only the backends of its
# own node (by application_name). Sizes (defaults below) can be set in the environment.
set -euo pipefail
cd "$(dirname "$0")/.."
export FAULT_DRILLS=all
export FAULT_DRILL_SENDS=${FAULT_DRILL_SENDS:-300}
export FAULT_DRILL_CAMPAIGN=${FAULT_DRILL_CAMPAIGN:-900}
export FAULT_DRILL_CONCURRENCY=${FAULT_DRILL_CONCURRENCY:-16}
export FAULT_DRILL_FULL_FOR_MS=${FAULT_DRILL_FULL_FOR_MS:-10000}
export FAULT_DRILL_KILL_FOR_MS=${FAULT_DRILL_KILL_FOR_MS:-30000}
export FAULT_DRILL_DEADLINE_MS=${FAULT_DRILL_DEADLINE_MS:-180000}
[[ -n "${DATABASE_URL:-}" ]] || echo "DATABASE_URL is not set: the PostgreSQL drill is skipped, the others run on SQLite"
exec nice -n 10 npx vitest run test/faults "$@"
