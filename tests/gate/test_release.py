"""The release-evidence rules of the gate (evalkit/gate/release.py through decide), on hand-built graded reports."""

from __future__ import annotations

from typing import Any

import pytest

from evalkit.core.policy import PairedRule, Policy
from evalkit.gate.decide import decide
from evalkit.gate.decision import Verdict
from evalkit.records.report_reader import RunReport, report_from_mapping
from evalkit.render.markdown import render_markdown
from evalkit.render.text import render_decision

KEY = {"suite": "lab", "dataset": "lab@1:acceptance", "dataset_sha": "d", "model": "none", "prompt_version": "none",
       "prompt_sha": "p", "judge_model": "checks@1", "components": {"candidate": "x@1"}}
RULES = Policy(require_split="acceptance", require_complete_pairs=True, block_on_safety=True, block_on_review=True,
               block_on_task_regression=True, block_on_quality_regression=True, paired=PairedRule(),
               regressions="ignore")


def grade(task: bool | None = True, quality: bool | None = True, safety: bool | None = True,
          review: bool | None = False, status: str = "scored", reason: str = "ok") -> dict[str, Any]:
    return {"status": status, "task_pass": task, "quality_pass": quality, "safety_pass": safety,
            "review_pending": review, "reason": reason}


def lab_report(grades: dict[str, dict[str, Any]], split: str | None = "acceptance", **key: Any) -> RunReport:
    cases = [{"id": cid, "group": cid.split("/")[0], "status": g["status"], "grade": g,
              "checks": {"test_task": "passed" if g["task_pass"] else "failed"}} for cid, g in grades.items()]
    tests = [{"nodeid": f"t.py::test_task[{c['id']}]", "outcome": c["checks"]["test_task"]} for c in cases]
    data = {"eval": {**KEY, **key}, "tests": tests, "cases": cases}
    if split is not None:
        data["dataset"] = {"split": split}
    return report_from_mapping(data, "test report")


BASE = {f"p{g}/{kind}": grade() for g in range(4) for kind in ("file", "answer")}


def reasons(decision: Any) -> list[str]:
    return [r.split(":")[0] for r in decision.reasons]


def test_an_equal_candidate_goes_with_a_point_interval() -> None:
    decision = decide(RULES, lab_report(BASE), lab_report(BASE))
    assert decision.decision is Verdict.GO
    assert decision.statistics is not None
    assert decision.statistics["interval"] == [0.0, 0.0] and decision.statistics["difference"] == 0.0
    assert decision.statistics["pairs"] == decision.statistics["planned"] == 8
    assert decision.statistics["groups"] == 4  # projects, not cases


def test_wrong_split_blocks_before_anything_else_even_when_incomparable() -> None:
    decision = decide(RULES, lab_report(BASE), lab_report(BASE, split="dev", dataset_sha="other"))
    assert decision.decision is Verdict.BLOCK
    assert reasons(decision)[0] == "not_acceptance_split"
    assert any("rerun the baseline" in r for r in decision.reasons)  # the incomparability is named too


def test_a_dataset_without_splits_cannot_pass_a_split_rule() -> None:
    decision = decide(RULES, lab_report(BASE), lab_report(BASE, split=None))
    assert decision.decision is Verdict.BLOCK
    assert "a dataset without splits" in decision.reasons[0]


def test_unscored_candidate_cases_make_pairs_incomplete_and_outcomes_unknown() -> None:
    after = {**BASE, "p0/file": grade(None, None, None, None, status="unscored", reason="timeout after 1 s")}
    decision = decide(RULES, lab_report(BASE), lab_report(after))
    assert reasons(decision) == ["incomplete run", "incomplete_or_unscored_pairs", "safety_or_unknown_failure"]
    assert "p0/file: candidate unscored (timeout after 1 s)" in decision.reasons[1]
    assert decision.statistics is not None and decision.statistics["pairs"] == 7


def test_a_case_missing_from_either_side_breaks_the_pairs() -> None:
    fewer = {k: v for k, v in BASE.items() if k != "p3/answer"}
    assert "p3/answer: missing from the candidate" in decide(RULES, lab_report(BASE), lab_report(fewer)).reasons[0]
    assert "p3/answer: missing from the baseline" in decide(RULES, lab_report(fewer), lab_report(BASE)).reasons[0]


