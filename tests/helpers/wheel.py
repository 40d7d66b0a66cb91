"""Wheels for tests. An authored plugin package installed offline, as a user installs one: its wheel written from its
pyproject.toml (a wheel is a zip with its metadata beside the module), so a test needs no build backend beyond what
pip itself carries, and no network. And evalkit's own wheel, built by pip from a copy of the checkout."""

from __future__ import annotations

import base64
import hashlib
import shutil
import subprocess
import sys
import tomllib
import zipfile
from pathlib import Path


def build_wheel(package: Path, out: Path) -> Path:
    """The wheel of a one-module package (`<name>.py` beside its pyproject.toml), written into `out`."""
    project = tomllib.loads((package / "pyproject.toml").read_text())["project"]
    name, version = project["name"].replace("-", "_"), project["version"]
    info = f"{name}-{version}.dist-info"
    entry_points = "".join(f"[{group}]\n" + "".join(f"{key} = {value}\n" for key, value in points.items())
                           for group, points in project["entry-points"].items())
    files = {f"{name}.py": (package / f"{name}.py").read_bytes(),
             f"{info}/METADATA": f"Metadata-Version: 2.1\nName: {project['name']}\nVersion: {version}\n".encode(),
             f"{info}/WHEEL": b"Wheel-Version: 1.0\nGenerator: evalkit-tests\nRoot-Is-Purelib: true\nTag: py3-none-any\n",
             f"{info}/entry_points.txt": entry_points.encode()}
    record = "".join(f"{path},sha256={base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b'=').decode()},"
                     f"{len(data)}\n" for path, data in files.items()) + f"{info}/RECORD,,\n"
    wheel = out / f"{name}-{version}-py3-none-any.whl"
    with zipfile.ZipFile(wheel, "w") as archive:
        for path, data in {**files, f"{info}/RECORD": record.encode()}.items():
            archive.writestr(path, data)
    return wheel


def install_offline(package: Path, tmp_path: Path) -> Path:
    """Install the package with pip into a folder of its own (no index, no dependencies); the folder to put on
    PYTHONPATH."""
    target = tmp_path / "site"
    done = subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--no-index", "--no-deps", "--target",
                           str(target), str(build_wheel(package, tmp_path))], capture_output=True, text=True,
                          timeout=300, check=False)
    assert done.returncode == 0, done.stderr
    return target


REPO = Path(__file__).resolve().parents[2]


def evalkit_wheel(out: Path) -> Path:
    """evalkit's wheel, as `pip wheel .` builds it, written into `out`. Built from a copy of the checkout's files
    (tracked, and new ones git does not ignore) in `out`: setuptools writes `build/` and `evalkit.egg-info/` beside
    the sources, and in the checkout they would land in the repository while other tests watch it stay untouched
    (tests/product/test_hostile.py)."""
    listed = subprocess.run(["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"], cwd=REPO,
                            capture_output=True, check=True, timeout=60).stdout.decode().split("\0")
    source = out / "source"
    for name in filter(None, listed):
        if (REPO / name).is_file():  # a file deleted but not yet committed is listed and absent
            (source / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(REPO / name, source / name)
    subprocess.run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "-w", str(out), str(source)],
                   check=True, capture_output=True, timeout=600)
    (built,) = out.glob("evalkit-*.whl")
    return built
