"""The docs-stage adapter: the mapping rules, every refused input, the seed's two saved reports, and the CLI
through real subprocesses. The fixtures are reconstructed from the seed's saved result, not live runs."""

from __future__ import annotations

import copy
import hashlib
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from conftest import evalkit_env, write_json

from evalkit.adapt import DOCS_STAGE_POLICY, adapt_docs_stage, compare_docs_stages, parse_docs_stage
from evalkit.core.errors import InputError
from evalkit.core.fingerprint import canonical_json

PROJECT_ROOT = Path(__file__).resolve().parents[2]  # this repository: the examples project

FIXTURES = PROJECT_ROOT / "suites/docs_stages/fixtures"
GEMINI = FIXTURES / "gemini-3.8-flash.json"
GEMMA = FIXTURES / "gemma4-e2b.json"
# The seed's saved result: sha256 of each comparison contract's canonical JSON.
SEED_CONTRACT_SHA256 = {
    GEMINI: "bd96d29ac620e83bdee7cebba2a7aa0d03fbc383c4b1ee5e049093a6d384be73",
    GEMMA: "5b11d6883e7ec7c8d025d237d38a734d6800b7f02da437bf56243c7859652d4e",
}


def load(path: Path) -> Any:
    return parse_docs_stage(path.read_text(encoding="utf-8"), str(path))


def gemini() -> Any:
    return load(GEMINI)


def row(report: Any, case: str) -> Any:
    return next(r for r in report["rows"] if r["id"] == case)


def outcomes(report: Any) -> dict[str, str]:
    return {t["nodeid"]: t["outcome"] for t in adapt_docs_stage(report, "report")["tests"]}


def failing(report: Any) -> list[str]:
    return [nodeid for nodeid, outcome in outcomes(report).items() if outcome != "passed"]


def fixed_pipe_colors(report: Any) -> Any:
    """The Gemini report with its known pipe-colors failures passing: a fully passing docs-stage run."""
    report = copy.deepcopy(report)
    case = row(report, "pipe-colors")
    case["retrieval"]["recall"] = 1.0
    case["judged"]["faithfulness"]["score"] = case["judged"]["contextual_recall"]["score"] = 1.0
    case["first_failure"] = None
    return report


def tool_regression(report: Any) -> Any:
    """token-leak stops calling search_docs: the tools check fails (same contract, same cases)."""
    report = copy.deepcopy(report)
    case = row(report, "token-leak")
    case["tools"] = {"score": 0.5, "unexpected": [], "pass": False}
    case["first_failure"] = "tools"
    return report


# --- the two saved reports of the seed ---------------------------------------------------------------

def test_fixtures_say_they_are_reconstructed_not_live():
    for path in (GEMINI, GEMMA):
        provenance = load(path)["provenance"]
        assert provenance["kind"] == "authored" and provenance["live_run"] is False
        assert "seed 000_74498ca1844e8cbd" in provenance["reconstructed_from"]
        assert "not a live run" in provenance["note"].lower()


@pytest.mark.parametrize("path, failures", [
    (GEMINI, ["docs-stages::pipe-colors::test_retrieval", "docs-stages::pipe-colors::test_faithfulness",
              "docs-stages::pipe-colors::test_contextual_recall"]),
    (GEMMA, ["docs-stages::backup::test_faithfulness", "docs-stages::pipe-colors::test_retrieval",
             "docs-stages::pipe-colors::test_faithfulness", "docs-stages::pipe-colors::test_contextual_recall",
             "docs-stages::token-leak::test_tools", "docs-stages::token-leak::test_retrieval",
             "docs-stages::token-leak::test_faithfulness", "docs-stages::token-leak::test_contextual_recall"]),
])
def test_fixtures_map_to_the_seeds_outcomes(path, failures):
    tests = outcomes(load(path))
    assert len(tests) == 45  # 7 cases x 5 checks, 2 without retrieval x 4, thanks x 2
    assert failing(load(path)) == failures


@pytest.mark.parametrize("path", [GEMINI, GEMMA])
def test_contract_is_the_seeds_and_its_fingerprint_is_the_dataset_sha(path):
    adapted = adapt_docs_stage(load(path), str(path))
    digest = hashlib.sha256(canonical_json(adapted["contract"]).encode()).hexdigest()
    assert digest == SEED_CONTRACT_SHA256[path]
    assert adapted["eval"]["dataset_sha"] == digest[:12]


