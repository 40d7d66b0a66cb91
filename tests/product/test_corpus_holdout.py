"""The findings of the holdout check of 2026-12-03 (../shared/corpus/holdout-2026-12-03/REPORT.md), one test each
on the corpus file that showed it; the counts are the report's independent ones."""

from __future__ import annotations

import json
import zipfile
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from helpers.corpus import WHERE_TO_GET, corpus_root, in_ci

from evalkit.adapt.deepeval import read_deepeval
from evalkit.adapt.framework import gate_runs
from evalkit.adapt.inspect import read_inspect_log
from evalkit.adapt.junit import read_junit
from evalkit.adapt.lm_eval import read_lm_eval
from evalkit.adapt.neutral import NeutralRun
from evalkit.adapt.promptfoo import read_promptfoo
from evalkit.core.errors import InputError
from evalkit.core.policy import STRICT_DEFAULT, RepeatsRule
from evalkit.gate.decision import Verdict

HOLDOUT = corpus_root() / "holdout-2026-12-03"
WILD = corpus_root() / "wild"


@pytest.fixture(autouse=True)
def _corpus() -> None:
    if not HOLDOUT.is_dir():
        message = f"no shared corpus at {corpus_root()}: {WHERE_TO_GET}"
        if in_ci():
            pytest.fail(message, pytrace=False)
        pytest.skip(message)


def counts(run: NeutralRun) -> tuple[int, int, int, int, int]:
    c = Counter(t.outcome for t in run.tests)
    return len(run.tests), c["passed"], c["failed"], c["error"], c["skipped"]


@pytest.mark.parametrize("name", [
    "2025-12-11T18-00-43+00-00_gpqa-diamond_NL3aygdanSgqAJfzoMFuH6.eval",
    "2026-01-09T18-27-59+00-00_gpqa-diamond_nbjF337MtumE8dao4wZ3vj.eval",
])
def test_finding_2_one_epoch_of_a_passing_sample_failing_is_review_naming_the_test(name: str, tmp_path: Path) -> None:
    source = HOLDOUT / f"inspect/meridianlabs-ai+inspect_flow__tests__test_logs__logs1__{name}"
    copy = tmp_path / name  # every member as Inspect wrote it, with epoch 3's scores made `I` wherever they appear
    with zipfile.ZipFile(source) as original, zipfile.ZipFile(copy, "w", zipfile.ZIP_DEFLATED) as flipped:
        for info in original.infolist():
            member = _made_incorrect(json.loads(original.read(info)), epochs={3})  # deflate members
            flipped.writestr(info.filename, json.dumps(member))
    baseline, candidate = read_inspect_log(source), read_inspect_log(copy)
    (test,) = candidate.tests
    assert test.outcome == "failed" and test.repeats == (3, 4)
    decision = gate_runs(STRICT_DEFAULT, baseline, candidate).decision
    assert decision.decision is Verdict.REVIEW, decision.reasons
    (finding,) = [f for f in decision.findings if f.rule == "too_small_to_tell"]
    assert finding.tests == (test.nodeid,)
    assert f"{test.nodeid}: candidate 3/4, baseline 4/4" in finding.message and "too small to tell" in finding.message
    assert not decision.regressed  # 4/4 against 3/4 is no significant drop: named for review, not blocked
    assert gate_runs(STRICT_DEFAULT, baseline, baseline).decision.decision is Verdict.GO
    quiet = STRICT_DEFAULT.model_copy(update={"repeats": RepeatsRule(too_small_to_tell="ignore")})
    assert gate_runs(quiet, baseline, candidate).decision.decision is Verdict.GO  # the policy's switch
    every = tmp_path / f"every-{name}"  # all 4 epochs failing is a drop 4 against 4 samples can show: it blocks
    with zipfile.ZipFile(source) as original, zipfile.ZipFile(every, "w", zipfile.ZIP_DEFLATED) as flipped:
        for info in original.infolist():
            flipped.writestr(info.filename, json.dumps(_made_incorrect(json.loads(original.read(info)), {1, 2, 3, 4})))
    blocked = gate_runs(STRICT_DEFAULT, baseline, read_inspect_log(every)).decision
    assert blocked.decision is Verdict.BLOCK and blocked.regressed == (test.nodeid,)


