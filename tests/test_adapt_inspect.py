"""The Inspect source: real logs made by inspect-ai 0.3.285 (tests/corpus/adapt/inspect/, see its README) read
without inspect-ai, gated through the real command; bad inputs derived from those logs in the tests; the logs
regenerated with the real tool where it is installed."""

from __future__ import annotations

import importlib.util
import io
import json
import os
import subprocess
import sys
import zipfile
from pathlib import Path
from typing import Any

import pytest
from conftest import evalkit_cli

from evalkit.adapt.framework import gate_runs
from evalkit.adapt.inspect import FORMAT_VERSION, _member, read_inspect_log
from evalkit.core.errors import InputError
from evalkit.core.policy import STRICT_DEFAULT
from evalkit.gate.decision import Verdict

PROJECT_ROOT = Path(__file__).resolve().parents[1]  # this repository: the examples project
LOGS = PROJECT_ROOT / "tests/corpus/adapt/inspect"


def gate(baseline: Path, candidate: Path) -> Any:
    return gate_runs(STRICT_DEFAULT, read_inspect_log(baseline), read_inspect_log(candidate),
                     baseline_where=str(baseline), candidate_where=str(candidate))


def as_json_log(path: Path) -> dict[str, Any]:
    """A .eval log as one EvalLog object (its header with the summaries as samples): the `.json` layout."""
    data = path.read_bytes()
    archive = zipfile.ZipFile(io.BytesIO(data))
    header = json.loads(_member(archive, data, "header.json", str(path)))
    return {**header, "samples": json.loads(_member(archive, data, "summaries.json", str(path)))}


def refused(tmp_path: Path, log: dict[str, Any] | bytes, name: str = "bad.json") -> str:
    path = tmp_path / name
    path.write_bytes(log if isinstance(log, bytes) else json.dumps(log).encode())
    with pytest.raises(InputError) as error:
        read_inspect_log(path)
    message = str(error.value)
    assert "\n" not in message and message.startswith(str(path))
    return message


def test_a_regression_and_a_fix_between_two_real_logs() -> None:
    result = gate(LOGS / "baseline.eval", LOGS / "candidate.eval")
    assert result.decision.decision is Verdict.BLOCK
    assert result.decision.regressed == ("arith::match[q1]",)
    assert result.decision.fixed == ("arith::match[q6]",)
    assert result.decision.messages["arith::match[q1]"] == "scored \"I\" (answer 'ANSWER: 5')"
    key = result.candidate["eval"]
    assert (key["suite"], key["model"], key["judge_model"]) == ("inspect:arith", "mockllm/model", "scorer:match(); "
                                                                                               "task_version=0")
    assert result.candidate["metrics"] == {"match.accuracy": pytest.approx(5 / 6)}  # stderr left out
    assert any("fingerprint of the sample inputs" in warning for warning in result.decision.warnings)


def test_the_json_format_maps_to_the_same_tests_and_key_as_the_eval_format() -> None:
    for name in ("baseline", "candidate"):
        from_eval, from_json = read_inspect_log(LOGS / f"{name}.eval"), read_inspect_log(LOGS / f"{name}.json")
        assert from_eval.tests == from_json.tests
        assert from_eval.key.dataset_sha == from_json.key.dataset_sha
        assert from_eval.key.scorer == from_json.key.scorer
    assert gate(LOGS / "baseline.json", LOGS / "candidate.eval").decision.regressed == ("arith::match[q1]",)


@pytest.mark.parametrize(("other", "field"), [("dataset-changed.eval", "dataset: "),
                                              ("scorer-changed.eval", "scorer: ")])
def test_another_dataset_or_scorer_is_incomparable_naming_the_field(other: str, field: str) -> None:
    result = gate(LOGS / "candidate.eval", LOGS / other)
    assert result.decision.decision is Verdict.INCOMPARABLE
    assert len(result.decision.reasons) == 1 and result.decision.reasons[0].startswith(field)


