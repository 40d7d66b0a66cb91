"""Regenerate the corpus of real pytest-json-report reports in this folder (see README.md here).

Downloads sdists of three third-party projects from the package index, runs their own test suites with pytest
and pytest-json-report in a scratch virtual environment outside the repository, and writes, per run:
NAME.json.gz (the report as pytest-json-report wrote it), NAME.junit.xml.gz (pytest's own JUnit XML of the same
run: an independent count) and NAME.meta.json (command, versions, pytest's exit code and terminal summary line).

Usage: python tests/corpus/pytest_reports/make_corpus.py [SCRATCH_DIR [RUN ...]]
(default scratch folder: /tmp/evalkit-corpus-build; RUN names limit the runs redone, e.g. toolz-1.1.0-repeat)
Needs network access to the package index. Takes a few minutes.
"""

from __future__ import annotations

import gzip
import json
import os
import shutil
import subprocess
import sys
import tarfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
TOOLS = ["pytest==9.2.0", "pytest-json-report==1.5.0", "pytest-rerunfailures==16.7", "pytest-xdist==3.8.0",
         "pytest-repeat==0.9.4", "hypothesis==6.170.15", "freezegun", "attrs", "six", "pytest-cov"]
PROJECTS = {"toolz": ("1.0.0", "1.1.0"), "more-itertools": ("11.1.0", "11.2.1"),
            "python-dateutil": ("3.0.0", "4.0.0")}
# Omitted fields carry captured output and keywords only; outcomes, collectors, summary, exitcode and
# longrepr are kept as written.
OMIT = ["--json-report-omit", "keywords", "streams", "log"]

# Authored test files injected into copies of a project (what each injection is for is in README.md).
FLAKY = '''\
import os, pathlib

def test_flaky_passes_on_rerun():
    marker = pathlib.Path(os.environ["CORPUS_FLAKY_MARKER"])
    if not marker.exists():
        marker.write_text("failed once")
        assert False, "first attempt fails"
'''
BROKEN_IMPORT = '''\
from toolz import frequencies_v2  # a new module importing a name that does not exist

def test_frequencies_v2():
    assert frequencies_v2("aab") == {"a": 2, "b": 1}
'''
OUTCOMES = '''\
import pytest

@pytest.mark.xfail(reason="known bug", strict=False)
def test_xfail_fails():
    assert False

@pytest.mark.xfail(reason="known bug, fixed meanwhile", strict=False)
def test_xfail_passes_nonstrict():
    assert True

@pytest.mark.xfail(reason="must fail", strict=True)
def test_xfail_passes_strict():
    assert True

@pytest.mark.skip(reason="not on this platform")
def test_skipped():
    pass

@pytest.mark.parametrize("text", ["a::b", "with space", "\\u00fcn\\u00efc\\u00f8d\\u00e9", "x[1]"],
                         ids=["a::b", "with space", "\\u00fcn\\u00efc\\u00f8d\\u00e9", "x[1]"])
def test_ids(text):
    assert text != "with space"

class TestGroup:
    def test_inside(self):
        assert True

def test_subtests(subtests):
    for n in range(3):
        with subtests.test(n=n):
            assert n != 1
'''


def sh(command: list[str], cwd: Path | None = None, env: dict[str, str] | None = None) -> None:
    print("+", " ".join(command), flush=True)
    subprocess.run(command, cwd=cwd, env=env, check=True)


def patch(path: Path, old: str, new: str) -> None:
    text = path.read_text(encoding="utf-8")
    if old not in text:
        raise SystemExit(f"{path}: injection point not found: {old!r}")
    path.write_text(text.replace(old, new, 1), encoding="utf-8")


