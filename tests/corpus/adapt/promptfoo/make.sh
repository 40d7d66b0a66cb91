#!/usr/bin/env bash
# Regenerates this folder's promptfoo results (see README.md): bash make.sh [OUT] (OUT defaults to this folder).
# Needs promptfoo on PATH or PROMPTFOO=/path/to/promptfoo; runs offline (echo and local file:// providers).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
out=${1:-$here}
mkdir -p "$out"
if [ "$out" != "$here" ]; then cp "$here"/*.yaml "$here"/*.js "$out"/; fi
cd "$out"
promptfoo=${PROMPTFOO:-promptfoo}
export PROMPTFOO_DISABLE_TELEMETRY=1 PROMPTFOO_DISABLE_UPDATE=1 PROMPTFOO_DISABLE_SHARING=1
export PROMPTFOO_CONFIG_DIR=${PROMPTFOO_CONFIG_DIR:-$out/.promptfoo}
run() {  # config, output, extra options
  rm -f "$2"
  "$promptfoo" eval -c "$1" -o "$2" --no-cache --no-write --no-progress-bar --no-table "${@:3}" >/dev/null 2>&1 || true
  test -s "$2" || { echo "promptfoo wrote no $2" >&2; exit 1; }
}
run baseline.yaml baseline.json
run candidate.yaml candidate.json
run dataset-changed.yaml dataset-changed.json
run assertion-changed.yaml assertion-changed.json
run provider-error.yaml provider-error.json
run two-prompts.yaml two-prompts.json
run baseline.yaml repeat-baseline.json --repeat 10
run flaky.yaml repeat-candidate.json --repeat 10
