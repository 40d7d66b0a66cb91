#!/usr/bin/env bash
# Regenerates this folder's lm-evaluation-harness outputs (see README.md): bash make.sh [OUT] (OUT defaults to
# this folder). Needs lm_eval on PATH or LM_EVAL=/path/to/lm_eval. Runs offline: lm-eval's dummy model (seeded
# random log-likelihoods) on a local multiple-choice task (tasks/*/capitals.yaml over a local JSON Lines file).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
out=$(mkdir -p "${1:-$here}" && cd "${1:-$here}" && pwd)
lm_eval=${LM_EVAL:-lm_eval}
export HF_HUB_OFFLINE=1 HF_DATASETS_OFFLINE=1 TOKENIZERS_PARALLELISM=false
export HF_HOME=${HF_HOME:-$(mktemp -d)}
run() {  # variant, task folder, seed: writes OUT/<variant>/results_<time>.json and samples_capitals_<time>.jsonl
  local work
  work=$(mktemp -d)
  (cd "$here/tasks/$2" && "$lm_eval" run --model dummy --tasks capitals --include_path . --seed "$3" \
      --output_path "$work" --log_samples >/dev/null 2>&1) || { echo "lm_eval run $1 failed" >&2; exit 1; }
  rm -rf "${out:?}/$1" && mkdir -p "$out/$1"
  mv "$work"/*/results_*.json "$work"/*/samples_capitals_*.jsonl "$out/$1/"  # lm-eval's folder is the model name
  rm -rf "$work"
}
run baseline base 0
run candidate base 1
run dataset-changed dataset-changed 0
run metric-changed metric-changed 0