def main() -> int:
    scratch = Path(sys.argv[1] if len(sys.argv) > 1 else "/tmp/evalkit-corpus-build").resolve()
    if HERE in scratch.parents or scratch == HERE:
        raise SystemExit("use a scratch folder outside the repository")
    scratch.mkdir(parents=True, exist_ok=True)
    venv = scratch / "venv"
    if not venv.exists():
        sh([sys.executable, "-m", "venv", str(venv)])
        sh([str(venv / "bin/pip"), "install", "-q", *TOOLS])
    python = str(venv / "bin/python")
    src = scratch / "src"
    src.mkdir(exist_ok=True)
    dirs: dict[str, Path] = {}
    for name, versions in PROJECTS.items():
        for version in versions:
            sh([str(venv / "bin/pip"), "download", "-q", "--no-binary", ":all:", "--no-deps",
                f"{name}=={version}", "-d", str(src)])
            archive = next(src.glob(f"{name.replace('-', '_')}-{version}.tar.gz"))
            with tarfile.open(archive) as tar:
                tar.extractall(src, filter="data")
            dirs[f"{name}-{version}"] = src / archive.name.removesuffix(".tar.gz")

    def copy(base: str, as_name: str) -> Path:
        target = scratch / "work" / as_name
        shutil.rmtree(target, ignore_errors=True)
        shutil.copytree(dirs[base], target)
        return target

    versions = subprocess.run([python, "-m", "pip", "freeze"], capture_output=True, text=True, check=True).stdout
    runs: list[tuple[str, Path, list[str], dict[str, str], str]] = []
    for v in PROJECTS["toolz"]:
        runs.append((f"toolz-{v}", dirs[f"toolz-{v}"], ["toolz"], {}, "none"))
    regressed = copy("toolz-1.1.0", "toolz-regressed")
    patch(regressed / "toolz/itertoolz.py", "    seq = iter(seq)\n    next(seq)\n    return next(seq)",
          "    seq = iter(seq)\n    return next(seq)")
    runs.append(("toolz-1.1.0-regressed", regressed, ["toolz"], {},
                 "toolz.itertoolz.second returns the first element instead of the second"))
    runs.append(("toolz-1.1.0-regressed-x", regressed, ["toolz", "-x"], {},
                 "same source as toolz-1.1.0-regressed, run with -x (stops at the first failure)"))
    runs.append(("toolz-1.1.0-regressed-reruns", regressed, ["toolz", "--reruns", "1"], {},
                 "same source as toolz-1.1.0-regressed, run with pytest-rerunfailures --reruns 1"))
    broken = copy("toolz-1.1.0", "toolz-import-error")
    (broken / "toolz/tests/test_frequencies_v2.py").write_text(BROKEN_IMPORT, encoding="utf-8")
    runs.append(("toolz-1.1.0-import-error", broken, ["toolz"], {},
                 "new test module toolz/tests/test_frequencies_v2.py imports a name that does not exist"))
    runs.append(("toolz-1.1.0-import-error-continue", broken, ["toolz", "--continue-on-collection-errors"], {},
                 "same source as toolz-1.1.0-import-error, run with --continue-on-collection-errors"))
    runs.append(("toolz-1.1.0-regressed-maxfail", regressed, ["toolz", "--maxfail=2"], {},
                 "same source as toolz-1.1.0-regressed, run with --maxfail=2"))
    flaky = copy("toolz-1.1.0", "toolz-flaky")
    (flaky / "toolz/tests/test_flaky.py").write_text(FLAKY, encoding="utf-8")
    marker = scratch / "flaky-marker"
    marker.unlink(missing_ok=True)
    runs.append(("toolz-1.1.0-flaky-reruns", flaky, ["toolz", "--reruns", "2"],
                 {"CORPUS_FLAKY_MARKER": str(marker)},
                 "test module toolz/tests/test_flaky.py: one test fails on its first attempt and passes on rerun"))
    outcomes = copy("toolz-1.1.0", "toolz-outcomes")
    (outcomes / "toolz/tests/test_outcomes.py").write_text(OUTCOMES, encoding="utf-8")
    runs.append(("toolz-1.1.0-outcomes", outcomes, ["toolz/tests/test_outcomes.py", "toolz/tests/test_itertoolz.py"],
                 {}, "authored module test_outcomes.py: xfail (strict and not), skip, ids with ::, space, unicode "
                     "and brackets, a class, subtests with one failing; beside toolz's own test_itertoolz.py"))

    runs.append(("toolz-1.1.0-repeat", dirs["toolz-1.1.0"], ["toolz/tests/test_itertoolz.py", "--count", "2"], {},
                 "pytest-repeat --count 2 over toolz/tests/test_itertoolz.py (pytest-repeat skips unittest classes, "
                 "so not more-itertools)"))
    for v in PROJECTS["more-itertools"]:
        runs.append((f"more-itertools-{v}", dirs[f"more-itertools-{v}"], ["tests"], {}, "none"))
    sub = copy("more-itertools-11.2.1", "more-itertools-subtest-failure")
    patch(sub / "tests/test_recipes.py", "(4, [('A', 'B', 'C', 'D'), ('E', 'F', None, None)]),",
          "(4, [('A', 'B', 'C', 'D'), ('E', 'F', 'G', None)]),")
    runs.append(("more-itertools-11.2.1-subtest-failure", sub, ["tests"], {},
                 "GrouperTests.test_basic: the expected value of the n=4 subTest is wrong, so one subtest fails"))

    for v in PROJECTS["python-dateutil"]:
        d = dirs[f"python-dateutil-{v}"]
        runs.append((f"python-dateutil-{v}", d, ["tests"], {"PYTHONPATH": str(d / "src")}, "none"))
    d4 = dirs["python-dateutil-4.0.0"]
    runs.append(("python-dateutil-4.0.0-xdist", d4, ["tests", "-n", "4"], {"PYTHONPATH": str(d4 / "src")},
                 "pytest-xdist -n 4"))
    dreg = copy("python-dateutil-4.0.0", "python-dateutil-regressed")
    patch(dreg / "src/dateutil/easter.py", "    if not (1 <= method <= 3):",
          "    method = 3 if method == 1 else method\n    if not (1 <= method <= 3):")
    runs.append(("python-dateutil-4.0.0-regressed", dreg, ["tests"], {"PYTHONPATH": str(dreg / "src")},
                 "dateutil.easter.easter computes the Western date when asked for the Julian one (method 1)"))

    only = set(sys.argv[2:])
    for name, cwd, args, extra_env, injected in runs:
        if only and name not in only:
            continue
        report = scratch / "out" / f"{name}.json"
        junit = scratch / "out" / f"{name}.junit.xml"
        report.parent.mkdir(exist_ok=True)
        command = [python, "-m", "pytest", *args, "-p", "no:cacheprovider", "-q", "--json-report",
                   f"--json-report-file={report}", *OMIT, f"--junitxml={junit}"]
        env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTEST", "PYTHON"))}
        env.update(extra_env, PYTHONHASHSEED="0", HYPOTHESIS_PROFILE="default")
        print("+", name, flush=True)
        done = subprocess.run(command, cwd=cwd, env=env, capture_output=True, text=True, check=False)
        lines = [line for line in done.stdout.splitlines() if line.strip()]
        meta = {"file": f"{name}.json.gz", "junit": f"{name}.junit.xml.gz", "project_dir": cwd.name,
                "command": "python -m pytest " + " ".join(command[3:]).replace(str(scratch), "$SCRATCH"),
                "env": {k: v.replace(str(scratch), "$SCRATCH") for k, v in extra_env.items()},
                "injected": injected, "pytest_exit_code": done.returncode, "summary_line": lines[-1] if lines else ""}
        for path, target in ((report, HERE / f"{name}.json.gz"), (junit, HERE / f"{name}.junit.xml.gz")):
            data = path.read_bytes().replace(str(scratch).encode(), b"$SCRATCH")
            target.write_bytes(gzip.compress(data, mtime=0))
        (HERE / f"{name}.meta.json").write_text(json.dumps(meta, indent=2, ensure_ascii=False) + "\n",
                                                encoding="utf-8")
        print(f"  exit {done.returncode}: {meta['summary_line']}", flush=True)
    (HERE / "tools.txt").write_text(f"python {sys.version.split()[0]}\n{versions}", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
