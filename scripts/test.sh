#!/usr/bin/env bash
# Everything the tests need on a fresh Debian machine, installing only what is missing, then the tests.
# The README's test command and .ci/run run this script; arguments go to pytest (`bash scripts/test.sh -k gate`).
set -euo pipefail
cd "$(dirname "$0")/.."

# Debian packages the tests drive for real: a headless browser for the HTML pages, and a single-node Slurm
# cluster with accounting (munge, the daemons, MariaDB) for the launcher tests. Tests start and stop the
# services themselves; installing them starts nothing we rely on.
DEBIAN_PACKAGES=(chromium chromium-driver munge slurmctld slurmd slurm-client slurmdbd mariadb-server)
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

# The venv and the extras the tests use (pip installs only what is missing; llama-cpp-python comes from pip's
# wheel cache after its first build): `launchers` brings Hydra's joblib and submitit launchers, which the sweep
# tests drive (submitit on the Slurm cluster that tests/test_slurm.py starts and stops).
[ -x .venv/bin/python ] || python3 -m venv .venv
.venv/bin/pip install -q -e ".[test,local,launchers]"

exec .venv/bin/python -m pytest -q "$@"