def _made_incorrect(value: Any, epochs: set[int]) -> Any:
    """The log's JSON member with the scores of the samples of these epochs made `I`, wherever a sample is held."""
    if isinstance(value, dict):
        if value.get("epoch") in epochs and isinstance(value.get("scores"), dict):
            for score in value["scores"].values():
                score["value"] = "I"
        for item in value.values():
            _made_incorrect(item, epochs)
    elif isinstance(value, list):
        for item in value:
            _made_incorrect(item, epochs)
    return value


def test_finding_3_mocha_same_titled_tests_are_two_tests_not_retries() -> None:
    run = read_junit(HOLDOUT / "junit/test-summary+action__test__resources__junit__02-example.xml")
    assert counts(run) == (30, 21, 9, 0, 0)
    assert any("2 distinct tests share the id 'divides by zero::Arithmetic Division divides by zero'" in note
               for note in run.notes)
    # gotestsum's reruns, whose suite counts the rerun test once, are still attempts of one test, and said so
    reruns = read_junit(WILD / "junit/mikepenz/junit-server-test__report.xml")
    assert [t.nodeid for t in reruns.tests].count(
        "github.com/example/example/server/v8/channels/api4::TestWebSocketReconnectRace") == 1
    assert any("are read as attempts of one test" in note for note in reruns.notes)


def test_finding_4_a_promptfoo_assert_set_is_read_with_its_children(tmp_path: Path) -> None:
    path = HOLDOUT / "promptfoo/promptfoo+promptfoo__examples__french-greeting-test__output.json"
    run = read_promptfoo(path)
    assert counts(run) == (6, 4, 2, 0, 0)
    outcomes = {t.nodeid.split("::")[1].split("[")[0]: t.outcome for t in run.tests}
    assert outcomes == {"contains": "passed", "llm-rubric": "passed", "answer-relevance": "failed",
                        "assert-set": "passed", "assert-set/cost": "passed", "assert-set/latency": "failed"}
    data = json.loads(path.read_text(encoding="utf-8"))  # the set's cost made to fail: blocks on that test
    data["results"]["results"][0]["gradingResult"]["componentResults"][4]["pass"] = False
    (tmp_path / "output.json").write_text(json.dumps(data))
    decision = gate_runs(STRICT_DEFAULT, run, read_promptfoo(tmp_path / "output.json")).decision
    assert decision.decision is Verdict.BLOCK and len(decision.regressed) == 1
    assert "assert-set/cost" in decision.regressed[0]


def test_finding_4_results_that_do_not_pair_with_the_assertions_are_refused_saying_so(tmp_path: Path) -> None:
    path = HOLDOUT / "promptfoo/promptfoo+promptfoo__examples__french-greeting-test__output.json"
    data = json.loads(path.read_text(encoding="utf-8"))
    data["results"]["results"][0]["gradingResult"]["componentResults"].pop()
    (tmp_path / "output.json").write_text(json.dumps(data))
    with pytest.raises(InputError, match=r"holds 5 results that do not pair in order with its 6 assertions \(an "
                                         r"assert-set counted with its children\)"):
        read_promptfoo(tmp_path / "output.json")


def test_finding_5_doctype_html_in_captured_output_is_text_not_a_declaration() -> None:
    run = read_junit(HOLDOUT / "junit/lukejpreston+xunit-viewer__data__embedded_html_sysout.xml")
    assert counts(run) == (1, 0, 1, 0, 0)
    for name in ("testXxe-oob.xml", "testXxe-xxe.xml"):  # a real declaration is still refused
        with pytest.raises(InputError, match="document type declaration"):
            read_junit(HOLDOUT / f"junit/jenkinsci+junit-plugin__src__test__resources__hudson__tasks__junit__{name}")


