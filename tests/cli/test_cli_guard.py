"""No crash of an evalkit command reads as a decision: refusals and unwritable outputs exit 3 in one line, outages 5,
unexpected exceptions exit 4 with the traceback, and any test id prints on an ASCII terminal."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import evalkit_env, report, write_json

from evalkit.cli import adapt, calibrate, gate, review, run
from evalkit.gate.decision import ExitCode

PROJECT_ROOT = Path(__file__).resolve().parents[2]  # this repository: the examples project

UNICODE = "test_label[\u00fcn\u00efc\u00f8d\u00e9 \u2713]"


def reports(tmp_path: Path, after: str = "failed") -> tuple[Path, Path]:
    base, cand = tmp_path / "base.json", tmp_path / "cand.json"
    write_json(base, report({UNICODE: "passed", "test_label[a]": "passed"}))
    write_json(cand, report({UNICODE: after, "test_label[a]": "passed"}))
    return base, cand


def gate_cli(*args: str | Path, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "evalkit.cli.main", "gate", *map(str, args)], cwd=PROJECT_ROOT,
                          env={**evalkit_env(), **(env or {})}, capture_output=True, text=True, timeout=120)


def test_unicode_test_ids_print_on_an_ascii_stdout_and_the_decision_keeps_its_code(tmp_path):
    base, cand = reports(tmp_path)
    done = gate_cli(base, cand, "--policy", "triage", env={"PYTHONIOENCODING": "ascii"})
    assert done.returncode == ExitCode.BLOCK, done.stderr
    assert "Traceback" not in done.stderr
    assert "test_label[\\xfcn\\xefc\\xf8d\\xe9 \\u2713]" in done.stdout


def test_out_into_a_missing_folder_is_refused_in_one_line_and_creates_nothing(tmp_path):
    base, cand = reports(tmp_path)
    out = tmp_path / "no" / "such" / "decision.json"
    done = gate_cli(base, cand, "--policy", "triage", "--out", out)
    assert done.returncode == ExitCode.INPUT_ERROR
    assert done.stderr == (f"error: {out}: cannot write the decision (--out): the folder {out.parent} does not "
                           "exist; create it first or choose another path\n")
    assert not (tmp_path / "no").exists()


@pytest.mark.skipif(not Path("/proc/self").is_dir(), reason="needs /proc (Linux) for a folder nobody can write")
def test_out_where_nothing_can_be_written_exits_3_in_one_line(tmp_path):
    base, cand = reports(tmp_path)
    done = gate_cli(base, cand, "--policy", "triage", "--markdown", "/proc/self/decision.md")
    assert done.returncode == ExitCode.INPUT_ERROR
    assert done.stderr.startswith("error: /proc/self/decision.md: cannot write the decision (--markdown) (")
    assert done.stderr.count("\n") == 1


def test_out_naming_a_folder_exits_3(tmp_path):
    base, cand = reports(tmp_path)
    done = gate_cli(base, cand, "--policy", "triage", "--out", tmp_path)
    assert done.returncode == ExitCode.INPUT_ERROR and "it is a folder; name a file" in done.stderr


def test_an_outcome_that_is_a_list_is_an_input_error_not_a_block(tmp_path):
    base, _ = reports(tmp_path)
    cand = tmp_path / "list.json"
    write_json(cand, {"eval": json.loads(base.read_text())["eval"],
                      "tests": [{"nodeid": "test_triage.py::test_a", "outcome": ["passed", "failed"]}]})
    done = gate_cli(base, cand, "--policy", "triage")
    assert done.returncode == ExitCode.INPUT_ERROR
    assert done.stderr.startswith(f"error: {cand}: tests[0] (test_triage.py::test_a) has outcome ['passed', 'failed']")


def boom(*args: object, **kwargs: object) -> None:
    raise RuntimeError("planted bug")


@pytest.mark.parametrize("module, target, argv", [
    (gate, "decide", ["BASE", "CAND", "--policy", "triage"]),
    (review, "apply_review", ["--report", "BASE", "--decisions", "CAND", "--out", "OUT"]),
    (calibrate, "_suite_dir", ["suite=quality_lab"]),
    (adapt, "_docs_stage", ["docs-stage", "BASE", "CAND", "--out", "OUT"]),
])
def test_a_crash_in_any_command_exits_4_with_its_traceback(module, target, argv, tmp_path, monkeypatch, capsys):
    base, cand = reports(tmp_path, after="passed")
    argv = [{"BASE": str(base), "CAND": str(cand), "OUT": str(tmp_path / "out.json")}.get(a, a) for a in argv]
    monkeypatch.setattr(module, target, boom)
    assert module.main(argv) == ExitCode.INTERNAL_ERROR
    err = capsys.readouterr().err
    assert "Traceback" in err and "RuntimeError: planted bug" in err and "internal error (exit code 4)" in err


def test_a_crash_outside_a_run_of_python_m_evalkit_exits_4(monkeypatch, capsys):
    import hydra
    monkeypatch.setattr(hydra, "main", boom)
    monkeypatch.setattr(sys, "argv", ["evalkit"])  # not pytest's own flags: they are refused before Hydra
    assert run.main() == ExitCode.INTERNAL_ERROR
    assert "RuntimeError: planted bug" in capsys.readouterr().err


def outage(*args: object, **kwargs: object) -> None:
    from evalkit.core.errors import OutageError
    raise OutageError("judge at http://127.0.0.1:9/v1: connection refused after 3 tries")


@pytest.mark.parametrize("module, target, argv", [
    (gate, "decide", ["BASE", "CAND", "--policy", "triage"]),
    (calibrate, "_suite_dir", ["suite=quality_lab"]),
])
def test_an_outage_in_any_command_exits_5_in_one_line_never_as_an_input_error(module, target, argv, tmp_path,
                                                                              monkeypatch, capsys):
    base, cand = reports(tmp_path, after="passed")
    argv = [{"BASE": str(base), "CAND": str(cand)}.get(a, a) for a in argv]
    monkeypatch.setattr(module, target, outage)
    assert module.main(argv) == ExitCode.OUTAGE
    err = capsys.readouterr().err
    assert err.startswith("outage: judge at http://127.0.0.1:9/v1: connection refused") and err.count("\n") == 1
