"""The lm-eval source over real lm-evaluation-harness output (tests/corpus/adapt/lm_eval/, made by lm-eval 0.4.13 with
its dummy model on a local task; its README has the commands): documents x metrics as tests, incomparable runs,
refusals. Bad inputs are derived here from the real files (cut, or one field changed), each saying what was
changed."""

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

from evalkit.adapt.lm_eval import read_lm_eval
from evalkit.adapt.neutral import NeutralRun
from evalkit.core.errors import InputError
from evalkit.gate.decision import Verdict

PROJECT_ROOT = Path(__file__).resolve().parents[2]  # this repository: the examples project
CORPUS = PROJECT_ROOT / "tests" / "corpus" / "adapt" / "lm_eval"

# (baseline, candidate) -> (decision, regressed, fixed, first word of each reason)
EXPECTED: dict[tuple[str, str], tuple[Verdict, tuple[str, ...], tuple[str, ...], tuple[str, ...]]] = {
    ("baseline", "candidate"): (Verdict.BLOCK, ("capitals::acc[2]",),
                                ("capitals::acc[4]", "capitals::acc[6]", "capitals::acc[7]"), ("1",)),
    ("baseline", "dataset-changed"): (Verdict.INCOMPARABLE, (), (), ("dataset:",)),
    ("baseline", "metric-changed"): (Verdict.INCOMPARABLE, (), (), ("scorer:",)),
    ("baseline", "baseline"): (Verdict.GO, (), (), ()),
}


def read(name: str, folder: Path = CORPUS) -> NeutralRun:
    return read_lm_eval(folder / name)


def outcomes(run: NeutralRun) -> dict[str, str]:
    return {test.nodeid: test.outcome for test in run.tests}


def test_each_document_and_pass_fail_metric_is_an_evalkit_test() -> None:
    run = read("baseline")
    assert outcomes(run) == {f"capitals::acc[{doc}]": "passed" if doc in (0, 2) else "failed" for doc in range(8)}
    assert run.tool == "lm-eval 0.4.13"
    assert run.key.dataset_sha_from == "source" and run.key.task == "capitals"
    assert run.key.model == "dummy {}"
    assert run.key.contract["num_fewshot"] == '{"capitals":0}'
    assert run.metrics == {"capitals/acc,none": 0.25}
    assert "Question: What is the capital of {{country}}" in str(run.key.prompt)


def test_the_results_file_itself_may_be_named() -> None:
    folder = CORPUS / "baseline"
    (results,) = folder.glob("results_*.json")
    assert outcomes(read_lm_eval(results)) == outcomes(read("baseline"))


@pytest.mark.parametrize(("pair", "expected"), EXPECTED.items(), ids=["-vs-".join(pair) for pair in EXPECTED])
def test_the_fixtures_decide_as_their_readme_says(pair: tuple[str, str], expected: tuple[Any, ...]) -> None:
    check_pair(CORPUS, pair, expected)


def check_pair(folder: Path, pair: tuple[str, str], expected: tuple[Any, ...]) -> None:
    check_adapted_pair(read(pair[0], folder), read(pair[1], folder), expected)


def test_the_command_gates_two_output_folders() -> None:
    done = subprocess.run([sys.executable, "-m", "evalkit.cli.main", "adapt", "lm-eval", str(CORPUS / "baseline"),
                           str(CORPUS / "candidate")], capture_output=True, text=True, cwd=PROJECT_ROOT, timeout=120)
    assert done.returncode == 1, done.stderr
    assert "capitals::acc[2]" in done.stdout and "seeds" in done.stdout


def copy(tmp_path: Path, name: str = "baseline") -> tuple[Path, Path]:
    """A copy of a real output folder: (results file, samples file)."""
    folder = tmp_path / name
    shutil.copytree(CORPUS / name, folder)
    (results,) = folder.glob("results_*.json")
    (samples,) = folder.glob("samples_*.jsonl")
    return results, samples


def edit_results(path: Path, change: Any) -> None:
    data = json.loads(path.read_text())
    change(data)
    path.write_text(json.dumps(data))