@pytest.mark.parametrize(("name", "expected"), [
    ("i-am-bee+beeai-framework__.deepeval__.latest_test_run@cfbc9c32.json", (2, 1, 1, 0, 0)),
    ("i-am-bee+beeai-framework__.deepeval__.latest_test_run@f8b9dba3.json", (18, 15, 3, 0, 0)),
    ("WhiteboxHub+project-talentscreen-wbox-cli__.deepeval__.latest_test_run@ff198b2c.json", (2, 2, 0, 0, 0)),
])
def test_finding_6_deepeval_latest_test_run_is_read(name: str, expected: tuple[int, ...]) -> None:
    assert counts(read_deepeval(HOLDOUT / "deepeval" / name)) == expected


def test_finding_6_the_same_run_reads_alike_from_either_file() -> None:
    folder = HOLDOUT / "deepeval"
    wrapped = read_deepeval(folder / "amitesh1234+codegraph-advanced__.deepeval__.latest_test_run@8d6285b3.json")
    full = read_deepeval(folder / "amitesh1234+codegraph-advanced__.deepeval__.latest_run_full@8d6285b3.json")
    assert {t.nodeid: t.outcome for t in wrapped.tests} == {t.nodeid: t.outcome for t in full.tests}


def test_finding_6_a_link_only_file_is_refused_naming_the_link() -> None:
    with pytest.raises(InputError, match=r"only a link to the run on Confident AI \(testRunLink\)"):
        read_deepeval(HOLDOUT / "deepeval/glacier-creative-git+knowledge-graph-traversal-semantic-rag-research__"
                                ".deepeval__.latest_test_run@1209892e.json")


def test_finding_7_a_case_with_error_and_failure_contradicts_no_declared_total() -> None:
    run = read_junit(HOLDOUT / "junit/lukejpreston+xunit-viewer__data__multi_error_test_with_system_out.xml")
    assert counts(run)[1] == 0 and counts(run)[0] == 1
    assert not [note for note in run.notes if "declares" in note]


def test_finding_8_a_log_without_a_scorer_is_refused_saying_so() -> None:
    with pytest.raises(InputError, match=r"the task has no scorer \(eval.scorers and results.scores are empty\)"):
        read_inspect_log(HOLDOUT / "inspect/UKGovernmentBEIS+inspect_ai__tests___helpers__fixtures__legacy__"
                                   "retry-2-then-success.eval")


def test_finding_8_html_in_attributes_is_not_called_truncation() -> None:
    with pytest.raises(InputError, match="not well-formed XML") as refusal:
        read_junit(HOLDOUT / "junit/lukejpreston+xunit-viewer__data__with_html.xml")
    assert "truncated" not in str(refusal.value) and "an XML writer would have escaped" in str(refusal.value)
    with pytest.raises(InputError, match="the file is not XML"):
        read_junit(HOLDOUT / "junit/lukejpreston+xunit-viewer__data__invalid.xml")


@pytest.mark.parametrize(("name", "words"), [
    ("EnricoMi+publish-unit-test-result-action__python__test__files__nunit__nunit3__jenkins__NUnit-correct.xml",
     "NUnit 2 XML"),
    ("lukejpreston+xunit-viewer__data__xunit-2-2.xml", "NUnit 3 XML"),
    ("EnricoMi+publish-unit-test-result-action__python__test__files__xunit__mstest__fixie.xml", "xUnit.net v2 XML"),
])
def test_other_dotnet_formats_are_refused_naming_the_format(name: str, words: str) -> None:
    with pytest.raises(InputError, match=words) as refusal:
        read_junit(HOLDOUT / "junit" / name)
    assert "\n" not in str(refusal.value)


def test_an_lm_eval_samples_file_is_read_as_its_run() -> None:
    folder = WILD / "lm_eval/every_eval_ever"
    with pytest.raises(InputError) as from_results:
        read_lm_eval(folder / "results_2026-01-21T03-44-18.458309.json")
    with pytest.raises(InputError) as from_samples:  # the committed samples are cut to 10 of 5,000 documents
        read_lm_eval(folder / "samples_math_perturbed_full_2026-01-21T03-44-18.458309.jsonl")
    assert str(from_samples.value) == str(from_results.value)
    assert "evaluated 5000 documents (n-samples) but its samples file logs 10" in str(from_samples.value)
