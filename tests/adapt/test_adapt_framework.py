"""The adapter framework: a neutral run mapped to a run report, runs refused as incomparable by field, errored
samples kept, repeats read as repeats, notes carried into the decision. The runs here are authored in the test
(provenance: authored), not read from a tool: each source's own tests use real tool output."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from conftest import evalkit_cli, evalkit_env
from helpers.wheel import install_offline

from evalkit.adapt.framework import ENTRY_POINT_GROUP, Source, available_sources, gate_runs, load_source
from evalkit.adapt.neutral import AdaptedTest, NeutralRun, SourceKey, fingerprint_inputs, to_run_report
from evalkit.core.errors import InputError
from evalkit.core.policy import STRICT_DEFAULT, Policy
from evalkit.gate.decide import incomparability
from evalkit.gate.decision import Verdict
from evalkit.records.report_reader import report_from_mapping

PROJECT_ROOT = Path(__file__).resolve().parents[2]  # this repository: the examples project

KEY = SourceKey(task="arith", dataset="arith.jsonl", dataset_sha="d1", dataset_sha_from="source", scorer="match",
                model="mockllm/model", prompt="Answer with a number.")


def run(outcomes: dict[str, str], *, key: SourceKey = KEY, repeats: dict[str, tuple[int, int]] | None = None,
        errored: tuple[str, ...] = (), notes: tuple[str, ...] = ()) -> NeutralRun:
    tests = tuple(AdaptedTest(f"arith::match[{sample}]", outcome, sample,  # type: ignore[arg-type]
                              repeats=(repeats or {}).get(sample), message=None if outcome == "passed" else "wrong")
                  for sample, outcome in outcomes.items())
    return NeutralRun("authored", "authored 1", key, tests, {"accuracy": 0.5}, errored, notes, {"run_id": "r"})


def test_a_neutral_run_maps_to_a_run_report_the_gate_reads() -> None:
    data = to_run_report(run({"1": "passed", "2": "failed"}), "b")
    report = report_from_mapping(data, "b")
    assert report.outcomes == {"arith::match[1]": "passed", "arith::match[2]": "failed"}
    assert report.eval["suite"] == "authored:arith" and report.eval["judge_model"] == "scorer:match"
    assert report.messages == {"arith::match[2]": "wrong"}
    assert report.metrics == {"accuracy": 0.5}
    assert data["provenance"]["dataset_fingerprint"] == "source" and data["provenance"]["run_id"] == "r"


@pytest.mark.parametrize(("outcomes", "repeats", "expected"), [
    ({"1": "passed", "2": "failed"}, None, "appears twice"),
    ({}, None, "no scored samples"),
    ({"1": "passed"}, {"1": (1, 2)}, "1 of 2 runs passed but its outcome is 'passed'"),
    ({"1": "failed"}, {"1": (2, 2)}, "2 of 2 runs passed but its outcome is 'failed'"),
])
def test_bad_neutral_runs_are_refused(outcomes: dict[str, str], repeats: dict[str, tuple[int, int]] | None,
                                      expected: str) -> None:
    neutral = run(outcomes, repeats=repeats)
    if expected == "appears twice":
        neutral = NeutralRun("authored", "t", KEY, (*neutral.tests, neutral.tests[0]))
    with pytest.raises(InputError, match=expected):
        to_run_report(neutral, "cand.eval")


def test_a_regression_blocks_and_a_fix_is_listed() -> None:
    result = gate_runs(STRICT_DEFAULT, run({"1": "passed", "2": "failed"}), run({"1": "failed", "2": "passed"}))
    assert result.decision.decision is Verdict.BLOCK
    assert result.decision.regressed == ("arith::match[1]",)
    assert result.decision.fixed == ("arith::match[2]",)


@pytest.mark.parametrize(("change", "field"), [
    ({"dataset_sha": "d2"}, "dataset: "),
    ({"scorer": "includes"}, "scorer: "),
    ({"task": "other"}, "task: "),
    ({"contract": {"num_fewshot": "5"}}, "num_fewshot: "),
])
def test_runs_differing_in_what_was_measured_are_incomparable_naming_the_field(change: dict[str, object],
                                                                               field: str) -> None:
    other = SourceKey(**{**KEY.__dict__, **change})  # type: ignore[arg-type]
    result = gate_runs(STRICT_DEFAULT, run({"1": "passed"}), run({"1": "passed"}, key=other))
    assert result.decision.decision is Verdict.INCOMPARABLE
    assert [reason.split(" ")[0] + " " for reason in result.decision.reasons] == [field]


def test_the_policy_decides_what_incomparable_means() -> None:
    other = SourceKey(**{**KEY.__dict__, "scorer": "includes"})
    result = gate_runs(Policy(on_incomparable="review"), run({"1": "passed"}), run({"1": "passed"}, key=other))
    assert result.decision.decision is Verdict.REVIEW
    assert result.decision.review_reasons[0].startswith("scorer: ")


def test_a_model_change_is_the_change_under_test_not_incomparable() -> None:
    other = SourceKey(**{**KEY.__dict__, "model": "mockllm/other"})
    result = gate_runs(STRICT_DEFAULT, run({"1": "passed"}), run({"1": "passed"}, key=other))
    assert result.decision.decision is Verdict.GO
    assert result.decision.changed["model"] == ("mockllm/model", "mockllm/other")


def test_errored_samples_are_kept_listed_and_block_the_candidate() -> None:
    result = gate_runs(STRICT_DEFAULT, run({"1": "passed", "2": "passed"}),
                       run({"1": "passed", "2": "error"}, errored=("2",)))
    assert result.decision.decision is Verdict.BLOCK
    assert any(reason.startswith("incomplete run: 1 unscored (2)") for reason in result.decision.reasons)
    assert result.decision.outcomes == {"error": 1, "passed": 1}
    assert any("1 sample(s) errored" in warning for warning in result.decision.warnings)


def test_a_dataset_fingerprinted_from_inputs_is_said_in_the_warnings() -> None:
    derived = SourceKey(**{**KEY.__dict__, "dataset_sha": fingerprint_inputs([("1", "2+2")]),
                           "dataset_sha_from": "sample inputs"})
    result = gate_runs(STRICT_DEFAULT, run({"1": "passed"}, key=derived), run({"1": "passed"}, key=derived))
    said = [warning for warning in result.decision.warnings if "fingerprint of the sample inputs" in warning]
    assert len(said) == 1 and said[0].startswith("baseline and candidate: ")


def test_the_inputs_fingerprint_ignores_order_and_sees_every_input() -> None:
    assert fingerprint_inputs([("1", "a"), ("2", "b")]) == fingerprint_inputs([("2", "b"), ("1", "a")])
    assert fingerprint_inputs([("1", "a"), ("2", "b")]) != fingerprint_inputs([("1", "a"), ("2", "c")])


def test_epochs_become_repeats_and_the_statistical_rule_decides() -> None:
    samples = {str(i): "passed" for i in range(10)}
    counts = {sample: (3, 3) for sample in samples}
    fell = {**samples, "0": "failed"}
    result = gate_runs(STRICT_DEFAULT, run(samples, repeats=counts), run(fell, repeats={**counts, "0": (2, 3)}))
    assert result.decision.repeats is not None
    # one sample losing one of three epochs is not a significant drop: no regression under the repeats rule
    assert result.decision.regressed == ()
    assert result.candidate["tests"][0]["repeats"] == {"passed": 2, "runs": 3}


def test_registered_sources_load_and_unknown_ones_are_refused() -> None:
    assert set(available_sources()) >= {"deepeval", "inspect", "junit", "lm-eval", "promptfoo"}
    for name in available_sources():
        source = load_source(name)
        assert isinstance(source, Source) and source.name == name
    with pytest.raises(InputError, match="unknown source 'nope'"):
        load_source("nope")


def test_adapted_reports_keep_the_scorer_where_the_plain_gate_refuses_a_change() -> None:
    other = SourceKey(**{**KEY.__dict__, "scorer": "includes", "contract": {"num_fewshot": "5"}})
    before, after = to_run_report(run({"1": "passed"}), "b"), to_run_report(run({"1": "passed"}, key=other), "c")
    assert after["eval"]["judge_model"] == "scorer:includes; num_fewshot=5"
    assert incomparability(before["eval"], after["eval"])  # `evalkit gate` refuses them too


def test_out_in_a_missing_folder_or_over_an_existing_path_is_refused(tmp_path: Path) -> None:
    junit = PROJECT_ROOT / "tests/corpus/adapt/junit/pytest"
    for out, expected in ((tmp_path / "no/such/dir", "does not exist"), (tmp_path, "already exists")):
        done = evalkit_cli("evalkit.cli.main", "adapt", "junit", str(junit / "baseline.xml"), str(junit / "candidate.xml"),
                           "--out", str(out))
        assert done.returncode == 3 and expected in done.stderr and len(done.stderr.strip().splitlines()) == 1
    assert not (tmp_path / "no").exists()


def test_an_unknown_source_is_a_usage_error() -> None:
    done = evalkit_cli("evalkit.cli.main", "adapt", "nosuchtool", "a", "b")
    assert done.returncode == 3 and "invalid choice: 'nosuchtool'" in done.stderr


PLUGIN = PROJECT_ROOT / "tests/corpus/adapt/plugin"


def test_a_third_party_package_adds_a_source_through_the_entry_points(tmp_path: Path) -> None:
    """An authored package (tests/corpus/adapt/plugin/evalkit-tap) installed offline beside evalkit: its source is
    offered and gates, with no change to evalkit; without it, the name is unknown."""
    target = install_offline(PLUGIN / "evalkit-tap", tmp_path)
    assert (next(target.glob("evalkit_tap-*.dist-info")) / "entry_points.txt").read_text().count(
        ENTRY_POINT_GROUP) == 1
    env = {**evalkit_env(), "PYTHONPATH": str(target)}
    gated = subprocess.run([sys.executable, "-m", "evalkit.cli.main", "adapt", "tap", str(PLUGIN / "baseline.tap"),
                            str(PLUGIN / "candidate.tap")], cwd=PROJECT_ROOT, env=env, capture_output=True,
                           text=True, timeout=300)
    assert gated.returncode == 1, gated.stdout + gated.stderr
    assert "tap::keeps the order" in gated.stdout
    listed = subprocess.run([sys.executable, "-m", "evalkit.cli.main", "adapt", "--help"], cwd=PROJECT_ROOT, env=env,
                            capture_output=True, text=True, timeout=300)
    assert "tap" in listed.stdout and "junit" in listed.stdout
    unknown = evalkit_cli("evalkit.cli.main", "adapt", "tap", str(PLUGIN / "baseline.tap"), str(PLUGIN / "candidate.tap"))
    assert unknown.returncode == 3 and "invalid choice: 'tap'" in unknown.stderr
