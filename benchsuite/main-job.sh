#!/usr/bin/env bash
# The main job as a newcomer runs it: exactly the command scripts/setup.sh
# ends with, N times, each in a fresh process with a fresh data dir (its
# own session database; the installed models linked in) on a fresh copy of
# the example. Half the runs have pytest importable, as on a machine that
# has it (target/pytest-deps, installed by the set-up), half do not.
# Each run's exit code, seconds, the seconds it waited for models (the
# session's own count) and whether the copy's tests pass after it
# (checked here, not taken from the agent) go to stderr; the last line on
# stdout is one JSON object.
#
#   benchsuite/main-job.sh [N] [OTHER]
#
# N defaults to 10; needs the release build (or AGENTLOOP_BIN, a copy of
# it, so that a rebuild during the runs does not change what is measured). OTHER, another build's
# `agentloop` binary (an older commit's, say), runs beside it: each run
# does both, in turns (which goes first alternates), on the same copy of
# the example and the same pytest setting, so that the machine's noise
# falls on both alike; the JSON then has a row for each.
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
runs=${1:-10}
bin="${AGENTLOOP_BIN:-$here/target/release/agentloop}"
other=${2:-}
[ -z "$other" ] || [ -x "$other" ] || { echo "$other is not an executable agentloop binary" >&2; exit 2; }
models="${XDG_DATA_HOME:-$HOME/.local/share}/agentloop/models"
[ -x "$bin" ] || { echo "no release build at $bin: run cargo build --release -p agentloop-cli" >&2; exit 2; }
[ -d "$models" ] || { echo "no models at $models: run scripts/setup.sh --no-run" >&2; exit 2; }
[ -d "$here/target/pytest-deps/pytest" ] || { echo "no pytest at target/pytest-deps: run scripts/setup.sh --no-run" >&2; exit 2; }

# One fresh run of build $1 (a binary), as run $2 of the row named $3:
# appends its record to that row's records, counts a pass.
declare -A records=() passed=()
run_once() {
  local build=$1 i=$2 row=$3
  local scratch demo pytest_path="" with_pytest=false started rc ms seconds model green=false
  scratch=$(mktemp -d)
  mkdir -p "$scratch/data"
  ln -s "$models" "$scratch/data/models"
  demo="$scratch/py-intervals"
  cp -r "$here/examples/workspaces/py-intervals" "$demo"
  if [ $((i % 2)) -eq 0 ]; then
    pytest_path="$here/target/pytest-deps"
    with_pytest=true
  fi
  started=$(date +%s%N)
  set +e
  (cd "$here" && AGENTLOOP_DATA_DIR="$scratch/data" PYTHONPATH="$pytest_path" "$build" run coder --workspace "$demo" \
    --task "Fix merge() in intervals.py so that all tests pass" --approval never >"$scratch/out.txt" 2>&1)
  rc=$?
  set -e
  ms=$(( ($(date +%s%N) - started) / 1000000 ))
  seconds="$((ms / 1000)).$(printf %03d $((ms % 1000)))"
  (cd "$demo" && python3 -m unittest -q >/dev/null 2>&1) && green=true
  # The engine's own count of time spent waiting for models (answers asked
  # together count once), as the session list reports it.
  model=$(AGENTLOOP_DATA_DIR="$scratch/data" "$build" sessions list --json 2>/dev/null |
    python3 -c 'import json, sys; print(sum(s["progress"]["modelMs"] for s in json.load(sys.stdin)) / 1000)' 2>/dev/null) || model=null
  [ "$rc" -eq 0 ] && [ "$green" = true ] && passed[$row]=$(( ${passed[$row]:-0} + 1 ))
  echo "$row run $i: exit $rc, ${seconds%.*} s (models ${model%.*} s), tests green after: $green, pytest importable: $with_pytest ($(tail -n 1 "$scratch/out.txt"))" >&2
  records[$row]="${records[$row]:+${records[$row]},}{\"run\": $i, \"exit\": $rc, \"seconds\": $seconds, \"model_seconds\": $model, \"green\": $green, \"pytest\": $with_pytest}"
  rm -rf "$scratch"
}

# The median of one numeric field ($2) over a row's records ($1).
median_of() {
  printf '%s' "$1" | grep -o "\"$2\": [0-9][0-9.]*" | sed 's/.*: //' | sort -n | awk '{a[NR]=$1} END {if (NR == 0) print "null"; else if (NR % 2) print a[(NR+1)/2]; else print (a[NR/2] + a[NR/2+1]) / 2}'
}

# A row's JSON: its runs, passes, median seconds (whole process and models
# busy) and records.
row_json() {
  local row=$1
  printf '"runs": %d, "passed": %d, "median_seconds": %s, "median_model_seconds": %s, "results": [%s]' \
    "$runs" "${passed[$row]:-0}" "$(median_of "${records[$row]}" seconds)" "$(median_of "${records[$row]}" model_seconds)" "${records[$row]}"
}

for i in $(seq 1 "$runs"); do
  if [ -z "$other" ]; then
    run_once "$bin" "$i" this
  elif [ $((i % 2)) -eq 1 ]; then
    run_once "$bin" "$i" this
    run_once "$other" "$i" other
  else
    run_once "$other" "$i" other
    run_once "$bin" "$i" this
  fi
done
if [ -z "$other" ]; then
  printf '{"bench": "main-job", %s}\n' "$(row_json this)"
else
  printf '{"bench": "main-job", %s, "beside": {"binary": "%s", %s}}\n' "$(row_json this)" "$other" "$(row_json other)"
fi