def test_epochs_become_repeats_and_only_the_significant_drop_regresses() -> None:
    result = gate(LOGS / "baseline-epochs.eval", LOGS / "candidate-epochs.eval")
    tests = {test["nodeid"]: test for test in result.candidate["tests"]}
    assert len(tests) == 6  # one test per sample, not one per epoch
    assert tests["arith::match[q3]"]["repeats"] == {"passed": 2, "runs": 10}
    assert tests["arith::match[q5]"]["repeats"] == {"passed": 9, "runs": 10}
    assert result.decision.decision is Verdict.BLOCK
    assert result.decision.regressed == ("arith::match[q3]",)  # q5's 9 of 10 is within noise


def test_an_errored_sample_is_an_errored_test_listed_never_dropped() -> None:
    run = read_inspect_log(LOGS / "errored.eval")
    assert run.errored == ("q4",)
    assert {test.nodeid: test.outcome for test in run.tests}["arith::match[q4]"] == "error"
    result = gate(LOGS / "candidate.eval", LOGS / "errored.eval")
    assert result.decision.decision is Verdict.BLOCK
    assert "incomplete run: 1 unscored (q4)" in result.decision.reasons
    assert result.decision.messages["arith::match[q4]"] == "RuntimeError('mock model failure')"


def test_a_failed_run_is_refused_in_one_line(tmp_path: Path) -> None:
    message = refused(tmp_path, (LOGS / "failed.eval").read_bytes(), "failed.eval")
    assert "failed run (status 'error': RuntimeError('mock model failure'))" in message


def test_a_cancelled_run_is_refused(tmp_path: Path) -> None:
    assert "cancelled run" in refused(tmp_path, {**as_json_log(LOGS / "candidate.eval"), "status": "cancelled"})