def test_eval_key_carries_model_prompt_judge_and_embedder():
    key = adapt_docs_stage(load(GEMMA), "gemma")["eval"]
    assert key == {"suite": "docs-stages", "dataset": "docs-assistant@1", "dataset_sha": "5b11d6883e7e",
                   "model": "gemma4:e2b", "prompt_version": "sha:a7990e4dc62c", "prompt_sha": "a7990e4dc62c",
                   "judge_model": "gemini-3.8-flash", "components": {"embedder": "qwen3-embedding:0.6b"}}


def test_gemini_against_gemma_is_incomparable_because_the_embedders_differ():
    decision = compare_docs_stages(gemini(), load(GEMMA)).decision
    assert decision.decision == "incomparable"
    assert decision.reasons == (
        "baseline ran docs-assistant@1 (bd96d29ac620), candidate ran docs-assistant@1 (5b11d6883e7e); "
        "rerun the baseline on the candidate's dataset",)
    assert decision.changed["components.embedder"] == ("gemini-embedding-2", "qwen3-embedding:0.6b")


def test_gemini_against_itself_blocks_on_its_known_pipe_colors_faithfulness_failure():
    decision = compare_docs_stages(gemini(), gemini()).decision
    assert decision.decision == "block"
    assert decision.reasons == ("1 critical test(s) fail",)
    assert decision.critical_failures == ("docs-stages::pipe-colors::test_faithfulness",)
    assert decision.regressed == () and decision.pass_rate == 0.933


# --- decisions under a matching contract -------------------------------------------------------------

def test_a_fully_passing_candidate_goes():
    decision = compare_docs_stages(gemini(), fixed_pipe_colors(gemini())).decision
    assert decision.decision == "go", decision.reasons
    assert decision.fixed == ("docs-stages::pipe-colors::test_contextual_recall",
                              "docs-stages::pipe-colors::test_faithfulness", "docs-stages::pipe-colors::test_retrieval")


def test_a_controlled_tool_regression_blocks():
    baseline = fixed_pipe_colors(gemini())
    decision = compare_docs_stages(baseline, tool_regression(baseline)).decision
    assert decision.decision == "block"
    assert decision.regressed == ("docs-stages::token-leak::test_tools",)
    assert decision.critical_failures == ("docs-stages::token-leak::test_tools",)
    assert decision.reasons == ("1 regression(s); policy allows 0", "1 critical test(s) fail")


def test_a_changed_judge_is_incomparable():
    candidate = gemini()
    candidate["key"]["judge"] = "gpt-judge"
    decision = compare_docs_stages(gemini(), candidate).decision
    assert decision.decision == "incomparable"
    assert decision.reasons[0].startswith("judge changed from gemini-3.8-flash to gpt-judge")


@pytest.mark.parametrize("change", [
    pytest.param(lambda r: r["rows"].pop(), id="missing-case"),
    pytest.param(lambda r: r.update(threshold=0.8), id="threshold"),
    pytest.param(lambda r: (r.update(k=5), r["key"].update(k=5)), id="k"),
    pytest.param(lambda r: r["key"].update(docs_sha="000000000000"), id="docs"),
    pytest.param(lambda r: r["key"].update(strict_faithfulness=False), id="strict-faithfulness"),
    pytest.param(lambda r: row(r, "backup").update(retrieval=None), id="applicability"),
])
def test_any_change_to_the_comparison_contract_is_incomparable(change):
    candidate = gemini()
    change(candidate)
    decision = compare_docs_stages(gemini(), candidate).decision
    assert decision.decision == "incomparable"
    assert "rerun the baseline on the candidate's dataset" in decision.reasons[0]


def test_the_docs_stage_policy():
    policy = DOCS_STAGE_POLICY
    assert (policy.max_regressions, policy.min_pass_rate, policy.critical) == (
        0, 0.9, ("test_tools", "test_faithfulness"))


# --- mapping rules -----------------------------------------------------------------------------------

