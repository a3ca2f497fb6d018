#!/usr/bin/env bash
# Soak test of the verifier (issue 16): every red-team kernel N times, every blue-team
# kernel and every example's default kernel M times, each run an `ollie verify` with a
# fresh seed; prints per kernel how many runs got an expected verdict, then the totals.
# Not part of ctest (hours at the issue's counts on 2 cores); see tests/redteam/README.md.
#
#   scripts/soak_corpus.sh [--red N] [--blue M] [--examples M] [--only SUBSTR]
#                          [--jobs J] [--ollie PATH] [--timeout S] [--keep DIR]
#
# Defaults: --red 10 --blue 10 --examples 10 --jobs 1 --ollie build/ollie --timeout 20.
# --red 0 (or --blue 0, --examples 0) skips that group. Red-team kernels are verified at
# the level their `// level:` line names (quick otherwise) and count as expected when the
# verdict is one of their `// expect:` alternatives; blue-team and default kernels must
# pass. Exit status 0 only when every run got an expected verdict. --keep DIR keeps each
# run's output there (default: a temporary directory, removed at the end).
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
RED=10 BLUE=10 EXAMPLES=10 ONLY="" JOBS=1 OLLIE="$ROOT/build/ollie" TIMEOUT=20 KEEP=""
while [ $# -gt 0 ]; do
  case "$1" in
    --red) RED=$2; shift 2 ;;
    --blue) BLUE=$2; shift 2 ;;
    --examples) EXAMPLES=$2; shift 2 ;;
    --only) ONLY=$2; shift 2 ;;
    --jobs) JOBS=$2; shift 2 ;;
    --ollie) OLLIE=$2; shift 2 ;;
    --timeout) TIMEOUT=$2; shift 2 ;;
    --keep) KEEP=$2; shift 2 ;;
    -h|--help) sed -n '2,16p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "soak_corpus.sh: unknown argument '$1' (see --help)" >&2; exit 2 ;;
  esac
done
for n in "$RED" "$BLUE" "$EXAMPLES" "$JOBS" "$TIMEOUT"; do
  [[ "$n" =~ ^[0-9]+$ ]] || { echo "soak_corpus.sh: '$n' is not a count" >&2; exit 2; }
done
[ -x "$OLLIE" ] || { echo "soak_corpus.sh: no ollie binary at $OLLIE (build it, or pass --ollie)" >&2; exit 2; }

WORK=${KEEP:-$(mktemp -d /tmp/ollie-soak.XXXXXX)}
mkdir -p "$WORK/runs" "$WORK/default"
[ -n "$KEEP" ] || trap 'rm -rf "$WORK"' EXIT
export OLLIE_CACHE_DIR=${OLLIE_CACHE_DIR:-/tmp/ollie-soak-cache}

# The value of a `// NAME: value` line of a kernel ("" when none).
header() { sed -n "s|^// $2: *||p" "$1" | head -n 1; }

# One job per line: group, name, spec, kernel, level, expected verdicts (-or- joined).
JOBLIST="$WORK/jobs.tsv"
: > "$JOBLIST"
add_jobs() {  # count group name spec kernel level expect
  local i
  for ((i = 0; i < $1; i++)); do printf '%s\t%s\t%s\t%s\t%s\t%s\n' "$2" "$3" "$4" "$5" "$6" "$7" >> "$JOBLIST"; done
}
for k in "$ROOT"/tests/redteam/*.cpp; do
  name=$(basename "$k" .cpp); [[ "$name" == *"$ONLY"* ]] || continue
  expect=$(header "$k" expect); level=$(header "$k" level)
  [ -n "$expect" ] || { echo "soak_corpus.sh: $k has no // expect: line" >&2; exit 2; }
  add_jobs "$RED" red "$name" "$ROOT/examples/${name%%__*}.py" "$k" "${level:-quick}" "$expect"
done
for k in "$ROOT"/tests/blueteam/*.cpp; do
  name=$(basename "$k" .cpp); [[ "$name" == *"$ONLY"* ]] || continue
  add_jobs "$BLUE" blue "$name" "$ROOT/examples/${name%%__*}.py" "$k" quick pass
done
if [ "$EXAMPLES" -gt 0 ]; then
  for spec in "$ROOT"/examples/*.py; do
    ex=$(basename "$spec" .py); [[ "default:$ex" == *"$ONLY"* ]] || continue
    "$OLLIE" emit "$spec" -o "$WORK/default/$ex" > /dev/null
    kernel=$(ls "$WORK/default/$ex"/*.cpp | head -n 1)
    add_jobs "$EXAMPLES" default "$ex" "$spec" "$kernel" quick pass
  done
fi

# Runs job number $1 (a line of the job list) and prints: group, name, expect, verdict.
run_one() {
  local n=$1 line group name spec kernel level expect out verdict
  line=$(sed -n "${n}p" "$JOBLIST")
  IFS=$'\t' read -r group name spec kernel level expect <<< "$line"
  out="$WORK/runs/$n.txt"
  "$OLLIE" verify "$spec" "$kernel" --level "$level" --timeout "$TIMEOUT" > "$out" 2>&1 || true
  # The summary's first line: "<kernel path>: <verdict> (<seconds> s, ...".
  verdict=$(sed -n "1s|^.*: \([a-z-]*\) ([0-9.]* s,.*|\1|p" "$out")
  printf '%s\t%s\t%s\t%s\n' "$group" "$name" "$expect" "${verdict:-error}"
}
export -f run_one
export JOBLIST WORK OLLIE TIMEOUT

total=$(wc -l < "$JOBLIST")
echo "soak: $total runs ($RED per red-team kernel, $BLUE per blue-team kernel, $EXAMPLES per example's default kernel), $JOBS at a time; outputs in $WORK/runs" >&2
seq 1 "$total" | xargs -P "$JOBS" -I{} bash -c 'run_one {}' > "$WORK/results.tsv"

# Tally: per kernel, expected verdicts / runs, and the verdicts seen.
python3 - "$WORK/results.tsv" <<'PY'
import collections, sys
runs, ok, seen, expect = collections.Counter(), collections.Counter(), {}, {}
groups, groups_ok = collections.Counter(), collections.Counter()
for line in open(sys.argv[1]):
    group, name, exp, got = line.rstrip("\n").split("\t")
    key = (group, name)
    good = got in exp.split("-or-")
    runs[key] += 1; ok[key] += good; expect[key] = exp
    seen.setdefault(key, collections.Counter())[got] += 1
    groups[group] += 1; groups_ok[group] += good
kw = max([len(k[1]) for k in runs] + [6])
ew = max([len(e) for e in expect.values()] + [6])
print(f"{'group':7} {'kernel':{kw}} {'expected':>9}  {'expect':{ew}}  verdicts seen")
for key in sorted(runs):
    verdicts = ", ".join(f"{v} {n}" for v, n in seen[key].most_common())
    flag = "" if ok[key] == runs[key] else "  <--"
    print(f"{key[0]:7} {key[1]:{kw}} {ok[key]:>4}/{runs[key]:<4}  {expect[key]:{ew}}  {verdicts}{flag}")
print()
for g in sorted(groups):
    print(f"{g}: {groups_ok[g]} of {groups[g]} runs got an expected verdict")
sys.exit(0 if sum(ok.values()) == sum(runs.values()) else 1)
PY