@pytest.mark.parametrize("name", ["candidate.eval", "candidate.json"])
def test_a_truncated_log_is_refused(tmp_path: Path, name: str) -> None:
    data = (LOGS / name).read_bytes()
    message = refused(tmp_path, data[: len(data) // 2], name)
    assert "truncated" in message


def test_an_older_format_version_is_refused_naming_it(tmp_path: Path) -> None:
    message = refused(tmp_path, {**as_json_log(LOGS / "candidate.eval"), "version": 1})
    assert f"Inspect log format version 1 is older than version {FORMAT_VERSION}" in message


def test_an_older_version_inside_a_deflated_eval_zip_is_refused(tmp_path: Path) -> None:
    """Older Inspect wrote .eval members with deflate; the version is read (and refused) from header.json."""
    log = as_json_log(LOGS / "candidate.eval")
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        archive.writestr("header.json", json.dumps({**{k: v for k, v in log.items() if k != "samples"},
                                                    "version": 1}))
        archive.writestr("summaries.json", json.dumps(log["samples"]))
    assert "format version 1 is older" in refused(tmp_path, buffer.getvalue(), "old.eval")


def test_a_deflated_eval_zip_of_the_current_version_is_read(tmp_path: Path) -> None:
    log = as_json_log(LOGS / "candidate.eval")
    path = tmp_path / "deflated.eval"
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as archive:
        archive.writestr("header.json", json.dumps({k: v for k, v in log.items() if k != "samples"}))
        archive.writestr("summaries.json", json.dumps(log["samples"]))
    assert read_inspect_log(path).tests == read_inspect_log(LOGS / "candidate.eval").tests


def test_duplicate_sample_ids_are_refused(tmp_path: Path) -> None:
    log = as_json_log(LOGS / "candidate.eval")
    log["samples"].append(log["samples"][0])
    assert "duplicate sample id 'q1'" in refused(tmp_path, log)


def test_a_mix_of_epochs_is_refused(tmp_path: Path) -> None:
    log = as_json_log(LOGS / "candidate-epochs.eval")
    log["samples"] = [s for s in log["samples"] if not (s["id"] == "q2" and s["epoch"] == 10)]
    assert "a mix of epochs: sample 'q1' has 10 epoch(s), sample 'q2' 9" in refused(tmp_path, log)


def test_a_sample_without_scores_is_refused(tmp_path: Path) -> None:
    log = as_json_log(LOGS / "candidate.eval")
    log["samples"][2]["scores"] = {}
    assert "sample 'q3' (epoch 1) has no scores and no error" in refused(tmp_path, log)


def test_a_list_valued_score_is_refused(tmp_path: Path) -> None:
    log = as_json_log(LOGS / "candidate.eval")
    log["samples"][0]["scores"]["match"]["value"] = [1, 0]
    assert "a list of values has no pass or fail" in refused(tmp_path, log)


def test_a_dict_valued_score_gives_one_test_per_key(tmp_path: Path) -> None:
    log = as_json_log(LOGS / "candidate.eval")
    for sample in log["samples"]:
        sample["scores"]["match"]["value"] = {"exact": "C", "format": 0.5}
    path = tmp_path / "dict.json"
    path.write_text(json.dumps(log))
    outcomes = {test.nodeid: test.outcome for test in read_inspect_log(path).tests}
    assert outcomes["arith::match.exact[q1]"] == "passed" and outcomes["arith::match.format[q1]"] == "failed"


def test_the_command_writes_a_new_folder_and_exits_with_the_decision(tmp_path: Path) -> None:
    out = tmp_path / "result"
    policy = tmp_path / "policy.yaml"
    policy.write_text("name: inspect-release\nmax_regressions: 0\nmin_pass_rate: 0.5\n")
    done = evalkit_cli("evalkit.adapt", "inspect", str(LOGS / "baseline.eval"), str(LOGS / "candidate.eval"),
                       "--policy", str(policy), "--out", str(out))
    assert done.returncode == 1, done.stderr
    assert sorted(p.name for p in out.iterdir()) == ["baseline.json", "candidate.json", "decision.json",
                                                     "decision.md"]
    decision = json.loads((out / "decision.json").read_text())
    assert decision["decision"] == "block" and decision["regressed"] == ["arith::match[q1]"]
    assert decision["evidence"]["sources"]["candidate"]["tool"] == "inspect_ai 0.3.285"
    assert decision["evidence"]["policy"]["name"] == "inspect-release"
    assert "arith::match[q1]" in (out / "decision.md").read_text()
    again = evalkit_cli("evalkit.adapt", "inspect", str(LOGS / "baseline.eval"), str(LOGS / "candidate.eval"),
                        "--out", str(out))
    assert again.returncode == 3 and "already exists" in again.stderr


@pytest.mark.parametrize(("candidate", "code"), [("dataset-changed.eval", 2), ("failed.eval", 3),
                                                 ("baseline.json", 0)])
def test_the_command_exit_codes(candidate: str, code: int) -> None:
    done = evalkit_cli("evalkit.adapt", "inspect", str(LOGS / "baseline.eval"), str(LOGS / candidate))
    assert done.returncode == code, done.stderr
    if code == 3:
        assert len(done.stderr.strip().splitlines()) == 1


def _inspect_python() -> str | None:
    if importlib.util.find_spec("inspect_ai") is not None:
        return sys.executable
    return os.environ.get("EVALKIT_INSPECT_PYTHON") or None


@pytest.mark.slow
@pytest.mark.external
@pytest.mark.skipif(_inspect_python() is None, reason="inspect-ai is not installed here and EVALKIT_INSPECT_PYTHON "
                                                      "names no Python that has it (scripts/test.sh sets one up)")
def test_regenerated_logs_map_to_the_same_tests_and_decisions(tmp_path: Path) -> None:
    python = _inspect_python()
    assert python is not None
    subprocess.run([python, str(LOGS / "make_logs.py"), str(tmp_path)], check=True, timeout=600,
                   capture_output=True)
    for name in ("baseline.eval", "candidate.eval", "baseline.json", "candidate-epochs.eval", "errored.eval"):
        fresh, kept = read_inspect_log(tmp_path / name), read_inspect_log(LOGS / name)
        assert fresh.tests == kept.tests and fresh.key == kept.key and fresh.errored == kept.errored, name
    for baseline, candidate in (("baseline.eval", "candidate.eval"), ("candidate.eval", "dataset-changed.eval"),
                                ("candidate.eval", "scorer-changed.eval"),
                                ("baseline-epochs.eval", "candidate-epochs.eval")):
        fresh, kept = gate(tmp_path / baseline, tmp_path / candidate), gate(LOGS / baseline, LOGS / candidate)
        assert fresh.decision.to_json() == kept.decision.to_json()
    with pytest.raises(InputError, match="failed run"):
        read_inspect_log(tmp_path / "failed.eval")
