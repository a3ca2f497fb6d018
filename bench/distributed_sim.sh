#!/usr/bin/env bash
# The scale simulation of shared runs (bench/distributed_sim.cpp, docs/distributed.md):
# starts a throwaway PostgreSQL server in a temporary directory (as the postgres user when
# run as root), runs build/bench_distributed_sim against it with the given flags, and
# removes the server. Example: bench/distributed_sim.sh --workers 1,4,16,64 --seconds 5
set -euo pipefail
cd "$(dirname "$0")/.."
PG_OPTIONS="-c max_connections=300"
# shellcheck source=bench/scratch_postgres.sh
source bench/scratch_postgres.sh
build/bench_distributed_sim "$PG_URL" "$@"
