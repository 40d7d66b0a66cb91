#!/usr/bin/env bash
# Regenerates this folder's DeepEval test runs (see README.md): bash make.sh [OUT] (OUT defaults to this folder).
# Needs a Python with deepeval installed: PYTHON=/path/to/python (default python3). Runs offline: no LLM metric.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
out=$(mkdir -p "${1:-$here}" && cd "${1:-$here}" && pwd)
python=${PYTHON:-python3}
export DEEPEVAL_TELEMETRY_OPT_OUT=1 DEEPEVAL_NO_INSPECT_PROMPT=1 DEEPEVAL_UPDATE_WARNING_OPT_IN=0
work=$(mktemp -d)  # DeepEval keeps its .deepeval cache in the working directory: keep it out of the repository
trap 'rm -rf "$work"' EXIT
cd "$work"
for variant in baseline candidate dataset-changed metric-changed metric-error; do
  rm -f "$out/$variant.json"
  "$python" "$here/make_run.py" "$variant" "$work" >/dev/null 2>&1 || { echo "deepeval run $variant failed" >&2; exit 1; }
  mv "$work/$variant.json" "$out/$variant.json"
done