def test_not_applicable_retrieval_is_omitted_never_passed():
    adapted = adapt_docs_stage(gemini(), "gemini")
    nodeids = {t["nodeid"] for t in adapted["tests"]}
    assert "docs-stages::issue-212::test_retrieval" not in nodeids
    assert "docs-stages::issue-212::test_faithfulness" in nodeids
    assert adapted["contract"]["applicability"]["issue-212"] == [
        "answer_relevancy", "contextual_recall", "faithfulness", "tools"]


def test_thanks_is_judged_on_answer_relevancy_only():
    tests = outcomes(gemini())
    assert [n for n in tests if n.startswith("docs-stages::thanks::")] == [
        "docs-stages::thanks::test_tools", "docs-stages::thanks::test_answer_relevancy"]


def test_contextual_precision_stays_in_the_report_but_is_not_gated():
    report = gemini()
    row(report, "backup")["judged"]["contextual_precision"]["score"] = 0.1
    adapted = adapt_docs_stage(report, "gemini")
    assert not any("contextual_precision" in t["nodeid"] for t in adapted["tests"])
    assert outcomes(report) == outcomes(gemini())
    saved = next(r for r in adapted["provenance"]["source_metrics"] if r["id"] == "backup")
    assert saved["judged"]["contextual_precision"]["score"] == 0.1
    assert adapted["eval"]["dataset_sha"] == adapt_docs_stage(gemini(), "gemini")["eval"]["dataset_sha"]


@pytest.mark.parametrize("score, outcome", [(0.7, "passed"), (0.6999, "failed")])
def test_a_check_passes_when_its_score_reaches_the_threshold(score, outcome):
    report = gemini()
    case = row(report, "restore")
    case["judged"]["answer_relevancy"]["score"] = score
    case["first_failure"] = None if outcome == "passed" else "answer_relevancy"
    assert outcomes(report)["docs-stages::restore::test_answer_relevancy"] == outcome


def test_retrieval_passes_on_recall_not_on_hit():
    report = gemini()
    case = row(report, "restore")
    case["retrieval"] = {"hit": True, "recall": 0.5, "reciprocal_rank": 1.0}
    case["first_failure"] = "retrieval"
    assert outcomes(report)["docs-stages::restore::test_retrieval"] == "failed"


def test_tools_pass_follows_its_own_flag_which_an_unexpected_tool_clears():
    report = gemini()
    case = row(report, "restore")
    case["tools"] = {"score": 1.0, "unexpected": ["delete_task"], "pass": False}
    case["first_failure"] = "tools"
    assert outcomes(report)["docs-stages::restore::test_tools"] == "failed"


def test_the_source_report_travels_with_its_provenance_and_fingerprint():
    report = gemini()
    provenance = adapt_docs_stage(report, "gemini")["provenance"]
    assert provenance["source_provenance"] == report["provenance"]
    assert provenance["source_metrics"] == report["rows"]
    assert provenance["source_report_sha"] != adapt_docs_stage(tool_regression(report), "x")["provenance"][
        "source_report_sha"]


# --- refused inputs: one line naming the case and the metric ------------------------------------------

def _set(case: str, *path: str, value: Any) -> Any:
    def change(report: Any) -> None:
        target = row(report, case)
        for part in path[:-1]:
            target = target[part]
        target[path[-1]] = value
    return change


def _delete(case: str, *path: str) -> Any:
    def change(report: Any) -> None:
        target = row(report, case)
        for part in path[:-1]:
            target = target[part]
        del target[path[-1]]
    return change


