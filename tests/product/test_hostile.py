"""A corpus of hostile and broken inputs, generated: every command and every file kind evalkit reads.

Each input must be refused in one line that names the file, with exit code 3 (never 0, 1 or 2, never a
traceback), must not hang (FIFOs) or eat memory (/dev/zero, multi-GB sparse files), must leave every input byte
as it was and write nothing outside the run's own folder. The commands run in-process (their `main` functions,
`python -m evalkit` through Hydra in-process too), so the corpus of several hundred inputs takes seconds.
"""

from __future__ import annotations

import hashlib
import json
import os
import signal
import subprocess
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from evalkit.cli import adapt as adapt_cli
from evalkit.cli import bless as bless_cli
from evalkit.cli import calibrate as calibrate_cli
from evalkit.cli import gate as gate_cli
from evalkit.cli import new as new_cli
from evalkit.cli import review as review_cli
from evalkit.cli import run as run_cli
from evalkit.core.errors import InputError
from evalkit.run.journal import read_journal

PROJECT_ROOT = Path(__file__).resolve().parents[2]
HUGE = 3 * 1024**3  # a sparse file: no disk used, over the 1 GiB input limit
HANG_S = 20

# ---------------------------------------------------------------------------------------------- valid inputs

REPORT = {"eval": {"suite": "s", "model": "m"}, "tests": [{"nodeid": "t.py::test_a", "outcome": "passed"}],
          "cases": [{"id": "a", "grade": {"task_pass": True, "review_pending": True}}]}
DECISIONS = {"report_sha256": "0" * 64, "decisions": [{"sample_id": "a", "decision": "accept", "reviewer": "r",
                                                        "rationale": "x"}]}
LABELS = "\n".join(json.dumps(line) for line in (
    {"format": "evalkit-labels/1", "report_sha256": hashlib.sha256(json.dumps(REPORT).encode()).hexdigest(),
     "reviewer": "r", "tool": "evalkit", "tool_version": "0"},
    {"case_id": "a", "check_id": "test_a", "label": "pass", "note": "", "time": "2026-12-03T12:00:00Z"})).encode() + b"\n"
DATASET = {"name": "d", "version": 1, "cases": [{"id": "a", "issue": "x"}]}
RECORDING = {"format": "evalkit-recording/2", "key": {}, "calls": {}}
POLICY = {"max_regressions": 0, "paired": {"seed": 1}}
DOCS_STAGE = (PROJECT_ROOT / "suites/docs_stages/fixtures/gemma4-e2b.json").read_bytes()
_SHIPPED_REC = json.loads((PROJECT_ROOT / "recordings/issue_triage/gemini-3.8-flash-v1-issue-triage@1-85d32d9a.json")
                          .read_text(encoding="utf-8"))
_CALL, _ENTRY = next(iter(_SHIPPED_REC["calls"].items()))
JOURNAL_LINE = json.dumps({"call_id": _CALL, "entry": _ENTRY}).encode()
RECORDING_NAME = "issue_triage/gemini-3.8-flash-v1-issue-triage@1-85d32d9a.json"  # the default run's recording file


def _dumps(value: object) -> bytes:
    return json.dumps(value).encode()


# ------------------------------------------------------------------------------------------- the variants
# A variant makes the hostile thing at `path` (given the valid bytes of that kind); all live in the input folder.

Maker = Callable[[Path, bytes], None]


def _write(data: bytes) -> Maker:
    return lambda path, valid: path.write_bytes(data)


def _derived(change: Callable[[bytes], bytes]) -> Maker:
    return lambda path, valid: path.write_bytes(change(valid))


def _fifo(path: Path, valid: bytes) -> None:
    os.mkfifo(path)


def _folder(path: Path, valid: bytes) -> None:
    path.mkdir()
    (path / "inside.json").write_bytes(valid)


def _huge(path: Path, valid: bytes) -> None:
    with path.open("wb") as handle:
        handle.write(valid)
        handle.truncate(HUGE)


def _link_to(target: str) -> Maker:
    return lambda path, valid: path.symlink_to(target)


def _link_to_fifo(path: Path, valid: bytes) -> None:
    fifo = path.with_name(path.name + ".fifo-target")
    os.mkfifo(fifo)
    path.symlink_to(fifo)


def _nested_dict(depth: int) -> bytes:
    return b'{"a": ' * depth + b"1" + b"}" * depth


