#!/usr/bin/env bash
# The scale simulation of shared runs (bench/distributed_sim.cpp, docs/distributed.md):
# starts a throwaway PostgreSQL server in a temporary directory (as the postgres user when
# run as root), runs build/bench_distributed_sim against it with the given flags, and
# removes the server. Example: bench/distributed_sim.sh --workers 1,4,16,64 --seconds 5
set -euo pipefail
cd "$(dirname "$0")/.."
BIN=$(ls -d /usr/lib/postgresql/*/bin | sort -V | tail -1)
DIR=$(mktemp -d /tmp/ollie-sim.XXXXXX)
chmod 755 "$DIR"
AS=()
if [ "$(id -u)" -eq 0 ]; then chown postgres "$DIR"; AS=(runuser -u postgres --); fi
CTL=("${AS[@]}" "$BIN/pg_ctl" -D "$DIR/data" -o "-k $DIR -c listen_addresses='' -p 5432 -c max_connections=300")
cleanup() { "${CTL[@]}" -m immediate stop > /dev/null 2>&1 || true; rm -rf "$DIR"; }
trap cleanup EXIT
"${AS[@]}" "$BIN/initdb" -D "$DIR/data" -U ollie --auth=trust -E UTF8 --locale=C > /dev/null
"${CTL[@]}" -w -l "$DIR/log" start > /dev/null
"${AS[@]}" "$BIN/createdb" -h "$DIR" -U ollie ollie
build/bench_distributed_sim "postgresql:///ollie?host=$DIR&user=ollie" "$@"