@pytest.mark.parametrize("change, message", [
    pytest.param(_delete("backup", "judged", "faithfulness"),
                 r"^report: case 'backup': metric 'faithfulness' is missing \(this case is judged on "
                 r"answer_relevancy, contextual_precision, contextual_recall, faithfulness\)$", id="missing-metric"),
    pytest.param(_delete("backup", "judged", "contextual_precision"),
                 r"case 'backup': metric 'contextual_precision' is missing", id="missing-ungated-metric"),
    pytest.param(_set("thanks", "judged", "faithfulness", value={"score": 1.0, "reason": "r"}),
                 r"^report: case 'thanks': unexpected metric 'faithfulness' \(this case is judged on "
                 r"answer_relevancy\)$", id="unexpected-metric-on-thanks"),
    pytest.param(_set("backup", "judged", "toxicity", value={"score": 0.0, "reason": "r"}),
                 r"case 'backup': unexpected metric 'toxicity'", id="unexpected-metric"),
    pytest.param(_set("backup", "judged", "faithfulness", "score", value=1.5),
                 r"^report: case 'backup': metric 'faithfulness' score 1.5 is outside \[0, 1\]", id="above-one"),
    pytest.param(_set("backup", "judged", "faithfulness", "score", value=-0.1),
                 r"case 'backup': metric 'faithfulness' score -0.1 is outside \[0, 1\]", id="below-zero"),
    pytest.param(_set("backup", "judged", "faithfulness", "score", value="0.9"),
                 r"^report: case 'backup': metric 'faithfulness' score is \"0.9\", not a number", id="string-score"),
    pytest.param(_set("backup", "judged", "faithfulness", "score", value=True),
                 r"case 'backup': metric 'faithfulness' score is true, not a number", id="bool-score"),
    pytest.param(_set("backup", "judged", "faithfulness", "score", value=float("nan")),
                 r"case 'backup': metric 'faithfulness' score is NaN, not a finite number", id="nan-in-data"),
    pytest.param(_delete("backup", "judged", "faithfulness", "score"),
                 r"case 'backup': metric 'faithfulness': missing 'score'", id="missing-score"),
    pytest.param(_set("backup", "judged", "faithfulness", "reason", value=None),
                 r"case 'backup': metric 'faithfulness': the judge's reason must be text", id="missing-reason"),
    pytest.param(_set("backup", "retrieval", "recall", value=2),
                 r"case 'backup': retrieval recall 2 is outside \[0, 1\]", id="retrieval-recall"),
    pytest.param(_set("backup", "retrieval", "hit", value=1),
                 r"case 'backup': retrieval.hit must be true or false, got 1", id="retrieval-hit"),
    pytest.param(_set("backup", "tools", "score", value=None),
                 r"case 'backup': tools score is null, not a number", id="tools-score"),
    pytest.param(_set("pipe-colors", "first_failure", value="faithfulness"),
                 r"^report: case 'pipe-colors': first_failure is \"faithfulness\" but the first failing check is "
                 r"\"retrieval\" \(checks in order: tools, retrieval, faithfulness, contextual_recall, "
                 r"answer_relevancy\)$", id="first-failure-names-a-later-check"),
    pytest.param(_set("backup", "first_failure", value="tools"),
                 r"case 'backup': first_failure is \"tools\" but the first failing check is null",
                 id="first-failure-on-a-passing-case"),
    pytest.param(_delete("backup", "first_failure"), r"case 'backup': missing 'first_failure'",
                 id="first-failure-missing"),
    pytest.param(_set("backup", "tools", "pass", value=False),
                 r"case 'backup': tools.pass is false but score 1.0 against threshold 0.7 with unexpected tools "
                 r"\[\] gives true", id="tools-flag-against-score"),
    pytest.param(_set("backup", "tools", "unexpected", value=["delete_task"]),
                 r"case 'backup': tools.pass is true but .* unexpected tools \[\"delete_task\"\] gives false",
                 id="tools-flag-against-unexpected"),
    pytest.param(_delete("backup", "retrieval"), r"case 'backup': missing 'retrieval'", id="retrieval-key-missing"),
    pytest.param(_set("backup", "judged", value=[]), r"case 'backup': judged: expected a JSON object, got a list",
                 id="judged-not-an-object"),
])
def test_invalid_rows_are_refused_naming_case_and_metric(change, message):
    report = gemini()
    change(report)
    with pytest.raises(InputError, match=message):
        adapt_docs_stage(report, "report")