def edit_samples(path: Path, change: Any) -> None:
    rows = [json.loads(line) for line in path.read_text().splitlines()]
    change(rows)
    path.write_text("".join(json.dumps(row) + "\n" for row in rows))


def test_an_old_results_format_is_refused_naming_the_version(tmp_path: Path) -> None:
    results, _ = copy(tmp_path)
    edit_results(results, lambda data: data.update(lm_eval_version="0.3.0"))
    with pytest.raises(InputError, match="lm_eval_version 0.3.0 is older than 0.4"):
        read_lm_eval(results)
    edit_results(results, lambda data: [data.pop(f) for f in ("lm_eval_version", "configs", "n-shot")])
    with pytest.raises(InputError, match="results of lm-eval before 0.4"):
        read_lm_eval(results)


def test_results_of_lm_eval_0_4_0_to_0_4_8_are_recognised_by_their_fields(tmp_path: Path) -> None:
    # 0.4.7 and 0.4.8 wrote these results and samples without the lm_eval_version 0.4.9 added (0.4.0-0.4.6 logged
    # their samples otherwise: the tests below)
    results, _ = copy(tmp_path)
    edit_results(results, lambda data: data.pop("lm_eval_version"))
    run = read_lm_eval(results)
    assert run.tool == "lm-eval 0.4 (before 0.4.9, which records its version)"
    assert outcomes(run) == outcomes(read("baseline"))


def test_a_run_as_lm_eval_0_4_0_to_0_4_2_wrote_it_reads_the_same(tmp_path: Path) -> None:
    """Derived from the real baseline: `results.json` without what 0.4.3 added, and the samples as those versions
    logged them, `<model_args>_<task>.jsonl` holding one indented JSON array, no metrics list, no filter and no
    hashes (real runs of this shape sit on pull-request branches of lm-evaluation-harness, #1668 and #1764)."""
    results, samples = copy(tmp_path)
    edit_results(results, lambda data: [data.pop(field) for field in (
        "lm_eval_version", "higher_is_better", "n-samples", "task_hashes", "model_name_sanitized")])
    edit_results(results, lambda data: data["config"].update(model_args="pretrained=tiny/model"))
    rows = [json.loads(line) for line in samples.read_text().splitlines()]
    for row in rows:
        for field in ("metrics", "filter", "doc_hash", "prompt_hash", "target_hash"):
            row.pop(field)
    (results.parent / "pretrained__tiny__model_capitals.jsonl").write_text(json.dumps(rows, indent=2))
    samples.unlink()
    old = results.rename(results.parent / "results.json")
    run, baseline = read_lm_eval(old.parent), read("baseline")
    assert outcomes(run) == outcomes(baseline)
    assert run.key.dataset_sha == baseline.key.dataset_sha  # the documents' hashes, computed as lm-eval computes them


def test_samples_of_0_4_0_to_0_4_6_under_two_filters_are_told_apart_by_their_order(tmp_path: Path) -> None:
    """Before 0.4.7 a sample named neither its metrics nor its filter: a task under several filters logged every
    document once per filter, in the order of its filter_list. Derived from the real baseline, given two filters,
    the second scoring the first document the other way."""
    results, samples = copy(tmp_path)
    edit_results(results, lambda data: data["configs"]["capitals"].update(
        filter_list=[{"name": "strict", "filter": []}, {"name": "loose", "filter": []}]))
    edit_results(results, lambda data: data["n-samples"].pop("capitals"))

    def two_filters(rows: list[dict[str, Any]]) -> None:
        first = [{k: v for k, v in row.items() if k not in ("metrics", "filter")} for row in rows]
        second = json.loads(json.dumps(first))
        second[0]["acc"] = 1 - second[0]["acc"]
        rows[:] = first + second

    edit_samples(samples, two_filters)
    run = outcomes(read_lm_eval(results))
    plain = outcomes(read("baseline"))
    assert {k.replace("acc,strict", "acc") for k in run if ",strict" in k} == set(plain)
    assert {k.replace("acc,loose", "acc") for k in run if ",loose" in k} == set(plain)
    first = min(plain, key=lambda k: int(k.split("[")[1].rstrip("]")))
    assert run[first.replace("acc", "acc,strict")] == plain[first] != run[first.replace("acc", "acc,loose")]
    edit_samples(samples, lambda rows: rows.append(rows[0]))  # a third copy of a document: two runs in one file
    with pytest.raises(InputError, match="logs document 0 twice under filter 'loose'"):
        read_lm_eval(results)