def _with_key(valid: bytes, extra: bytes) -> bytes:
    """`valid` (an object) with `extra` added as its first members."""
    return b"{" + extra + b", " + valid.strip()[1:]


JSON_VARIANTS: dict[str, Maker] = {
    "truncated": _derived(lambda v: v[: len(v) // 2]),
    "empty": _write(b""),
    "whitespace": _write(b"   \n\n"),
    "deep-list": _write(b"[" * 100_000 + b"]" * 100_000),
    "deep-object": _write(_nested_dict(50_000)),
    "nested-150": _derived(lambda v: _with_key(v, b'"zz": ' + _nested_dict(150))),
    "huge-sparse": _huge,
    "top-list": _write(b"[]"),
    "top-number": _write(b"5"),
    "top-string": _write(b'"report"'),
    "top-null": _write(b"null"),
    "top-true": _write(b"true"),
    "nan": _derived(lambda v: _with_key(v, b'"zz": NaN')),
    "infinity": _derived(lambda v: _with_key(v, b'"zz": Infinity')),
    "minus-infinity": _derived(lambda v: _with_key(v, b'"zz": [-Infinity]')),
    "overflow-float": _derived(lambda v: _with_key(v, b'"zz": 1e999')),
    "huge-int": _derived(lambda v: _with_key(v, b'"zz": 1' + b"0" * 5000)),
    "duplicate-key": _derived(lambda v: _with_key(v, b'"zz": 1, "zz": 2')),
    "duplicate-nested": _derived(lambda v: _with_key(v, b'"zz": {"b": [1, {"c": 1, "c": 1}]}')),
    "bom": _derived(lambda v: b"\xef\xbb\xbf" + v),
    "latin-1": _derived(lambda v: _with_key(v, '"zz": "Gr\u00fc\u00dfe"'.encode("latin-1"))),
    "nul-bytes": _write(b"\x00" * 64),
    "binary": _write(bytes(range(256)) * 4),
    "not-json": _write(b"this is not json at all\n"),
    "fifo": _fifo,
    "folder": _folder,
    "dev-zero": _link_to("/dev/zero"),
    "dev-null": _link_to("/dev/null"),
    "symlink-to-fifo": _link_to_fifo,
    "symlink-to-root": _link_to("/"),
    "dangling-symlink": _link_to("/nonexistent/evalkit-hostile"),
    "missing": lambda path, valid: None,
}

def _report_with(**changes: object) -> Maker:
    return _write(_dumps({**REPORT, **changes}))


# what only a run report can get wrong: its fields of the wrong type
REPORT_VARIANTS: dict[str, Maker] = {
    **JSON_VARIANTS,
    "cases-number": _report_with(cases=5),
    "case-not-object": _report_with(cases=[5, "x"]),
    "case-without-id": _report_with(cases=[{"grade": {}}]),
    "grade-not-object": _report_with(cases=[{"id": "a", "grade": [True]}]),
    "grade-flag-string": _report_with(cases=[{"id": "a", "grade": {"task_pass": "yes"}}]),
    "test-id-of-5-mb": _report_with(tests=[{"nodeid": "t.py::test_" + "x" * 5_000_000, "outcome": "passed"}]),
    "grade-scored-without-task-pass": _report_with(cases=[{"id": "a", "grade": {"status": "scored",
                                                                               "quality_pass": True}}]),
    "provenance-list": _report_with(provenance=["recordings/x.json"]),
    "execution-string": _report_with(execution="fast"),
    "tests-object": _report_with(tests={"a": "passed"}),
    "test-without-outcome": _report_with(tests=[{"nodeid": "t.py::a"}]),
    "metric-string": _report_with(metrics={"pass_rate": "high"}),
    "eval-list": _report_with(eval=[]),
    "exitcode-string": _report_with(exitcode="0"),
}

YAML_VARIANTS: dict[str, Maker] = {
    "truncated": _write(b"max_regressions: [1, 2\n"),
    "deep-flow": _write(b"a: " + b"[" * 20_000 + b"]" * 20_000 + b"\n"),
    "nested-150": _write(b"a: " + b"{b: " * 150 + b"1" + b"}" * 150 + b"\n"),
    "huge-sparse": _huge,
    "top-list": _write(b"- 1\n- 2\n"),
    "top-scalar": _write(b"just a string\n"),
    "nan": _write(b"max_regressions: 0\nmin_pass_rate: .nan\n"),
    "infinity": _write(b"max_regressions: 0\nmin_pass_rate: .inf\n"),
    "huge-int": _write(b"max_regressions: 1" + b"0" * 5000 + b"\n"),
    "duplicate-key": _write(b"max_regressions: 0\nmax_regressions: 5\n"),
    "duplicate-nested": _write(b"paired:\n  seed: 1\n  seed: 2\n"),
    "bom": _derived(lambda v: b"\xef\xbb\xbf" + v),
    "latin-1": _write("name: Gr\u00fc\u00dfe\n".encode("latin-1")),
    "python-tag": _write(b"name: !!python/object/apply:os.system ['true']\n"),
    "billion-laughs": _write(b"a: &a [x, x, x, x, x, x, x, x, x]\n" + b"".join(
        f"{chr(98 + i)}: &{chr(98 + i)} [{', '.join(['*' + chr(97 + i)] * 9)}]\n".encode() for i in range(9))),
    "self-alias": _write(b"a: &a [*a]\n"),
    "tab-indent": _write(b"paired:\n\tseed: 1\n"),
    "nul-bytes": _write(b"\x00" * 64),
    "fifo": _fifo,
    "folder": _folder,
    "dev-zero": _link_to("/dev/zero"),
    "symlink-to-fifo": _link_to_fifo,
    "dangling-symlink": _link_to("/nonexistent/evalkit-hostile"),
}

TEXT_VARIANTS: dict[str, Maker] = {name: JSON_VARIANTS[name] for name in (
    "huge-sparse", "bom", "binary", "fifo", "folder", "dev-zero", "dev-null", "symlink-to-fifo", "symlink-to-root",
    "dangling-symlink", "missing")}
TEXT_VARIANTS["latin-1"] = _write("Gr\u00fc\u00dfe \xff".encode("latin-1"))


# --------------------------------------------------------------------------------- the commands, per kind

@dataclass(frozen=True)
class Kind:
    """One file kind read by one command: its valid bytes, its file name, and how to run the command on it."""

    name: str
    valid: bytes
    file: str
    run: Callable[[Path, Path, Path], int]
    """(hostile file, input folder, run folder) -> exit code."""
    variants: dict[str, Maker]


def _good_report(inputs: Path) -> Path:
    path = inputs / "good-report.json"
    path.write_bytes(_dumps(REPORT))
    return path


def _hydra(*overrides: str, out: Path) -> int:
    argv = ["evalkit", *overrides, f"hydra.run.dir={out}/hydra", f"run.out={out}/run"]
    saved = sys.argv
    sys.argv = argv
    try:
        return run_cli.main()
    finally:
        sys.argv = saved


def _journal(path: Path, inputs: Path, out: Path) -> int:
    """The journal has no command of its own (a live run reads it on resume): its reader must refuse in one line."""
    try:
        read_journal(path)
    except InputError as error:
        print(f"error: {error}", file=sys.stderr)
        return 3
    return 0


def _journal_variants() -> dict[str, Maker]:
    # a journal's last line may be torn (the process died mid-write): a bad line counts only before a good one
    out: dict[str, Maker] = {}
    for name, maker in JSON_VARIANTS.items():
        if name in ("missing", "empty", "whitespace"):
            continue  # no journal, or nothing in it: nothing to resume, by design

        def line_first(path: Path, valid: bytes, maker: Maker = maker) -> None:
            maker(path, valid)
            if path.is_file() and not path.is_symlink() and path.stat().st_size < 1_000_000:
                path.write_bytes(path.read_bytes().replace(b"\n", b" ") + b"\n" + JOURNAL_LINE + b"\n")
        out[name] = line_first
    return out


KINDS = [
    Kind("gate-baseline", _dumps(REPORT), "baseline.json",
         lambda f, i, o: gate_cli.main([str(f), str(_good_report(i)), "--out", str(o / "d.json")]), REPORT_VARIANTS),
    Kind("gate-candidate", _dumps(REPORT), "candidate.json",
         lambda f, i, o: gate_cli.main([str(_good_report(i)), str(f)]), REPORT_VARIANTS),
    Kind("gate-policy-json", _dumps(POLICY), "policy.json",
         lambda f, i, o: gate_cli.main([str(_good_report(i)), str(_good_report(i)), "--policy", str(f)]),
         JSON_VARIANTS),
    Kind("gate-policy-yaml", b"max_regressions: 0\n", "policy.yaml",
         lambda f, i, o: gate_cli.main([str(_good_report(i)), str(_good_report(i)), "--policy", str(f)]),
         YAML_VARIANTS),
    Kind("review-report", _dumps(REPORT), "report.json",
         lambda f, i, o: review_cli.main(["--report", str(f), "--decisions", str(_decisions(i)),
                                          "--out", str(o / "r.json")]), JSON_VARIANTS),
    Kind("review-decisions", _dumps(DECISIONS), "decisions.json",
         lambda f, i, o: review_cli.main(["--report", str(_good_report(i)), "--decisions", str(f),
                                          "--out", str(o / "r.json")]), JSON_VARIANTS),
    Kind("review-labels", LABELS, "labels.jsonl",
         lambda f, i, o: review_cli.main(["--report", str(_good_report(i)), "--labels", str(f),
                                          "--out", str(o / "r.json")]), JSON_VARIANTS),
    Kind("calibrate-labels", LABELS, "labels.jsonl",
         lambda f, i, o: calibrate_cli.main(["suite=quality_lab", "--report", str(_good_report(i)), "--labels",
                                             str(f)]), JSON_VARIANTS),
    Kind("adapt-baseline", DOCS_STAGE, "stage-a.json",
         lambda f, i, o: adapt_cli.main(["docs-stage", str(f), str(_stage(i)), "--out", str(o / "a.json")]),
         JSON_VARIANTS),
    Kind("adapt-candidate", DOCS_STAGE, "stage-b.json",
         lambda f, i, o: adapt_cli.main(["docs-stage", str(_stage(i)), str(f), "--out", str(o / "a.json")]),
         JSON_VARIANTS),
    Kind("bless-report", _dumps(REPORT), "report.json",
         lambda f, i, o: bless_cli.main([str(f), "--to", str(o / "baseline.json")]), REPORT_VARIANTS),
    Kind("run-dataset", _dumps(DATASET), "dataset.json",
         lambda f, i, o: _hydra(f"dataset.file={f}", out=o), JSON_VARIANTS),
    Kind("run-baseline", _dumps(REPORT), "baseline.json",
         lambda f, i, o: _hydra(f"baseline={f}", out=o), REPORT_VARIANTS),
    Kind("run-recording", _dumps(RECORDING), RECORDING_NAME,
         lambda f, i, o: _hydra(f"run.recordings={i}", out=o), JSON_VARIANTS),
    Kind("run-manifest", _dumps({"version": "1"}), "manifest.json",
         lambda f, i, o: _hydra("suite=quality_lab", f"dataset.manifest={f}", out=o), JSON_VARIANTS),
    Kind("run-prompt", b"Triage this issue.\n", "prompt.txt",
         lambda f, i, o: _hydra(f"prompt.file={f}", out=o), TEXT_VARIANTS),
    Kind("calibrate-suite-option", b"suite:\n  path: suites/quality_lab\n", "suite.yaml",
         lambda f, i, o: calibrate_cli.main([f"suite={f}", "--out", str(o / "c.json")]), YAML_VARIANTS),
    Kind("journal", JOURNAL_LINE + b"\n", "rec.json.journal.jsonl", _journal, _journal_variants()),
]


def _decisions(inputs: Path) -> Path:
    path = inputs / "good-decisions.json"
    path.write_bytes(_dumps(DECISIONS))
    return path


def _stage(inputs: Path) -> Path:
    path = inputs / "good-stage.json"
    path.write_bytes(DOCS_STAGE)
    return path


CASES = [pytest.param(kind, variant, id=f"{kind.name}-{variant}")
         for kind in KINDS for variant in kind.variants]

# ------------------------------------------------------------------------------ command lines, not files

OVERRIDES = [
    ["--anything"], ["--cfg=nope"], ["-x"], ["--info", "bogus"], ["--info=nope"], ["model.name=\u00fc\u00ef"], ["model.name=a b"], ["model.name=${oops}"],
    ["model.name=${oc.env:EVALKIT_HOSTILE_UNSET}"], ["model.name=" + "m" * 300], ["policy.paired.seed=-1"],
    ["policy.paired.resamples=1e9"], ["+policy.paired.resamples=1000000000"], ["policy.max_regressions=-1"],
    ["policy.min_pass_rate=nan"], ["policy.min_pass_rate=inf"], ["policy.max_regressions=" + "9" * 5000],
    ["run.save_report=."], ["run.concurrency=0"], ["run.concurrency=1e20"], ["suite=../../x"], ["suite=/etc/passwd"],
    ["mode=sideways"], ["policy=nope"], ["prompt.version=" + "v" * 300], ["split=acceptance"],
    ["suite=quality_lab", "candidate.max_response_bytes=1e20"], ["suite=quality_lab", "candidate.timeout_s=-1"],
    ["budget.max_calls=-5"], ["dataset.file=/dev/zero"], ["prompt.file=/dev/zero"], ["run.recordings=/dev/null"],
    # more workers than the machine could ever run: a hang building shards, or thousands of open files
    ["run.workers=99999999999999999999"], ["run.workers=100000"],
]
CALIBRATE_ARGS = [["suite=../../x"], ["suite=../conf/suite/quality_lab"], ["suite=/etc/hostname"],
                  ["suite=nope"], ["suite=quality_lab", "--bogus"], [], ["suite=a\nb"]]
# Hydra's flags that take a value, given none (last, or before another flag): its argparse would exit 2, the
# incomparable code
VALUELESS_FLAGS = [["-p"], ["--package"], ["-cp"], ["--config-path"], ["-cn"], ["--config-name"], ["-cd"],
                   ["--config-dir"], ["--experimental-rerun"], ["-cn", "--cfg=job"]]
NEW_ARGS = [["suite", "a" * 300], ["suite", "../escape"], ["suite", "Bad Name"], ["suite", "a\nb"], ["nothing"], ["suite"], ["--bogus"]]


# ------------------------------------------------------------------------------------------------ checks

def _snapshot(folder: Path) -> dict[str, str]:
    """Every entry under `folder`: regular files by their bytes' hash, anything else by its kind (never opened)."""
    out = {}
    for path in sorted(folder.rglob("*")) if folder.is_dir() else ():
        if path.is_symlink():
            out[str(path)] = "link:" + os.readlink(path)
        elif path.is_file() and path.stat().st_size < 1_000_000:
            out[str(path)] = hashlib.sha256(path.read_bytes()).hexdigest()
        else:
            out[str(path)] = f"{'dir' if path.is_dir() else 'other'}:{path.lstat().st_size}"
    return out


@pytest.fixture(autouse=True)
def _never_hang() -> Iterator[None]:
    """A FIFO opened for reading blocks forever: fail the input instead of hanging the suite."""
    def hung(signum: int, frame: object) -> None:
        raise TimeoutError(f"the command hung for {HANG_S} s (a FIFO opened for reading?)")
    previous = signal.signal(signal.SIGALRM, hung)
    signal.alarm(HANG_S)
    yield
    signal.alarm(0)
    signal.signal(signal.SIGALRM, previous)


_TOOL_CACHES = ("__pycache__/", ".hypothesis/", ".mypy_cache/", ".ruff_cache/", ".pytest_cache/")


@pytest.fixture(scope="module", autouse=True)
def _project_untouched() -> Iterator[None]:
    """Nothing of the corpus may land in this repository."""
    def status() -> str:
        listed = subprocess.run(["git", "status", "--porcelain", "--ignored", "--untracked-files=all", "--", "."],
                                cwd=PROJECT_ROOT, capture_output=True, text=True, check=False).stdout
        # what the test processes running beside this one (pytest-xdist workers) leave in the tools' caches
        # (bytecode, Hypothesis's examples, mypy's and ruff's caches from the lint tests) is not the corpus
        return "\n".join(line for line in listed.splitlines() if not any(cache in line for cache in _TOOL_CACHES))
    before = status()
    yield
    assert status() == before


@pytest.fixture(autouse=True)
def _in_project(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(PROJECT_ROOT)
    monkeypatch.delenv("EVALKIT_PROJECT", raising=False)


def _refused_in_one_line(code: int, err: str, out: str, names: str | None, usage: bool = False) -> str:
    """Exit 3 and one line on stderr (after argparse's `usage:` lines, for a usage error: `usage`)."""
    lines = [line for line in err.splitlines() if line.strip()]
    if usage and lines and lines[0].startswith("usage:"):
        lines = [line for line in lines if not line.startswith(" ") and not line.startswith("usage:")]
    assert code == 3, f"exit code {code}, expected 3; stderr: {err[-2000:]}"
    assert "Traceback" not in err + out
    assert len(lines) == 1, f"expected one line on stderr, got {len(lines)}: {err[-2000:]}"
    line = lines[0]
    assert "error" in line
    assert len(line) <= 1100
    if names is not None:
        assert names in line, f"{names!r} not named in: {line}"
    return line


@pytest.mark.parametrize("kind, variant", CASES)
def test_a_hostile_file_is_refused_in_one_line(kind: Kind, variant: str, tmp_path: Path,
                                               capsys: pytest.CaptureFixture[str]) -> None:
    inputs, out = tmp_path / "in", tmp_path / "out"
    inputs.mkdir()
    out.mkdir()
    path = inputs / kind.file
    path.parent.mkdir(parents=True, exist_ok=True)
    kind.variants[variant](path, kind.valid)
    for make_good in (_good_report, _decisions, _stage):  # the other side of each command, valid
        make_good(inputs)
    before = _snapshot(inputs)
    code = kind.run(path, inputs, out)
    captured = capsys.readouterr()
    # the gate and the runner name the file as given; the recording by its place in the recordings folder
    _refused_in_one_line(code, captured.err, captured.out, path.name)
    assert _snapshot(inputs) == before, "an input changed"
    assert {p.name for p in tmp_path.iterdir()} == {"in", "out"}, "something was written beside the run folder"


@pytest.mark.parametrize("overrides", OVERRIDES, ids=[" ".join(o)[:40] for o in OVERRIDES])
def test_a_hostile_command_line_is_refused_in_one_line(overrides: list[str], tmp_path: Path,
                                                       capsys: pytest.CaptureFixture[str]) -> None:
    code = _hydra(*overrides, out=tmp_path)
    captured = capsys.readouterr()
    _refused_in_one_line(code, captured.err, captured.out, None)
    assert not (tmp_path / "run" / "decision.json").exists()


@pytest.mark.parametrize("argv", VALUELESS_FLAGS, ids=[" ".join(a) for a in VALUELESS_FLAGS])
def test_a_flag_without_its_value_is_refused_not_read_as_incomparable(argv: list[str], tmp_path: Path,
                                                                      monkeypatch: pytest.MonkeyPatch,
                                                                      capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setattr(sys, "argv", ["evalkit", *argv])
    code = run_cli.main()
    line = _refused_in_one_line(code, capsys.readouterr().err, "", argv[0])
    assert "takes a value" in line


@pytest.mark.parametrize("argv", CALIBRATE_ARGS, ids=[" ".join(a)[:40] or "(none)" for a in CALIBRATE_ARGS])
def test_calibrate_refuses_a_suite_outside_its_options(argv: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    try:
        code = calibrate_cli.main(argv)
    except SystemExit as done:  # argparse's own refusal (ArgumentParser exits 3)
        code = int(done.code or 0)
    captured = capsys.readouterr()
    _refused_in_one_line(code, captured.err, captured.out, None, usage=True)


@pytest.mark.parametrize("argv", NEW_ARGS, ids=[" ".join(a)[:40] for a in NEW_ARGS])
def test_new_refuses_bad_names(argv: list[str], tmp_path: Path, capsys: pytest.CaptureFixture[str],
                               monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("EVALKIT_PROJECT", str(tmp_path))
    (tmp_path / "conf").mkdir()
    (tmp_path / "conf" / "config.yaml").write_text("defaults:\n  - _self_\n", encoding="utf-8")
    before = _snapshot(tmp_path)
    try:
        code = new_cli.main(argv)
    except SystemExit as done:
        code = int(done.code or 0)
    captured = capsys.readouterr()
    _refused_in_one_line(code, captured.err, captured.out, None, usage=True)
    assert _snapshot(tmp_path) == before


def test_a_suite_path_outside_the_project_is_never_imported(tmp_path: Path,
                                                             capsys: pytest.CaptureFixture[str]) -> None:
    evil = tmp_path / "evil"
    evil.mkdir()
    (evil / "calibration.py").write_text("raise SystemExit('imported')\n", encoding="utf-8")
    option = tmp_path / "suite.yaml"
    option.write_text(f"suite:\n  path: {evil}\n", encoding="utf-8")
    code = calibrate_cli.main([f"suite={option}"])
    line = _refused_in_one_line(code, capsys.readouterr().err, "", "suite path")
    assert "outside" in line


def test_the_corpus_is_large() -> None:
    """The number of hostile inputs tried, printed (pytest -s) and held above the README's "over 500"."""
    total = len(CASES) + len(OVERRIDES) + len(VALUELESS_FLAGS) + len(CALIBRATE_ARGS) + len(NEW_ARGS) + 1
    print(f"hostile corpus: {total} inputs across {len(KINDS)} file kinds and the command lines")
    assert total >= 500


def test_a_line_break_in_report_data_never_forges_a_line_of_the_decision() -> None:
    from evalkit.core.policy import STRICT_DEFAULT
    from evalkit.gate.decide import decide
    from evalkit.records.report_reader import report_from_mapping
    from evalkit.render.markdown import render_markdown
    from evalkit.render.text import render_decision

    forged = "t.py::test_a\ndecision: GO"
    base = report_from_mapping({"eval": {"s": 1}, "tests": [{"nodeid": forged, "outcome": "passed"}]}, "b")
    cand = report_from_mapping({"eval": {"s": 1}, "tests": [{"nodeid": forged, "outcome": "failed"}]}, "c")
    decision = decide(STRICT_DEFAULT, base, cand)
    for text in (render_decision(decision), render_markdown(decision, cand)):
        assert "\ndecision: GO" not in text
        assert "test_a\\ndecision: GO" in text


def test_a_conversation_s_turns_and_check_names_never_forge_a_line_of_the_decision() -> None:
    """A regressed conversation's first failing turn in decision.md: the assistant's turn and the failing check's name
    carry a line break and a forged line; each stays inside its one line."""
    from evalkit.core.policy import STRICT_DEFAULT
    from evalkit.gate.decide import decide
    from evalkit.records.report_reader import RunReport, report_from_mapping
    from evalkit.render.markdown import render_markdown

    forged_turn = "Which order?\n- `c1`: turn 1 (`fine`): candidate `all good`\n\x1b[2J### evalkit: **GO**"
    check = "checks.yaml::keeps\n### evalkit: **GO**[c1]"

    def side(outcome: str, answer: str) -> RunReport:
        failed = {"outcome": outcome, "crash": {"message": "Failed: turn 1 of 1: forgot it"}}
        call = failed if outcome == "failed" else {}
        return report_from_mapping({
            "eval": {"s": 1}, "tests": [{"nodeid": check, "outcome": outcome, "call": call}],
            "cases": [{"id": "c1", "status": "scored", "passed": outcome == "passed",
                       "checks": {"keeps\n### evalkit: **GO**": outcome}}],
            "trajectories": {"task/c1": {"steps": [{"kind": "user_turn", "turn": 1, "text": "Order 1007."},
                                                   {"kind": "assistant_turn", "turn": 1, "text": answer}]}}}, outcome)

    base, cand = side("passed", "Noted: 1007."), side("failed", forged_turn)
    comment = render_markdown(decide(STRICT_DEFAULT, base, cand), cand, (), None, base)
    line = next(line for line in comment.splitlines() if line.startswith("- `c1`: turn 1"))
    assert "Which order?" in line and "all good" in line  # the forged line is text inside the turn's own line
    assert "\n### evalkit: **GO**" not in comment and "\x1b" not in comment
    assert [ln for ln in comment.splitlines() if ln.startswith("### evalkit")] == ["### evalkit: **BLOCK**"]
    assert sum(1 for ln in comment.splitlines() if ln.startswith("- `c1`: turn")) == 1


@pytest.mark.parametrize("recording", ["/etc/passwd", "../../../etc/passwd", "/dev/zero", "suites/../../x.json"])
def test_a_baseline_cannot_point_pairwise_judging_at_a_file_outside_the_recordings(recording: str,
                                                                                   tmp_path: Path) -> None:
    from evalkit.records.report_reader import report_from_mapping
    from evalkit.run.runner import baseline_replies

    baseline = report_from_mapping({**REPORT, "provenance": {"recording": recording}}, "b")
    assert baseline_replies(baseline, tmp_path / "recordings") == {}  # not read: reading would refuse it