@pytest.mark.parametrize("change, message", [
    pytest.param(lambda r: r["rows"].append(copy.deepcopy(r["rows"][0])),
                 r"^report: rows\[10\]: duplicate case id 'backup'; each case may appear once$", id="duplicate-case"),
    pytest.param(lambda r: r["rows"][1].update(id="a::b"), r"rows\[1\]: invalid case id 'a::b'", id="case-with-::"),
    pytest.param(lambda r: r["rows"][1].update(id=""), r"rows\[1\]: invalid case id ''", id="empty-case"),
    pytest.param(lambda r: r["rows"][1].update(id=7), r"rows\[1\]: invalid case id 7", id="number-case"),
    pytest.param(lambda r: r["rows"][1].pop("id"), r"rows\[1\]: missing 'id'", id="missing-case-id"),
    pytest.param(lambda r: r.update(rows=[]), r"^report: 'rows' is empty: the report has no cases", id="no-cases"),
    pytest.param(lambda r: r.pop("rows"), r"^report: missing 'rows'$", id="no-rows"),
    pytest.param(lambda r: r["key"].pop("embedder"), r"^report: key.embedder is missing or empty", id="no-embedder"),
    pytest.param(lambda r: r["key"].update(judge=""), r"key.judge is missing or empty", id="empty-judge"),
    pytest.param(lambda r: r["key"].pop("strict_faithfulness"), r"key.strict_faithfulness must be true or false",
                 id="no-strict-faithfulness"),
    pytest.param(lambda r: r.update(k=4), r"key.k is 3 but k is 4", id="k-mismatch"),
    pytest.param(lambda r: (r.update(k=0), r["key"].update(k=0)), r"k must be a whole number", id="k-zero"),
    pytest.param(lambda r: r.update(threshold=1.2), r"^report: threshold 1.2 is outside \[0, 1\]", id="threshold"),
    pytest.param(lambda r: r.pop("key"), r"^report: missing 'key'$", id="no-key"),
    pytest.param(lambda r: r.update(provenance="live"), r"'provenance' must be an object", id="provenance"),
])
def test_invalid_reports_are_refused(change, message):
    report = gemini()
    change(report)
    with pytest.raises(InputError, match=message):
        adapt_docs_stage(report, "report")


def test_a_report_that_is_not_an_object_is_refused():
    with pytest.raises(InputError, match=r"^report: expected a JSON object, got a list$"):
        adapt_docs_stage([], "report")


@pytest.mark.parametrize("constant", ["NaN", "Infinity", "-Infinity"])
def test_the_loader_refuses_nan_and_infinity_naming_case_and_metric(constant):
    text = GEMINI.read_text(encoding="utf-8")
    assert '"score": 0.6666666666666666' in text
    text = text.replace('"score": 0.6666666666666666', f'"score": {constant}')
    assert json.loads(text)  # Python's json alone would accept it
    with pytest.raises(InputError, match=rf"^g.json: case 'pipe-colors': judged.faithfulness.score is {constant}, "
                                         r"which JSON does not allow; scores are numbers in \[0, 1\]$"):
        parse_docs_stage(text, "g.json")


def test_the_loader_refuses_nan_outside_the_rows():
    with pytest.raises(InputError, match=r"^g.json: threshold is NaN"):
        parse_docs_stage('{"threshold": NaN, "rows": []}', "g.json")


def test_the_loader_refuses_a_key_given_twice():
    with pytest.raises(InputError, match=r"^g.json: key 'score' appears twice in one JSON object"):
        parse_docs_stage('{"rows": [{"judged": {"faithfulness": {"score": 0.1, "score": 0.9}}}]}', "g.json")


def test_the_loader_refuses_truncated_json():
    with pytest.raises(InputError, match=r"^g.json: not valid JSON \(line 1, column"):
        parse_docs_stage(GEMINI.read_text(encoding="utf-8")[:500].replace("\n", " "), "g.json")


# --- the command line, through real subprocesses ----------------------------------------------------

def adapt_cli(*args: str | Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "evalkit.cli.main", "adapt", *map(str, args)], cwd=PROJECT_ROOT,
                          env=evalkit_env(), capture_output=True, text=True, timeout=120)


@pytest.mark.slow
def test_cli_gemini_against_gemma_is_incomparable_exit_2(tmp_path):
    out = tmp_path / "runs" / "result.json"
    done = adapt_cli("docs-stage", GEMINI.relative_to(PROJECT_ROOT), GEMMA.relative_to(PROJECT_ROOT), "--out", out)
    assert done.returncode == 2, done.stderr
    printed = json.loads(done.stdout)
    assert printed["decision"] == "incomparable"
    assert printed["reasons"][0].startswith("baseline ran docs-assistant@1 (bd96d29ac620), candidate ran "
                                            "docs-assistant@1 (5b11d6883e7e)")
    result = json.loads(out.read_text(encoding="utf-8"))
    assert result["decision"] == printed
    assert result["execution_mode"] == "offline-saved-stage-report-adaptation"
    assert {name: result["policy"][name] for name in ("max_regressions", "min_pass_rate", "critical")} == {
        "max_regressions": 0, "min_pass_rate": 0.9, "critical": ["test_tools", "test_faithfulness"]}
    assert result["baseline"]["contract"]["embedder"] == "gemini-embedding-2"
    assert result["candidate"]["contract"]["embedder"] == "qwen3-embedding:0.6b"
    assert not list(out.parent.glob(".*.tmp"))  # the atomic write left no temp file behind