def test_safety_fails_even_when_everything_else_improves() -> None:
    before = {k: grade(task=False) for k in BASE}
    after = {**{k: grade() for k in BASE}, "p1/file": grade(safety=False)}
    decision = decide(RULES, lab_report(before), lab_report(after))
    assert reasons(decision) == ["safety_or_unknown_failure"]
    assert decision.statistics is not None and decision.statistics["difference"] == 1.0


def test_pending_review_blocks() -> None:
    decision = decide(RULES, lab_report(BASE), lab_report({**BASE, "p2/answer": grade(review=True)}))
    assert reasons(decision) == ["unresolved_review"]


def test_new_regressions_only_count_cases_the_baseline_passed() -> None:
    before = {**BASE, "p0/file": grade(task=False, quality=False)}
    after = {**BASE, "p0/file": grade(task=False, quality=False), "p1/answer": grade(quality=False)}
    decision = decide(RULES, lab_report(before), lab_report(after))
    assert reasons(decision) == ["new_answer_quality_regression"]
    assert [f["id"] for f in decision.failures] == ["p0/file", "p1/answer"]
    assert [f["new"] for f in decision.failures] == [False, True]


def test_interval_below_the_margin_blocks_and_the_margin_is_the_policys() -> None:
    after = {**BASE, "p0/file": grade(task=False)}  # one group of four drops by one half
    decision = decide(RULES, lab_report(BASE), lab_report(after))
    assert "paired_interval_below_noninferiority_margin" in reasons(decision)
    lenient = RULES.model_copy(update={"paired": PairedRule(margin=-0.5), "block_on_task_regression": False})
    assert decide(lenient, lab_report(BASE), lab_report(after)).decision is Verdict.GO


def test_seed_and_resamples_come_from_the_policy_and_reach_the_decision() -> None:
    rule = RULES.model_copy(update={"paired": PairedRule(seed=3, resamples=50, confidence=0.9)})
    stats = decide(rule, lab_report(BASE), lab_report(BASE)).statistics
    assert stats is not None
    assert (stats["seed"], stats["resamples"], stats["confidence"]) == (3, 50, 0.9)
    assert stats["estimand"] == "equal_weight_mean_of_group_task_success_differences"


def test_policies_without_release_rules_are_unchanged() -> None:
    decision = decide(Policy(), lab_report(BASE), lab_report({**BASE, "p0/file": grade(safety=False)}))
    assert decision.decision is Verdict.GO and decision.statistics is None and decision.failures == ()


@pytest.mark.parametrize("render", [lambda d: render_decision(d), lambda d: render_markdown(d)])
def test_renderers_show_the_interval_and_the_failures(render: Any) -> None:
    after = {**BASE, "p0/file": grade(task=False, reason="service.cfg is unchanged")}
    text = render(decide(RULES, lab_report(BASE), lab_report(after)))
    assert "paired difference -0.125, 95% interval [" in text
    assert "p0/file: service.cfg is unchanged (new)" in text


@pytest.mark.parametrize("body", [{"paired": {"margin": -2}}, {"paired": {"resamples": 0}},
                                  {"paired": {"confidence": 1.0}}, {"paired": {"seeds": 1}},
                                  {"require_complete_pairs": "sometimes"}])
def test_bad_release_rules_are_refused(body: dict[str, Any]) -> None:
    from evalkit.core.errors import ConfigError
    from evalkit.core.policy import policy_from_mapping

    with pytest.raises(ConfigError, match=r"^p\.yaml: 'paired|^p\.yaml: unknown key|^p\.yaml: 'require"):
        policy_from_mapping(body, "p.yaml")


def test_ignored_regressions_are_listed_but_decide_nothing() -> None:
    after = {**BASE, "p0/file": grade(task=False)}
    policy = Policy(regressions="ignore")
    decision = decide(policy, lab_report(BASE), lab_report(after))
    assert decision.decision is Verdict.GO and decision.regressed == ("t.py::test_task[p0/file]",)
    assert decide(Policy(), lab_report(BASE), lab_report(after)).decision is Verdict.BLOCK