def test_missing_samples_ask_for_log_samples(tmp_path: Path) -> None:
    results, samples = copy(tmp_path)
    samples.unlink()
    with pytest.raises(InputError, match="rerun lm_eval with --log_samples"):
        read_lm_eval(results.parent)


def test_a_truncated_samples_file_is_refused(tmp_path: Path) -> None:
    results, samples = copy(tmp_path)
    samples.write_bytes(samples.read_bytes()[:-200])
    with pytest.raises(InputError, match="line 8: not valid JSON"):
        read_lm_eval(results)


def test_samples_fewer_than_the_run_evaluated_are_refused(tmp_path: Path) -> None:
    results, samples = copy(tmp_path)
    edit_samples(samples, lambda rows: rows.pop())
    with pytest.raises(InputError, match="evaluated 8 documents \\(n-samples\\) but its samples file logs 7"):
        read_lm_eval(results)


def test_a_document_logged_twice_is_refused(tmp_path: Path) -> None:
    results, samples = copy(tmp_path)
    edit_samples(samples, lambda rows: rows[1].update(doc_id=0))
    with pytest.raises(InputError, match="logs document 0 twice"):
        read_lm_eval(results)


def test_a_sample_without_its_score_is_refused(tmp_path: Path) -> None:
    results, samples = copy(tmp_path)
    edit_samples(samples, lambda rows: rows[3].pop("acc"))
    with pytest.raises(InputError, match="document 3: metric 'acc' has no value"):
        read_lm_eval(results)


def test_a_folder_with_two_runs_is_refused(tmp_path: Path) -> None:
    results, _ = copy(tmp_path)
    shutil.copy(results, results.parent / "results_2099-01-01T00-00-00.json")
    with pytest.raises(InputError, match="2 results files"):
        read_lm_eval(results.parent)


def _lm_eval() -> str | None:
    return os.environ.get("EVALKIT_LM_EVAL") or shutil.which("lm_eval")


@pytest.mark.slow
@pytest.mark.external
@pytest.mark.skipif(_lm_eval() is None, reason="lm-eval is not installed (pip install torch lm-eval in a separate "
                                               "venv, and set EVALKIT_LM_EVAL to its lm_eval)")
def test_regenerated_outputs_map_to_the_same_tests_and_decisions(tmp_path: Path) -> None:
    env = {**os.environ, "LM_EVAL": str(_lm_eval())}
    subprocess.run(["bash", str(CORPUS / "make.sh"), str(tmp_path)], check=True, env=env, timeout=600)
    for name in ("baseline", "candidate", "dataset-changed", "metric-changed"):
        fresh, shipped = read(name, tmp_path), read(name)
        assert outcomes(fresh) == outcomes(shipped), name
        assert fresh.key == shipped.key, name
    for pair, expected in EXPECTED.items():
        check_pair(tmp_path, pair, expected)


@pytest.mark.parametrize("value", [3, True, "acc"])
def test_a_metric_list_of_the_wrong_type_is_one_line_exit_3(tmp_path: Path, value: Any) -> None:
    results, _ = copy(tmp_path)
    edit_results(results, lambda data: [config.update(metric_list=value) for config in data["configs"].values()])
    done = evalkit_cli("evalkit.cli.main", "adapt", "lm-eval", str(results), str(results))
    assert done.returncode == 3, done.stderr
    assert len(done.stderr.strip().splitlines()) == 1 and "metric_list is" in done.stderr