@pytest.mark.slow
def test_cli_gemini_against_itself_blocks_exit_1(tmp_path):
    done = adapt_cli("docs-stage", GEMINI, GEMINI, "--out", tmp_path / "result.json")
    assert done.returncode == 1, done.stderr
    assert json.loads(done.stdout)["critical_failures"] == ["docs-stages::pipe-colors::test_faithfulness"]


@pytest.mark.slow
def test_cli_go_exits_0_and_tool_regression_exits_1(tmp_path):
    baseline = write_json(tmp_path / "baseline.json", fixed_pipe_colors(gemini()))
    candidate = write_json(tmp_path / "candidate.json", tool_regression(fixed_pipe_colors(gemini())))
    go = adapt_cli("docs-stage", baseline, baseline, "--out", tmp_path / "go.json")
    assert go.returncode == 0, go.stderr
    assert json.loads(go.stdout)["decision"] == "go"
    block = adapt_cli("docs-stage", baseline, candidate, "--out", tmp_path / "block.json")
    assert block.returncode == 1, block.stderr
    assert json.loads(block.stdout)["regressed"] == ["docs-stages::token-leak::test_tools"]


@pytest.mark.slow
def test_cli_refuses_to_overwrite_an_existing_result_exit_3(tmp_path):
    out = tmp_path / "result.json"
    out.write_text("earlier evidence\n", encoding="utf-8")
    done = adapt_cli("docs-stage", GEMINI, GEMINI, "--out", out)
    assert done.returncode == 3
    assert done.stdout == ""
    assert done.stderr == (f"error: {out}: already exists; a result is evidence and is never overwritten: "
                           "choose a new --out path\n")
    assert out.read_text(encoding="utf-8") == "earlier evidence\n"


@pytest.mark.slow
def test_cli_bad_input_is_one_line_exit_3_and_writes_nothing(tmp_path):
    text = GEMINI.read_text(encoding="utf-8").replace('"score": 0.6666666666666666', '"score": NaN')
    bad = tmp_path / "bad.json"
    bad.write_text(text, encoding="utf-8")
    out = tmp_path / "result.json"
    done = adapt_cli("docs-stage", GEMINI, bad, "--out", out)
    assert done.returncode == 3
    assert done.stderr == (f"error: {bad}: case 'pipe-colors': judged.faithfulness.score is NaN, which JSON does "
                           "not allow; scores are numbers in [0, 1]\n")
    assert not out.exists()
    missing = adapt_cli("docs-stage", GEMINI, tmp_path / "nope.json", "--out", out)
    assert missing.returncode == 3 and missing.stderr == f"error: {tmp_path / 'nope.json'}: stage report file not found\n"


@pytest.mark.slow
@pytest.mark.parametrize("args", [[], ["docs-stage", str(GEMINI), str(GEMINI)], ["other", "a", "b"]],
                         ids=["no-command", "no-out", "unknown-command"])
def test_cli_usage_errors_exit_3_not_2(args):
    done = adapt_cli(*args)
    assert done.returncode == 3
    assert "error:" in done.stderr.splitlines()[-1]


def test_a_lone_surrogate_is_one_line_not_a_crash():
    """Found by the fuzz harness's long profile: half a UTF-16 pair in a value once crashed the fingerprint (exit 4)."""
    from evalkit.adapt.docs_stage import parse_docs_stage
    from evalkit.core.errors import InputError

    with pytest.raises(InputError, match=r"stage\.json: the file holds a lone surrogate \(\\ud800\)"):
        parse_docs_stage('{"model": "m\\ud800"}', "stage.json")
