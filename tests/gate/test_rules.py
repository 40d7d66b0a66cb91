"""The policy's rules as a list (evalkit.gate.rules): each finding's rule id, effect, tests and figures, and a rule
added in one place reaching the policy schema, the docs reference, policy-diff and the JUnit output."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from collections.abc import Iterator

import pytest
from conftest import report

from evalkit.core.policy import Policy, policy_schema
from evalkit.gate import rules
from evalkit.gate.compared import Compared
from evalkit.gate.decide import decide
from evalkit.gate.decision import Verdict
from evalkit.gate.findings import Effect, Finding
from evalkit.gate.policy_change import Pair, decide_again
from evalkit.records.report_reader import RunReport, report_from_mapping
from evalkit.render.junit import render_junit
from evalkit.render.policy_diff import render_policy_diff

BASE = {"test_a": "passed", "test_b": "passed", "test_crit": "passed", "test_known": "failed"}


def _reports(base: dict[str, str], cand: dict[str, str], **key: str) -> tuple[RunReport, RunReport]:
    return report_from_mapping(report(base), "base"), report_from_mapping(report(cand, **key), "cand")


def _by_rule(findings: tuple[Finding, ...]) -> dict[str, Finding]:
    return {f.rule: f for f in findings}


def test_each_comparison_finding_names_its_rule_effect_tests_and_figures() -> None:
    base, cand = _reports(BASE, BASE | {"test_a": "failed", "test_crit": "failed", "test_new": "error"})
    decision = decide(Policy(max_regressions=1, critical=("test_crit",), min_pass_rate=0.9), base, cand)
    found = _by_rule(decision.findings)
    assert set(found) == {"regression", "new_failing", "critical", "pass_rate"}
    regression = found["regression"]
    assert regression.effect is Effect.BLOCK
    assert regression.tests == ("test_triage.py::test_a", "test_triage.py::test_crit")
    assert regression.figures == {"regressed": 2, "allowed": 1}
    assert found["new_failing"].effect is Effect.REVIEW and found["new_failing"].tests == ("test_triage.py::test_new",)
    assert found["critical"].tests == ("test_triage.py::test_crit",) and found["critical"].figures == {"failing": 1}
    assert found["pass_rate"].figures == {"pass_rate": 0.2, "floor": 0.9}  # 1 of 5 tests passes
    assert decision.decision is Verdict.BLOCK
    # the sentences are the block findings' messages, in the rules' order
    assert decision.reasons == tuple(f.message for f in decision.findings if f.effect is Effect.BLOCK)


def test_a_policy_setting_changes_a_findings_effect_not_its_identity() -> None:
    base, cand = _reports(BASE, BASE | {"test_a": "failed"})
    blocked = _by_rule(decide(Policy(regressions="block"), base, cand).findings)["regression"]
    reviewed = decide(Policy(regressions="review"), base, cand)
    assert reviewed.decision is Verdict.REVIEW
    assert _by_rule(reviewed.findings)["regression"].effect is Effect.REVIEW
    assert blocked.identity[0::2] == _by_rule(reviewed.findings)["regression"].identity[0::2]
    assert "regression" not in _by_rule(decide(Policy(regressions="ignore"), base, cand).findings)


def test_metric_findings_are_told_apart_by_the_metric() -> None:
    base = report_from_mapping({**report(BASE), "metrics": {"recall": 0.9, "precision": 0.9}}, "base")
    cand = report_from_mapping({**report(BASE), "metrics": {"recall": 0.5}}, "cand")
    decision = decide(Policy(block_below={"recall": 0.8}, review_on_drop=("precision",)), base, cand)
    floor, drop = decision.findings
    assert (floor.rule, floor.effect, floor.subject) == ("metric_floor", Effect.BLOCK, "recall")
    assert floor.figures == {"metric": "recall", "value": 0.5, "floor": 0.8}
    assert (drop.rule, drop.effect, drop.subject) == ("metric_drop", Effect.REVIEW, "precision")
    assert drop.figures == {"metric": "precision", "before": 0.9, "after": None}


def test_incomparable_runs_are_refused_before_any_comparison_rule() -> None:
    base, cand = _reports(BASE, {"test_a": "failed"}, dataset_sha="other")
    decision = decide(Policy(), base, cand)
    assert decision.decision is Verdict.INCOMPARABLE
    assert [(f.rule, f.effect) for f in decision.findings] == [("incomparable", Effect.BLOCK)]
    review = decide(Policy(on_incomparable="review"), base, cand)
    assert review.decision is Verdict.REVIEW and review.findings[0].effect is Effect.REVIEW


def test_warnings_are_findings_that_never_decide() -> None:
    base, cand = _reports(BASE, BASE)
    decision = decide(Policy(critical=("test_typo",)), base, cand)
    assert decision.decision is Verdict.GO
    assert [(f.rule, f.effect, f.subject) for f in decision.findings] == [
        ("unmatched_critical", Effect.WARN, "test_typo")]


def test_decision_json_keeps_its_sentences_and_adds_the_findings() -> None:
    base, cand = _reports(BASE, BASE | {"test_b": "failed"})
    data = json.loads(json.dumps(decide(Policy(), base, cand).record().data()))
    assert data["reasons"] == ["1 regression(s); policy allows 0"]  # what readers of older files read
    assert data["findings"] == [{"rule": "regression", "effect": "block", "message": "1 regression(s); policy "
                                 "allows 0", "tests": ["test_triage.py::test_b"],
                                 "figures": {"regressed": 1, "allowed": 0}}]


def test_every_policy_field_is_read_by_a_rule_or_says_why_not() -> None:
    # fields that are not rules: the policy's own names, how review maps to an exit code, and the isolation a run
    # must have had, which refuses the run (exit 3, gate/isolation.py) before any rule decides it; and `rules`, which
    # turns other packages' rules on (tests/product/test_plugins.py)
    not_rules = {"name", "version", "review_fails", "require_isolation", "rules"}
    claimed = {name for rule in rules.RULES for name in rule.fields}
    assert claimed - set(Policy.model_fields) == set()
    assert set(Policy.model_fields) - claimed == not_rules
    assert len({rule.id for rule in rules.RULES}) == len(rules.RULES)
    assert all(rule.summary for rule in rules.RULES)


def test_a_rule_id_cannot_be_registered_twice() -> None:
    with pytest.raises(ValueError, match="'regression' is registered twice"):
        rules.rule("regression")(lambda c: ())


# --- a rule from outside: one policy field plus one function -------------------------------------------------

class ToyPolicy(Policy):
    """A policy with one field of its own, as a team adding a rule would write it."""

    forbidden_failures: tuple[str, ...] = ()
    """Test names that may never fail on the candidate, whatever the baseline did."""


def forbidden_failure(c: Compared) -> Iterator[Finding]:
    """A test the policy lists under `forbidden_failures` that does not pass blocks."""
    names = getattr(c.policy, "forbidden_failures", ())
    failing = tuple(test for test, outcome in c.candidate.outcomes.items()
                    if outcome == "failed" and test.split("::")[-1] in names)
    if failing:
        yield Finding("forbidden_failure", Effect.BLOCK, f"{len(failing)} forbidden test(s) fail", failing,
                      {"failing": len(failing)})


TOY = rules.Rule("forbidden_failure", ("forbidden_failures",), forbidden_failure, per_test="forbidden to fail")


def test_a_rule_registered_in_one_place_reaches_schema_docs_policy_diff_and_junit() -> None:
    base, cand = _reports({"test_a": "failed", "test_b": "passed"}, {"test_a": "failed", "test_b": "passed"})
    old, new = ToyPolicy(), ToyPolicy(forbidden_failures=("test_a",))
    with rules.registered(TOY):
        schema = json.loads(policy_schema(ToyPolicy))["properties"]["forbidden_failures"]
        assert schema["description"].startswith("Test names that may never fail")
        row = next(line for line in rules.reference().splitlines() if "`forbidden_failure`" in line)
        assert "`forbidden_failures`" in row and "does not pass blocks" in row

        decision = decide(new, base, cand)
        assert decision.decision is Verdict.BLOCK
        assert _by_rule(decision.findings)["forbidden_failure"].tests == ("test_triage.py::test_a",)

        diff = render_policy_diff("old.yaml", old, "new.yaml", new,
                                  decide_again(old, new, [Pair("b.json", "c.json", base, cand)]), "1 pair", [])
        assert "`forbidden_failures` `[]` → `['test_a']`" in diff
        assert "**GO → BLOCK**" in diff and "| - | 1 forbidden test(s) fail |" in diff

        xml = ET.fromstring(render_junit(decision, cand))
        failure = next(c for c in xml.iter("testcase") if c.get("name") == "test_a").find("failure")
        assert failure is not None and failure.get("type") == "forbidden_failure"
        assert failure.get("message", "").startswith("forbidden to fail")
        assert ("block forbidden_failure" in {p.get("value") for p in xml.iter("property")
                                              if p.get("name") == "evalkit.finding"})
    assert TOY not in rules.RULES  # gone again with the block: other tests see the shipped rules only
    assert decide(new, base, cand).decision is Verdict.GO
