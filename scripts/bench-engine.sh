#!/usr/bin/env bash
# Side-by-side engine benchmark: LangGraph's reference loop (benchsuite/langgraph_loop.py)
# against `agentloop-bench engine` in both durability modes, on the same
# machine in one run. Each agentloop figure is the median of RUNS runs (the
# disk of a shared VM is noisy); LangGraph runs once (it takes seconds).
#
#   scripts/bench-engine.sh [ITERATIONS] [RUNS]
#
# Prints one JSON object per engine/mode, then a summary line with the ratios.
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
iterations=${1:-500}
runs=${2:-5}
bin=${AGENTLOOP_BENCH_BIN:-$here/target/release/agentloop-bench}
if [ ! -x "$bin" ]; then
  source "$here/scripts/cpu-features.sh"
  cargo build --release -q -p agentloop-bench --manifest-path "$here/Cargo.toml"
fi
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT

median() { python3 -c '
import json, statistics, sys
rows = [json.loads(l) for l in sys.stdin if l.strip()]
rows.sort(key=lambda r: r["us_per_step"])
print(json.dumps(rows[len(rows) // 2]))'; }

lg=""
if python3 -c "import langgraph.checkpoint.sqlite" 2>/dev/null; then
  lg=$(python3 "$here/benchsuite/langgraph_loop.py" --iterations "$iterations" --db "$scratch/lg.sqlite" | tail -n 1)
  echo "$lg"
else
  echo "langgraph is not installed (pip install langgraph langgraph-checkpoint-sqlite): comparing agentloop only" >&2
fi
for mode in fsync process; do
  for _ in $(seq "$runs"); do
    "$bin" engine --iterations "$iterations" --durability "$mode" --db "$scratch/al.sqlite" | tail -n 1
  done | median | tee "$scratch/$mode.json"
done
python3 - "$scratch" "$lg" <<'PY'
import json, sys
d = sys.argv[1]
f = json.load(open(f"{d}/fsync.json")); p = json.load(open(f"{d}/process.json"))
out = {"iterations": f["iterations"], "fsync_us_per_step": f["us_per_step"], "process_us_per_step": p["us_per_step"],
       "fsync_db_over_payload": round(f["db_bytes"] / f["payload_bytes"], 2),
       "process_db_over_payload": round(p["db_bytes"] / p["payload_bytes"], 2)}
if sys.argv[2]:
    lg = json.loads(sys.argv[2])
    out["langgraph_us_per_step"] = lg["us_per_step"]
    out["fsync_speedup"] = round(f["steps_per_s"] / lg["steps_per_s"], 1)
    out["process_speedup"] = round(p["steps_per_s"] / lg["steps_per_s"], 1)
    out["langgraph_db_over_payload"] = round(lg["db_bytes"] / lg["payload_bytes"], 1)
print(json.dumps(out))
PY
