#!/usr/bin/env bash
# The whole test suite, as users and CI run it. Makes sure the set-up is done
# first (idempotent), so it also works on a fresh machine.
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
cd "$here"
scripts/setup.sh --no-run
source scripts/cpu-features.sh
# A one-off build (CI, a fresh clone) gains nothing from the incremental cache,
# which would take gigabytes of disk.
if [ -n "${CI:-}" ]; then export CARGO_INCREMENTAL=0; fi
cargo fmt --all --check
# The workspace's lints (no unwrap/expect in library code, among others) hold.
cargo clippy --workspace --all-targets -- -D warnings
cargo test --workspace --all-targets
# The sandbox's holes differ between root and an ordinary user (the kernel
# exempts root from the process limit; root could read the shadow files):
# run as root, the suite runs them as `nobody` too.
if [ "$(id -u)" -eq 0 ] && command -v setpriv >/dev/null 2>&1 && id nobody >/dev/null 2>&1; then
  holes=$(cargo test -q -p agentloop-tools --test sandbox_workspace --no-run --message-format=json \
    | python3 -c 'import json, sys; found = [m["executable"] for m in map(json.loads, sys.stdin) if m.get("executable") and m["target"]["name"] == "sandbox_workspace"]; print(found[-1])')
  as_nobody=(setpriv --reuid=nobody --regid="$(id -g nobody)" --clear-groups env HOME=/tmp)
  if (cd / && "${as_nobody[@]}" test -x "$holes"); then
    (cd / && "${as_nobody[@]}" "$holes")
  else
    echo "note: the sandbox's holes were not run as nobody: it cannot reach $holes (a checkout in a private folder)"
  fi
fi
# The coder reads pytest's output as well as unittest's: its tests pass on a
# machine that has pytest as on one that has not.
PYTHONPATH="$here/target/pytest-deps" cargo test -q --workspace --test coder_paths
PYTHONPATH="$here/target/pytest-deps" cargo test -q --workspace --test run_coder --test bench_coder
# The library example builds a custom agent on the engine, kills it and resumes it.
cargo run -q -p agentloop-core --example custom_agent >/dev/null
# The engine's reference docs, which start from that example, build cleanly.
RUSTDOCFLAGS="-D warnings" cargo doc -q -p agentloop-core --no-deps
