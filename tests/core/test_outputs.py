"""Outputs never overwrite inputs, never go through a symbolic link, and a run writes only its run folder, its
recording and `run.save_report` (evalkit.core.outputs, evalkit.run.destinations, evalkit.cli.guard)."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
from pathlib import Path

import pytest
from conftest import evalkit_cli, report, write_json

from evalkit.core.atomic import write_atomic
from evalkit.core.errors import InputError
from evalkit.core.outputs import refuse_input, same_file

PROJECT_ROOT = Path(__file__).resolve().parents[2]  # this repository: the examples project
BASELINE = PROJECT_ROOT / "suites/issue_triage/runs/baseline.json"


def digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def project_digests() -> dict[str, str]:
    """Every file of the project's inputs: conf/, suites/, recordings/ (caches aside)."""
    return {str(p.relative_to(PROJECT_ROOT)): digest(p) for top in ("conf", "suites", "recordings")
            for p in sorted((PROJECT_ROOT / top).rglob("*"))
            if p.is_file() and "__pycache__" not in p.parts and ".pytest_cache" not in p.parts}


def refused(done, *expected: str) -> None:  # type: ignore[no-untyped-def]
    """One line on stderr, exit 3, no traceback, and the line says what was expected."""
    assert done.returncode == 3, done.stdout + done.stderr
    lines = done.stderr.splitlines()
    assert len(lines) == 1 and "Traceback" not in done.stderr, done.stderr
    for text in expected:
        assert text in lines[0], lines[0]


# --- the rule itself -----------------------------------------------------------------------------------------

def test_same_file_sees_through_symbolic_and_hard_links(tmp_path: Path) -> None:
    original = write_json(tmp_path / "a.json", {})
    (tmp_path / "soft.json").symlink_to(original)
    os.link(original, tmp_path / "hard.json")
    assert same_file(tmp_path / "soft.json", original)
    assert same_file(tmp_path / "hard.json", original)
    assert same_file(tmp_path / "sub" / ".." / "a.json", original)
    assert not same_file(tmp_path / "other.json", original)
    assert not same_file(tmp_path / "missing.json", tmp_path / "missing-too.json")


def test_refuse_input_names_the_input(tmp_path: Path) -> None:
    given = write_json(tmp_path / "c.json", {})
    with pytest.raises(InputError, match=r"it is the candidate report .* never overwrites its inputs"):
        refuse_input(tmp_path / "c.json", {"the candidate report": given}, "decision")


def test_write_atomic_refuses_a_symbolic_link_and_leaves_both_ends_alone(tmp_path: Path) -> None:
    target = tmp_path / "elsewhere.txt"
    target.write_text("precious\n")
    link = tmp_path / "out.json"
    link.symlink_to(target)
    with pytest.raises(InputError, match="is a symbolic link"):
        write_atomic(link, "{}\n")
    assert target.read_text() == "precious\n" and link.is_symlink()
    dangling = tmp_path / "dangling.json"
    dangling.symlink_to(tmp_path / "not-yet.txt")
    with pytest.raises(InputError, match="is a symbolic link"):
        write_atomic(dangling, "{}\n")
    assert not (tmp_path / "not-yet.txt").exists()


# --- evalkit gate ------------------------------------------------------------------------------------

@pytest.fixture
def reports(tmp_path: Path) -> tuple[Path, Path]:
    base = write_json(tmp_path / "B.json", report({"test_a": "passed"}))
    cand = write_json(tmp_path / "C.json", report({"test_a": "passed"}))
    return base, cand


@pytest.mark.parametrize("flag", ["--out", "--markdown"])
@pytest.mark.parametrize("which, how", [("candidate", "same"), ("baseline", "same"), ("candidate", "symlink"),
                                        ("candidate", "hardlink"), ("baseline", "dotted")])
def test_gate_never_writes_over_its_reports(reports: tuple[Path, Path], tmp_path: Path, flag: str, which: str,
                                            how: str) -> None:
    base, cand = reports
    victim = cand if which == "candidate" else base
    before = {p: digest(p) for p in (base, cand)}
    out = {"same": victim, "dotted": tmp_path / "." / "sub" / ".." / victim.name}.get(how, tmp_path / "alias.json")
    if how == "dotted":
        (tmp_path / "sub").mkdir()
    if how == "symlink":
        out.symlink_to(victim)
    if how == "hardlink":
        os.link(victim, out)
    done = evalkit_cli("evalkit.cli.main", "gate", str(base), str(cand), flag, str(out))
    refused(done, f"it is the {which} report", "never overwrites its inputs")
    assert {p: digest(p) for p in (base, cand)} == before


