"""The promptfoo source over real promptfoo output (tests/corpus/adapt/promptfoo/, made by promptfoo 0.121.20; its
README has the commands): assertions as tests, repeats, errored rows, incomparable runs, refusals. Bad inputs are
derived here from the real files (cut, or one field changed), each saying what was changed."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from conftest import check_adapted_pair, evalkit_cli

from evalkit.adapt.neutral import NeutralRun
from evalkit.adapt.promptfoo import read_promptfoo
from evalkit.core.errors import InputError
from evalkit.gate.decision import Verdict

PROJECT_ROOT = Path(__file__).resolve().parents[2]  # this repository: the examples project
CORPUS = PROJECT_ROOT / "tests" / "corpus" / "adapt" / "promptfoo"
TASK = "capitals (evalkit adapt fixture)"

# (baseline, candidate) -> (decision, regressed, fixed, first words of the reasons)
EXPECTED: dict[tuple[str, str], tuple[Verdict, tuple[str, ...], tuple[str, ...], tuple[str, ...]]] = {
    ("baseline", "candidate"): (Verdict.BLOCK, (f"{TASK}::contains[france]",), (f"{TASK}::contains[italy]",),
                                ("1 regression(s)",)),
    ("baseline", "dataset-changed"): (Verdict.INCOMPARABLE, (), (), ("dataset:",)),
    ("baseline", "assertion-changed"): (Verdict.INCOMPARABLE, (), (), ("scorer:",)),
    ("baseline", "provider-error"): (Verdict.BLOCK, (f"{TASK}::icontains[japan]", f"{TASK}::starts-with[japan]"), (),
                                     ("incomplete run:", "2 regression(s)")),
    ("repeat-baseline", "repeat-candidate"): (Verdict.BLOCK, (f"{TASK}::contains[france]",), (),
                                              ("1 regression(s)",)),
    ("baseline", "baseline"): (Verdict.GO, (), (), ()),
}


def read(name: str, folder: Path = CORPUS) -> NeutralRun:
    return read_promptfoo(folder / f"{name}.json")


def outcomes(run: NeutralRun) -> dict[str, tuple[str, tuple[int, int] | None]]:
    return {test.nodeid: (test.outcome, test.repeats) for test in run.tests}


def test_each_assertion_of_each_test_is_an_evalkit_test() -> None:
    run = read("baseline")
    assert outcomes(run) == {
        f"{TASK}::contains[france]": ("passed", None), f"{TASK}::icontains[france]": ("passed", None),
        f"{TASK}::contains[italy]": ("failed", None),
        f"{TASK}::starts-with[japan]": ("passed", None), f"{TASK}::icontains[japan]": ("passed", None)}
    assert run.tool == "promptfoo 0.121.20"
    assert run.key.model == "echo" and run.key.prompt_version == "capital-v1"
    assert run.key.dataset_sha_from == "sample inputs"
    assert "capital-v1: The capital of {{country}} is {{city}}." in str(run.key.prompt)
    assert run.metrics["pass_rate"] == pytest.approx(2 / 3)
    assert run.provenance["format_version"] == 3


def test_repeats_become_repeat_counts_not_separate_tests() -> None:
    run = read("repeat-candidate")
    assert outcomes(run)[f"{TASK}::contains[france]"] == ("failed", (2, 10))
    assert outcomes(run)[f"{TASK}::icontains[france]"] == ("passed", (10, 10))
    assert len(run.tests) == 5


def test_several_prompts_in_one_file_are_told_apart_on_the_same_dataset() -> None:
    run = read("two-prompts")
    assert outcomes(run)[f"{TASK}::contains[france|capital-v1|echo]"] == ("passed", None)
    assert outcomes(run)[f"{TASK}::contains[france|capital-v2|echo]"] == ("failed", None)
    assert len(run.tests) == 10 and run.key.prompt_version == "capital-v1, capital-v2"
    assert (run.key.dataset_sha, run.key.scorer) == (read("baseline").key.dataset_sha, read("baseline").key.scorer)


def test_an_errored_row_is_kept_as_errors_and_listed() -> None:
    run = read("provider-error")
    assert run.errored == ("japan",)
    assert outcomes(run)[f"{TASK}::starts-with[japan]"] == ("error", None)
    assert "simulated outage" in str(next(t.message for t in run.tests if t.outcome == "error"))


@pytest.mark.parametrize(("pair", "expected"), EXPECTED.items(), ids=["-vs-".join(pair) for pair in EXPECTED])
def test_the_fixtures_decide_as_their_readme_says(pair: tuple[str, str], expected: tuple[Any, ...]) -> None:
    check_pair(CORPUS, pair, expected)


def check_pair(folder: Path, pair: tuple[str, str], expected: tuple[Any, ...]) -> None:
    check_adapted_pair(read(pair[0], folder), read(pair[1], folder), expected)


def test_the_command_gates_two_results_files_and_writes_the_evidence(tmp_path: Path) -> None:
    out = tmp_path / "gated"
    done = subprocess.run([sys.executable, "-m", "evalkit.cli.main", "adapt", "promptfoo", str(CORPUS / "baseline.json"),
                           str(CORPUS / "candidate.json"), "--out", str(out)],
                          capture_output=True, text=True, cwd=PROJECT_ROOT, timeout=120)
    assert done.returncode == 1, done.stderr
    decision = json.loads((out / "decision.json").read_text())
    assert decision["decision"] == "block"
    assert f"{TASK}::contains[france]" in done.stdout


def derived(tmp_path: Path, change: Any, name: str = "baseline") -> Path:
    """A copy of a real results file with one change applied (the change is the test's subject)."""
    data = json.loads((CORPUS / f"{name}.json").read_text())
    change(data)
    path = tmp_path / "derived.json"
    path.write_text(json.dumps(data))
    return path


def _set_version(data: dict[str, Any]) -> None:
    data["results"]["version"] = 2


def _drop_row(data: dict[str, Any]) -> None:
    data["results"]["results"].pop()


def _all_errors(data: dict[str, Any]) -> None:
    for row in data["results"]["results"]:
        row.update(failureReason=2, error="boom", success=False)
        row.pop("gradingResult", None)
    data["results"]["stats"].update(successes=0, failures=0, errors=len(data["results"]["results"]))


def _duplicate_description(data: dict[str, Any]) -> None:
    data["results"]["results"][1]["testCase"]["description"] = "france"


def _mixed_repeats(data: dict[str, Any]) -> None:
    rows = data["results"]["results"]
    rows.pop()
    data["results"]["stats"]["successes"] -= 1


def _no_component_results(data: dict[str, Any]) -> None:
    del data["results"]["results"][0]["gradingResult"]["componentResults"]


@pytest.mark.parametrize(("change", "name", "message"), [
    (_set_version, "baseline", "results.version is 2; evalkit reads promptfoo results version 3"),
    (_drop_row, "baseline", "results.stats counts 3 rows but results.results holds 2"),
    (_all_errors, "baseline", "every row of the run errored"),
    (_duplicate_description, "baseline", "test 'france' is 2 different tests that share a description"),
    (_mixed_repeats, "repeat-baseline", "has 9 rows but the run repeated each test 10 times"),
    (_no_component_results, "baseline", "a sample without scores cannot be gated"),
])
def test_bad_results_are_refused_in_one_line(tmp_path: Path, change: Any, name: str, message: str) -> None:
    with pytest.raises(InputError, match=message):
        read_promptfoo(derived(tmp_path, change, name))


def test_a_truncated_file_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "cut.json"
    path.write_bytes((CORPUS / "baseline.json").read_bytes()[:4000])
    with pytest.raises(InputError, match="is the file truncated"):
        read_promptfoo(path)


def test_a_truncated_file_exits_3_naming_it(tmp_path: Path) -> None:
    path = tmp_path / "cut.json"
    path.write_bytes((CORPUS / "baseline.json").read_bytes()[:4000])
    done = subprocess.run([sys.executable, "-m", "evalkit.cli.main", "adapt", "promptfoo", str(CORPUS / "baseline.json"),
                           str(path)], capture_output=True, text=True, cwd=PROJECT_ROOT, timeout=120)
    assert done.returncode == 3
    assert len(done.stderr.strip().splitlines()) == 1 and str(path) in done.stderr


def _promptfoo() -> str | None:
    return os.environ.get("EVALKIT_PROMPTFOO") or shutil.which("promptfoo")


@pytest.mark.slow
@pytest.mark.external
@pytest.mark.skipif(_promptfoo() is None, reason="promptfoo is not installed (npm install promptfoo, or set "
                                                 "EVALKIT_PROMPTFOO to its executable)")
def test_regenerated_results_map_to_the_same_tests_and_decisions(tmp_path: Path) -> None:
    env = {**os.environ, "PROMPTFOO": str(_promptfoo())}
    subprocess.run(["bash", str(CORPUS / "make.sh"), str(tmp_path)], check=True, env=env, timeout=600)
    for name in ("baseline", "candidate", "dataset-changed", "assertion-changed", "provider-error", "two-prompts",
                 "repeat-baseline", "repeat-candidate"):
        fresh, shipped = read(name, tmp_path), read(name)
        assert outcomes(fresh) == outcomes(shipped), name
        assert fresh.key == shipped.key and fresh.errored == shipped.errored, name
    for pair, expected in EXPECTED.items():
        check_pair(tmp_path, pair, expected)


def test_a_lone_surrogate_in_a_description_is_one_line_exit_3(tmp_path: Path) -> None:
    text = (CORPUS / "baseline.json").read_text()
    data = json.loads(text)
    data["results"]["results"][0]["testCase"]["description"] = "test \udfff"
    path = tmp_path / "surrogate.json"
    path.write_text(json.dumps(data))
    done = evalkit_cli("evalkit.cli.main", "adapt", "promptfoo", str(path), str(path))
    assert done.returncode == 3, done.stderr
    assert len(done.stderr.strip().splitlines()) == 1 and "lone surrogate (\\udfff)" in done.stderr


def _written_twice(tmp_path: Path, change_copy: Any = None, describe: bool = True) -> Path:
    """The real baseline with its first test written twice in the config, as promptfoo records that: a second row
    of the same testCase under the next testIdx."""
    data = json.loads((CORPUS / "baseline.json").read_text())
    rows = data["results"]["results"]
    copy = json.loads(json.dumps(rows[0]))
    copy["testIdx"] = len(rows)
    if change_copy:
        change_copy(copy)
    if not describe:
        for row in (rows[0], copy):
            row["testCase"].pop("description")
    rows.append(copy)
    data["results"]["stats"]["successes" if copy["success"] else "failures"] += 1
    path = tmp_path / "twice.json"
    path.write_text(json.dumps(data))
    return path


def test_a_test_written_twice_identically_is_read_as_repeats_and_said(tmp_path: Path) -> None:
    run = read_promptfoo(_written_twice(tmp_path))
    first = json.loads((CORPUS / "baseline.json").read_text())["results"]["results"][0]
    repeated = [t for t in run.tests if t.case == first["testCase"]["description"]]
    assert repeated and all(t.repeats is not None and t.repeats[1] == 2 for t in repeated)
    assert any("read as repeats of one test: 'france' (2 times)" in note for note in run.notes)


def test_different_tests_sharing_vars_and_no_description_are_told_apart_by_their_test_case(tmp_path: Path) -> None:
    """A red team's strategies run one attack's vars several ways, each an undescribed test of its own (as in the
    output.json committed in promptfoo/promptfoo-action, and promptfoo's redteam-tracing example). Here the copy of
    the first test gains an assertion, and its result."""
    def another_assertion(row: dict[str, Any]) -> None:
        assertion = {"type": "icontains", "value": "x"}
        row["testCase"]["assert"].append(assertion)
        row["gradingResult"]["componentResults"].append({"pass": True, "score": 1, "reason": "ok",
                                                         "assertion": assertion})

    path = _written_twice(tmp_path, another_assertion, describe=False)
    run = read_promptfoo(path)
    ids = {test.case for test in run.tests if test.case.startswith("vars:")}
    assert len(ids) == 2 and all(re.fullmatch(r"vars:[0-9a-f]+/test:[0-9a-f]+", case) for case in ids)
    assert len({case.split("/")[0] for case in ids}) == 1  # the same vars, two tests
    assert not any(test.repeats for test in run.tests)
    assert any("told apart by a fingerprint of its whole test case" in note for note in run.notes)
    (tmp_path / "again").mkdir()
    plain = read_promptfoo(_written_twice(tmp_path / "again", describe=False))  # written twice identically
    assert all(test.repeats == (test.repeats[0], 2) for test in plain.tests if test.repeats) and any(
        test.repeats for test in plain.tests)


def test_results_from_before_promptfoo_0_101_count_errors_among_failures(tmp_path: Path) -> None:
    """promptfoo 0.92 to 0.100 wrote format version 3 without `stats.errors` (promptfoo's examples/simple-cli/
    output.json of October 2024 is one); the real baseline with that count removed reads the same."""
    path = derived(tmp_path, lambda data: data["results"]["stats"].pop("errors"), "baseline")
    assert outcomes(read_promptfoo(path)) == outcomes(read("baseline"))


def test_results_in_a_format_before_version_3_are_refused_naming_it(tmp_path: Path) -> None:
    """promptfoo before 0.92 put its rows at the top level, beside a `table` (format 1 and 2, or no version in its
    first weeks); the real baseline rewritten so, as promptfoo's examples of 2023 and 2024 hold it."""
    def older(data: dict[str, Any]) -> None:
        results = data.pop("results")
        data.update(version=2, results=results["results"], stats=results["stats"], table={"head": {}, "body": []})

    with pytest.raises(InputError, match=r"format version 2, its rows at the top level, as promptfoo before 0\.92"):
        read_promptfoo(derived(tmp_path, older, "baseline"))


def test_a_null_result_row_is_one_line_not_a_crash(tmp_path):
    """Found by the fuzz harness (tests/fuzz): a row that is not an object once ended in AttributeError, exit 4."""
    path = tmp_path / "results.json"
    path.write_text('{"results": {"version": 3, "results": [null], "stats": {"successes": 1, "failures": 0, '
                    '"errors": 0}}}', encoding="utf-8")
    with pytest.raises(InputError, match=r"results\.results\[0\]"):
        read_promptfoo(path)
