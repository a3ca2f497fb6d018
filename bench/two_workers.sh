#!/usr/bin/env bash
# Two workers of 1 thread each on one PostgreSQL run against one worker of 2 threads, for
# the same wall time (docs/distributed.md, "Two workers or one"): starts a throwaway server
# (as bench/distributed_sim.sh does), runs both setups one after the other, and prints each
# one's evaluations per minute and the best it found. Run it on a quiet machine:
#   bench/two_workers.sh [--time 10m] [--spec examples/softmax.py] [--args "--dims M=64"]
set -euo pipefail
cd "$(dirname "$0")/.."
TIME=10m SPEC=examples/softmax.py ARGS=""
while [ $# -gt 0 ]; do
  case "$1" in
    --time) TIME=$2; shift 2 ;;
    --spec) SPEC=$2; shift 2 ;;
    --args) ARGS=$2; shift 2 ;;
    *) echo "usage: $0 [--time 10m] [--spec SPEC] [--args \"OPTIONS\"]" >&2; exit 2 ;;
  esac
done
OLLIE=${OLLIE:-$PWD/build/ollie}
# shellcheck source=bench/scratch_postgres.sh
source bench/scratch_postgres.sh
URL=$PG_URL
OUT=$(mktemp -d /tmp/ollie-two-out.XXXXXX)
read -r -a EXTRA <<< "$ARGS"
# A fresh tuning database and no warm start: each setup searches from the baseline.
worker() {  # RUN THREADS NAME
  OLLIE_CACHE_DIR="$OUT/cache" "$OLLIE" optimize "$SPEC" "${EXTRA[@]}" --threads "$2" \
    --time "$TIME" --no-tuning-db --storage "$URL" --run "$1" -o "$OUT/$3" > "$OUT/$3.log" 2>&1
}
# --time in seconds (90s, 10m, 2h, 1d, or a bare number of seconds).
seconds_of() {
  local n=${1%[smhd]}
  case "$1" in
    *m) echo $((n * 60)) ;; *h) echo $((n * 3600)) ;; *d) echo $((n * 86400)) ;; *) echo "$n" ;;
  esac
}
# The run's candidates per minute of search (each worker searches for --time; calibrating
# and writing the answer come on top), and the best in the summary that the worker which
# stopped last wrote.
report() {  # RUN LABEL DIRS...
  local run=$1 label=$2 evals best="- best: (no summary.md written)" d
  shift 2
  evals=$("${PG_AS[@]}" "$PG_BIN/psql" -h "$PG_DIR" -U ollie -d ollie -tAc \
    "SELECT count(*) FROM \"$run\".candidates")
  for d in "$@"; do
    [ -f "$d/summary.md" ] && best=$(grep -m1 '^- best:' "$d/summary.md")
  done
  awk -v l="$label" -v n="$evals" -v s="$(seconds_of "$TIME")" -v b="${best#- }" \
    'BEGIN { printf "%-22s %5d candidates in %g s of search = %6.1f per minute; %s\n", l, n, s, n * 60 / s, b }'
}
echo "== $SPEC ${ARGS:+($ARGS) }for $TIME each"
worker two 1 a & worker two 1 b & wait
worker one 2 c
report two "2 workers x 1 thread:" "$OUT/a" "$OUT/b"
report one "1 worker x 2 threads:" "$OUT/c"
rm -rf "$OUT"
