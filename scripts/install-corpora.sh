#!/usr/bin/env bash
# Builds the research agent's two bundled corpora ahead of time, skipping a
# corpus already there (otherwise the first `run research` that needs one
# builds it, with a progress bar): `wiki` (the 10,033 Wikipedia lead summaries that
# fetch-models.sh placed under <data dir>/benchmarks) and `phantom-wiki`
# (the PhantomWiki fixture in crates/retrieval/data).
# Usage: scripts/install-corpora.sh [AGENTLOOP_BINARY]
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
bin="${1:-$here/target/release/agentloop}"
DATA_DIR="${AGENTLOOP_DATA_DIR:-${XDG_DATA_HOME:-$HOME/.local/share}/agentloop}"

# Present and holding passages: an indexing stopped by an older version could leave an empty corpus.
have() { "$bin" --data-dir "$DATA_DIR" corpus list --json | grep -q "\"name\":\"$1\",\"passages\":[1-9]"; }

if have wiki; then
  echo "[corpora] wiki present"
else
  echo "[corpora] indexing wiki (10,033 summaries, about 20,000 passages embedded: 15–25 minutes on two cores)"
  "$bin" --data-dir "$DATA_DIR" corpus add wiki "$DATA_DIR/benchmarks/wiki-summaries-en.json"
fi
if have phantom-wiki; then
  echo "[corpora] phantom-wiki present"
else
  echo "[corpora] indexing phantom-wiki"
  "$bin" --data-dir "$DATA_DIR" corpus add phantom-wiki "$here/crates/retrieval/data/phantom-wiki.json"
fi