def test_gate_never_writes_over_its_policy_file(reports: tuple[Path, Path], tmp_path: Path) -> None:
    base, cand = reports
    policy = tmp_path / "p.yaml"
    policy.write_text("name: p\nmax_regressions: 0\n")
    done = evalkit_cli("evalkit.cli.main", "gate", str(base), str(cand), "--policy", str(policy), "--markdown", str(policy))
    refused(done, "it is the policy file")
    assert policy.read_text() == "name: p\nmax_regressions: 0\n"


def test_gate_refuses_one_file_for_both_outputs(reports: tuple[Path, Path], tmp_path: Path) -> None:
    base, cand = reports
    out = tmp_path / "d.out"
    refused(evalkit_cli("evalkit.cli.main", "gate", str(base), str(cand), "--out", str(out), "--markdown", str(out)),
            "--out and --markdown name the same file")
    assert not out.exists()


def test_gate_refuses_an_output_that_is_a_symbolic_link(reports: tuple[Path, Path], tmp_path: Path) -> None:
    base, cand = reports
    target = tmp_path / "elsewhere.txt"
    target.write_text("keep\n")
    (tmp_path / "d.json").symlink_to(target)
    refused(evalkit_cli("evalkit.cli.main", "gate", str(base), str(cand), "--out", str(tmp_path / "d.json")),
            "is a symbolic link")
    assert target.read_text() == "keep\n"


# --- evalkit review ----------------------------------------------------------------------------------

def test_review_never_writes_over_its_decisions_file(tmp_path: Path) -> None:
    rep = write_json(tmp_path / "R.json", report({"test_a": "passed"}))
    decisions = write_json(tmp_path / "D.json", {"report_sha256": digest(rep), "decisions": []})
    before = decisions.read_bytes()
    done = evalkit_cli("evalkit.cli.main", "review", "--report", str(rep), "--decisions", str(decisions), "--out",
                       str(decisions))
    assert done.returncode == 3 and len(done.stderr.splitlines()) == 1, done.stderr
    assert "it is the decisions file (--decisions)" in done.stderr
    assert decisions.read_bytes() == before


# --- evalkit bless -----------------------------------------------------------------------------------

@pytest.fixture
def blessable(tmp_path: Path) -> Path:
    data = json.loads(BASELINE.read_text())
    return write_json(tmp_path / "report.json", data)


@pytest.mark.parametrize("target, expected", [
    ("conf/policy/evil.json", "lies in the config folder"),
    ("conf/config.yaml", "a saved run report is JSON"),
    ("suites/issue_triage/datasets/v1.json", "not a run report"),
    ("recordings/issue_triage/gemma4-e2b-v1-issue-triage@1-703b2054.json", "not a run report"),
    ("suites/issue_triage", "a saved run report is JSON"),
])
def test_bless_replaces_only_a_run_report(blessable: Path, target: str, expected: str) -> None:
    before = project_digests()
    refused(evalkit_cli("evalkit.cli.main", "bless", str(blessable), "--to", target), expected)
    assert project_digests() == before
    assert not (PROJECT_ROOT / "conf/policy/evil.json").exists()


def test_bless_never_writes_over_the_report_it_blesses(blessable: Path) -> None:
    before = digest(blessable)
    refused(evalkit_cli("evalkit.cli.main", "bless", str(blessable), "--to", str(blessable)), "it is the report being blessed")
    assert digest(blessable) == before


# --- evalkit calibrate --------------------------------------------------------------------------------

def test_calibrate_never_writes_over_a_file_of_its_suite() -> None:
    before = project_digests()
    done = evalkit_cli("evalkit.cli.main", "calibrate", "suite=quality_lab", "--out", "suites/quality_lab/graders.py")
    assert done.returncode == 3 and "a file of the suite" in done.stderr, done.stderr
    assert project_digests() == before


# --- python -m evalkit: run.save_report and the run folder ------------------------------------------------------

