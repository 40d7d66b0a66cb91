"""The DeepEval source over real DeepEval test runs (tests/corpus/adapt/deepeval/, made by DeepEval 4.3.1; its README
has the commands): metrics as tests, a metric error kept, incomparable runs, refusals. Bad inputs are derived here
from the real files (cut, or one field changed), each saying what was changed."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from conftest import check_adapted_pair, evalkit_cli
from helpers.corpus import WHERE_TO_GET, corpus_root

from evalkit.adapt.deepeval import read_deepeval
from evalkit.adapt.neutral import NeutralRun
from evalkit.core.errors import InputError
from evalkit.gate.decision import Verdict

PROJECT_ROOT = Path(__file__).resolve().parents[2]  # this repository: the examples project
CORPUS = PROJECT_ROOT / "tests" / "corpus" / "adapt" / "deepeval"

# (baseline, candidate) -> (decision, regressed, fixed, first word of each reason)
EXPECTED: dict[tuple[str, str], tuple[Verdict, tuple[str, ...], tuple[str, ...], tuple[str, ...]]] = {
    ("baseline", "candidate"): (Verdict.BLOCK, ("deepeval::Exact Match[france]",), ("deepeval::Exact Match[italy]",),
                                ("1",)),
    ("baseline", "dataset-changed"): (Verdict.INCOMPARABLE, (), (), ("dataset:",)),
    ("baseline", "metric-changed"): (Verdict.INCOMPARABLE, (), (), ("scorer:",)),
    ("baseline", "metric-error"): (Verdict.BLOCK, ("deepeval::City[japan]",), (), ("incomplete", "1")),
    ("baseline", "baseline"): (Verdict.GO, (), (), ()),
}


def read(name: str, folder: Path = CORPUS) -> NeutralRun:
    return read_deepeval(folder / f"{name}.json")


def outcomes(run: NeutralRun) -> dict[str, str]:
    return {test.nodeid: test.outcome for test in run.tests}


def test_each_metric_of_each_test_case_is_an_evalkit_test() -> None:
    run = read("baseline")
    assert outcomes(run) == {
        "deepeval::Exact Match[france]": "passed", "deepeval::City[france]": "passed",
        "deepeval::Exact Match[italy]": "failed", "deepeval::City[italy]": "passed",
        "deepeval::Exact Match[japan]": "passed", "deepeval::City[japan]": "passed"}
    assert run.key.model == "fixed-outputs" and run.key.prompt_version == "capital-v1"
    assert run.key.scorer == "City(threshold=0.5, strict=False); Exact Match(threshold=1.0, strict=False)"
    assert run.key.dataset_sha_from == "sample inputs"
    assert run.tool == "DeepEval" and run.provenance["format_version"] == "TestRun (unversioned)"
    assert run.metrics == {"City/mean_score": 1.0, "Exact Match/mean_score": pytest.approx(2 / 3)}


def test_a_metric_that_raised_is_an_error_kept_and_listed() -> None:
    run = read("metric-error")
    assert outcomes(run)["deepeval::City[japan]"] == "error"
    assert outcomes(run)["deepeval::Exact Match[japan]"] == "passed"
    assert run.errored == ("japan",)
    assert "city lookup unavailable" in str(next(t.message for t in run.tests if t.outcome == "error"))


@pytest.mark.parametrize(("pair", "expected"), EXPECTED.items(), ids=["-vs-".join(pair) for pair in EXPECTED])
def test_the_fixtures_decide_as_their_readme_says(pair: tuple[str, str], expected: tuple[Any, ...]) -> None:
    check_pair(CORPUS, pair, expected)


def check_pair(folder: Path, pair: tuple[str, str], expected: tuple[Any, ...]) -> None:
    check_adapted_pair(read(pair[0], folder), read(pair[1], folder), expected)


def test_the_command_refuses_a_changed_metric_as_incomparable() -> None:
    done = subprocess.run([sys.executable, "-m", "evalkit.cli.main", "adapt", "deepeval", str(CORPUS / "baseline.json"),
                           str(CORPUS / "metric-changed.json")],
                          capture_output=True, text=True, cwd=PROJECT_ROOT, timeout=120)
    assert done.returncode == 2, done.stderr
    assert "City(threshold=1.0" in done.stdout


def derived(tmp_path: Path, change: Any, name: str = "baseline") -> Path:
    """A copy of a real test run with one change applied (the change is the test's subject)."""
    data = json.loads((CORPUS / f"{name}.json").read_text())
    change(data)
    path = tmp_path / "derived.json"
    path.write_text(json.dumps(data))
    return path


def _not_a_test_run(data: dict[str, Any]) -> None:
    data["test_cases"] = data.pop("testCases")


def _duplicate_name(data: dict[str, Any]) -> None:
    data["testCases"][1]["name"] = "france"


def _no_metrics(data: dict[str, Any]) -> None:
    data["testCases"][0]["metricsData"] = None


def _no_score(data: dict[str, Any]) -> None:
    del data["testCases"][0]["metricsData"][1]["score"]


def _dropped_case(data: dict[str, Any]) -> None:
    data["testCases"].pop()


def _empty(data: dict[str, Any]) -> None:
    data["testCases"] = []


@pytest.mark.parametrize(("change", "message"), [
    (_not_a_test_run, "no testCases list"),
    (_duplicate_name, "test case name 'france' appears twice"),
    (_no_metrics, "test case 'france' has no metricsData"),
    (_no_score, "metric 'City' has no score or success and no error"),
    (_dropped_case, "testPassed \\+ testFailed is 3 but the run holds 2 test cases"),
    (_empty, "holds no test cases"),
])
def test_bad_test_runs_are_refused_in_one_line(tmp_path: Path, change: Any, message: str) -> None:
    with pytest.raises(InputError, match=message):
        read_deepeval(derived(tmp_path, change))


def test_a_truncated_file_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "cut.json"
    path.write_bytes((CORPUS / "baseline.json").read_bytes()[:1500])
    with pytest.raises(InputError, match="is the file truncated"):
        read_deepeval(path)


def _python() -> str | None:
    """A Python with deepeval installed: EVALKIT_DEEPEVAL_PYTHON, or this one when it has deepeval."""
    configured = os.environ.get("EVALKIT_DEEPEVAL_PYTHON")
    if configured:
        return configured
    found = shutil.which("deepeval")
    return sys.executable if found and Path(found).parent == Path(sys.executable).parent else None


@pytest.mark.slow
@pytest.mark.external
@pytest.mark.skipif(_python() is None, reason="deepeval is not installed (pip install deepeval in a separate venv, "
                                              "and set EVALKIT_DEEPEVAL_PYTHON to its python)")
def test_regenerated_runs_map_to_the_same_tests_and_decisions(tmp_path: Path) -> None:
    env = {**os.environ, "PYTHON": str(_python())}
    subprocess.run(["bash", str(CORPUS / "make.sh"), str(tmp_path)], check=True, env=env, timeout=600)
    for name in ("baseline", "candidate", "dataset-changed", "metric-changed", "metric-error"):
        fresh, shipped = read(name, tmp_path), read(name)
        assert outcomes(fresh) == outcomes(shipped), name
        assert fresh.key == shipped.key and fresh.errored == shipped.errored, name
    for pair, expected in EXPECTED.items():
        check_pair(tmp_path, pair, expected)


def test_a_lone_surrogate_in_a_test_case_name_is_one_line_exit_3(tmp_path: Path) -> None:
    data = json.loads((CORPUS / "baseline.json").read_text())
    data["testCases"][0]["name"] = "case \ud800"
    path = tmp_path / "surrogate.json"
    path.write_text(json.dumps(data))  # ensure_ascii writes the escape `\ud800`, as a hostile file would
    done = evalkit_cli("evalkit.cli.main", "adapt", "deepeval", str(path), str(path))
    assert done.returncode == 3, done.stderr
    assert len(done.stderr.strip().splitlines()) == 1 and "lone surrogate (\\ud800)" in done.stderr


WILD_RUN = corpus_root() / "wild/deepeval/deepeval/inspect__fixtures__test_run_sample.json"  # the shared corpus


def test_metrics_scored_on_trace_spans_are_tests_of_their_span(tmp_path: Path) -> None:
    """`@observe(metrics=[...])` and DeepEval's integrations score spans, not the test case: such a run (DeepEval's
    own saved sample, its case-level metrics taken away) is read from its spans, not refused."""
    if not WILD_RUN.is_file():
        pytest.skip(f"no shared corpus at {corpus_root()}: {WHERE_TO_GET}")
    data = json.loads(WILD_RUN.read_text())
    for case in data["testCases"]:
        case.pop("metricsData")
    path = tmp_path / "spans.json"
    path.write_text(json.dumps(data))
    outcomes = {t.nodeid: t.outcome for t in read_deepeval(path).tests}
    assert outcomes["deepeval::validator_agent/GEval-Hallucination[sample_test_case]"] == "failed"
    assert outcomes["deepeval::trace/Faithfulness[sample_test_case]"] == "failed"
    assert outcomes["deepeval::web_search/Tool Correctness[sample_test_case]"] == "passed"
    assert len(outcomes) == 8
    for case in data["testCases"]:
        case.pop("trace")
    path.write_text(json.dumps(data))
    with pytest.raises(InputError, match="has no metricsData, on the case or on a span of its trace"):
        read_deepeval(path)
