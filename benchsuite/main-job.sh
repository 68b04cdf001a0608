#!/usr/bin/env bash
# The main job as a newcomer runs it: exactly the command scripts/setup.sh
# ends with, N times, each in a fresh process with a fresh data dir (its
# own session database; the installed models linked in) on a fresh copy of
# the example. Half the runs have pytest importable, as on a machine that
# has it (target/pytest-deps, installed by the set-up), half do not.
# Each run's exit code, seconds and whether the copy's tests pass after it
# (checked here, not taken from the agent) go to stderr; the last line on
# stdout is one JSON object.
#
#   benchsuite/main-job.sh [N]     (default 10; needs the release build)
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
runs=${1:-10}
bin="$here/target/release/agentloop"
models="${XDG_DATA_HOME:-$HOME/.local/share}/agentloop/models"
[ -x "$bin" ] || { echo "no release build at $bin: run cargo build --release -p agentloop-cli" >&2; exit 2; }
[ -d "$models" ] || { echo "no models at $models: run scripts/setup.sh --no-run" >&2; exit 2; }
[ -d "$here/target/pytest-deps/pytest" ] || { echo "no pytest at target/pytest-deps: run scripts/setup.sh --no-run" >&2; exit 2; }

records=()
passed=0
for i in $(seq 1 "$runs"); do
  scratch=$(mktemp -d)
  mkdir -p "$scratch/data"
  ln -s "$models" "$scratch/data/models"
  demo="$scratch/py-intervals"
  cp -r "$here/examples/workspaces/py-intervals" "$demo"
  pytest_path=""
  with_pytest=false
  if [ $((i % 2)) -eq 0 ]; then
    pytest_path="$here/target/pytest-deps"
    with_pytest=true
  fi
  started=$(date +%s%N)
  set +e
  (cd "$here" && AGENTLOOP_DATA_DIR="$scratch/data" PYTHONPATH="$pytest_path" "$bin" run coder --workspace "$demo" \
    --task "Fix merge() in intervals.py so that all tests pass" --approval never >"$scratch/out.txt" 2>&1)
  rc=$?
  set -e
  ms=$(( ($(date +%s%N) - started) / 1000000 ))
  seconds="$((ms / 1000)).$(printf %03d $((ms % 1000)))"
  green=false
  (cd "$demo" && python3 -m unittest -q >/dev/null 2>&1) && green=true
  [ "$rc" -eq 0 ] && [ "$green" = true ] && passed=$((passed + 1))
  echo "run $i: exit $rc, ${seconds%.*} s, tests green after: $green, pytest importable: $with_pytest ($(tail -n 1 "$scratch/out.txt"))" >&2
  records+=("{\"run\": $i, \"exit\": $rc, \"seconds\": $seconds, \"green\": $green, \"pytest\": $with_pytest}")
  rm -rf "$scratch"
done
median=$(printf '%s\n' "${records[@]}" | sed 's/.*"seconds": \([0-9.]*\).*/\1/' | sort -n | awk '{a[NR]=$1} END {if (NR % 2) print a[(NR+1)/2]; else print (a[NR/2] + a[NR/2+1]) / 2}')
printf '{"bench": "main-job", "runs": %d, "passed": %d, "median_seconds": %s, "results": [%s]}\n' "$runs" "$passed" "$median" "$(IFS=,; echo "${records[*]}")"
