#!/usr/bin/env bash
# The whole test suite, as users and CI run it. Makes sure the set-up is done
# first (idempotent), so it also works on a fresh machine.
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
cd "$here"
scripts/setup.sh --no-run
# A one-off build (CI, a fresh clone) gains nothing from the incremental cache,
# which would take gigabytes of disk.
if [ -n "${CI:-}" ]; then export CARGO_INCREMENTAL=0; fi
cargo fmt --all --check
# The workspace's lints (no unwrap/expect in library code, among others) hold.
cargo clippy --workspace --all-targets -- -D warnings
cargo test --workspace --all-targets
# The library example builds a custom agent on the engine, kills it and resumes it.
cargo run -q -p agentloop-core --example custom_agent >/dev/null
# The engine's reference docs, which start from that example, build cleanly.
RUSTDOCFLAGS="-D warnings" cargo doc -q -p agentloop-core --no-deps
