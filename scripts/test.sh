#!/usr/bin/env bash
# The whole test suite, as users and CI run it. Makes sure the set-up is done
# first (idempotent), so it also works on a fresh machine.
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
cd "$here"
scripts/setup.sh --no-run
cargo fmt --all --check
cargo test --workspace --all-targets