@pytest.mark.slow
@pytest.mark.parametrize("overrides, expected", [
    # the findings: the config, and the very baseline the run is gated against (it exits 1, BLOCK)
    (["run.save_report=conf/config.yaml"], "a saved run report is JSON"),
    (["model=gemma4", f"run.save_report={BASELINE.relative_to(PROJECT_ROOT)}"],
     "it is the baseline this run is gated against"),
    (["model=gemma4", f"baseline={BASELINE}", f"run.save_report={BASELINE}"],
     "it is the baseline this run is gated against"),
    (["baseline=none", "run.save_report=conf/new.json"], "lies in the config folder"),
    (["baseline=none", "run.save_report=suites/issue_triage/datasets/v1.json"], "not a run report"),
    (["baseline=none", "run.save_report=recordings/issue_triage/gemini-3.8-flash-v1-issue-triage@1-85d32d9a.json"],
     "not a run report"),
    (["baseline=none", f"run.out={PROJECT_ROOT}"], "the run folder is the project root"),
    (["baseline=none", f"run.out={PROJECT_ROOT / 'suites/issue_triage'}"], "the run folder lies in"),
    (["baseline=none", f"run.out={PROJECT_ROOT / 'conf'}"], "the run folder lies in the config folder"),
    (["baseline=none", "run.out=recordings/x"], "the run folder lies in"),
])
def test_a_run_writes_only_its_folder_its_recording_and_a_saved_report(run_evalkit, overrides: list[str],
                                                                       expected: str) -> None:
    before = project_digests()
    root_files = sorted(p.name for p in PROJECT_ROOT.iterdir())
    done = run_evalkit(*overrides)
    refused(done, expected)
    assert project_digests() == before
    assert sorted(p.name for p in PROJECT_ROOT.iterdir()) == root_files  # no pytest.ini, report.json at the top
    assert not (PROJECT_ROOT / "conf/new.json").exists()


@pytest.mark.slow
def test_save_report_refuses_a_symbolic_link(run_evalkit, tmp_path: Path) -> None:
    target = tmp_path / "elsewhere.json"
    shutil.copyfile(BASELINE, target)
    before = digest(target)
    (tmp_path / "saved.json").symlink_to(target)
    refused(run_evalkit("baseline=none", f"run.save_report={tmp_path / 'saved.json'}"), "is a symbolic link")
    assert digest(target) == before


@pytest.mark.slow
def test_save_report_may_replace_a_run_report_that_is_not_gated(run_evalkit, tmp_path: Path) -> None:
    saved = tmp_path / "saved.json"
    shutil.copyfile(BASELINE, saved)
    done = run_evalkit("baseline=none", f"run.save_report={saved}")
    assert done.returncode == 0, done.stderr
    assert saved.read_bytes() == BASELINE.read_bytes()  # regenerating an unchanged baseline changes no byte


@pytest.mark.slow
def test_a_symbolic_link_in_the_run_folder_is_never_followed(run_evalkit, tmp_path: Path) -> None:
    job = tmp_path / "job"
    job.mkdir()
    target = tmp_path / "elsewhere.txt"
    target.write_text("keep\n")
    (job / "pytest.log").symlink_to(target)
    done = run_evalkit("baseline=none")
    refused(done, "pytest.log", "is a symbolic link")
    assert target.read_text() == "keep\n"


def test_gate_writes_its_json_and_xml_all_or_nothing_on_a_full_disk(reports: tuple[Path, Path], tmp_path: Path,
                                                                     monkeypatch: pytest.MonkeyPatch,
                                                                     capsys: pytest.CaptureFixture[str]) -> None:
    import errno

    from evalkit.cli import gate as gate_cli

    synced: list[int] = []
    real_fsync = os.fsync

    def fsync(fd: int) -> None:  # the disk fills up while the second file of the pair is written
        synced.append(fd)
        if len(synced) == 2:
            raise OSError(errno.ENOSPC, "No space left on device")
        real_fsync(fd)

    monkeypatch.setattr(os, "fsync", fsync)
    out = tmp_path / "d.json"
    code = gate_cli.main([str(reports[0]), str(reports[1]), "--out", str(out)])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 3 and len(err) == 1, err
    assert str(tmp_path / "d.xml") in err[0] and "nothing of the set was written" in err[0]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["B.json", "C.json"]  # no d.json, no temp file
