"""What a decision could have detected: the figures of evalkit.gate.detectable checked against independent
computations (the normal condition solved by scanning, exact binomial power summed here), their power checked by
simulation with a fixed seed, and the figures in decide(), the rule `detectable_drop` and every rendering."""

from __future__ import annotations

import math
import subprocess
import sys
from pathlib import Path
from statistics import NormalDist

import numpy as np
import pytest
from conftest import PROJECT_ROOT, evalkit_env

from evalkit.core.policy import PairedRule, Policy, RepeatsRule, policy_sha256
from evalkit.gate.decide import decide
from evalkit.gate.decision import Verdict
from evalkit.gate.detectable import (
    cases_needed,
    counted_spread,
    fewest_falling,
    one_test_drop,
    one_test_repeats,
    repeats_needed,
    spread,
    suite_drop,
)
from evalkit.gate.repeats import fisher_lower_p, min_fisher_p, repeats_for_any_outcome, sign_flip_p
from evalkit.gate.rules import rules_for
from evalkit.records.report_reader import RunReport, report_from_mapping
from evalkit.render.junit import render_junit
from evalkit.render.markdown import render_markdown
from evalkit.render.report_page import render_report_html
from evalkit.render.text import render_decision

Z = NormalDist()


def _binomial_at_least(count: int, runs: int, rate: float) -> float:
    return 1 - sum(math.comb(runs, k) * rate ** k * (1 - rate) ** (runs - k) for k in range(count))


def _normal_condition(drop: float, units: int, sd: float, level: float, power: float) -> bool:
    """The paired normal approximation written out again: a drop d over G units is caught when
    d sqrt(G) >= z(1 - level) sqrt(s^2 + d) + z(power) sqrt(s^2 + d (1 - d))."""
    return drop * math.sqrt(units) >= (Z.inv_cdf(1 - level) * math.sqrt(sd ** 2 + drop)
                                       + Z.inv_cdf(power) * math.sqrt(sd ** 2 + drop * (1 - drop)))


@pytest.mark.parametrize(("units", "sd"), [(400, 0.0), (400, 0.3), (2000, 0.15), (60, 0.5), (20, 0.0)])
def test_suite_drop_is_where_both_conditions_first_hold(units: int, sd: float) -> None:
    drop = suite_drop(units, sd, level=0.025, power=0.8)
    assert drop is not None
    # scans on a grid of 1e-4: the normal condition, and the floor of six whole units falling with 80 % chance;
    # the figure is the later of the two
    grid = [d / 10_000 for d in range(1, 10_001)]
    normal = next(d for d in grid if _normal_condition(d, units, sd, 0.025, 0.8))
    floor = next(d for d in grid if _binomial_at_least(6, units, d) >= 0.8)
    assert max(normal, floor) - 1e-4 <= drop <= max(normal, floor)


def test_small_suites_are_held_to_the_exact_floor_of_whole_cases_falling() -> None:
    # a sign-flip test sees k equal falls and nothing else at p = 2**-k: six cases must fall for 0.025
    assert fewest_falling(0.025) == 6 and fewest_falling(0.03125) == 6 and fewest_falling(0.05) == 5
    drop = suite_drop(20, 0.0, level=0.025, power=0.8)
    assert drop is not None and _normal_condition(drop - 0.01, 20, 0.0, 0.025, 0.8)  # the floor binds here
    assert _binomial_at_least(6, 20, drop) == pytest.approx(0.8, abs=1e-9)
    assert suite_drop(5, 0.0, level=0.025, power=0.8) is None  # five cases cannot show any drop
    assert suite_drop(0, 0.0, level=0.025, power=0.8) is None


def test_the_suite_figure_holds_its_power_under_simulation() -> None:
    """Drops at the figure, falling on whole cases (the case the figure is built for) and spread over every case,
    are caught by the suite guard's sign-flip test at least about as often as the stated power says."""
    rng = np.random.default_rng(20261202)
    units, level = 24, 0.025
    drop = suite_drop(units, 0.0, level=level, power=0.8)
    assert drop is not None
    caught = sum(sign_flip_p(range(units), -(rng.random(units) < drop).astype(float), seed=t, resamples=499) < level
                 for t in range(300))
    assert caught / 300 >= 0.74  # 0.8 less three standard errors of 300 draws
    # a broad drop with sampling noise: 10 samples per case at 0.9, the spread measured on A/A pairs
    runs, rate = 10, 0.9
    noise = (rng.binomial(runs, rate, (500, units)) - rng.binomial(runs, rate, (500, units))) / runs
    sd = float(noise.std(axis=1, ddof=1).mean())
    broad = suite_drop(units, sd, level=level, power=0.8)
    assert broad is not None and broad < rate
    hits = 0
    for trial in range(200):
        change = (rng.binomial(runs, rate - broad, units) - rng.binomial(runs, rate, units)) / runs
        hits += sign_flip_p(range(units), change, seed=trial, resamples=499) < level
    assert hits / 200 >= 0.8  # conservative: a broad drop adds less spread than one falling on whole cases


def test_and_the_guard_keeps_its_level_on_an_unchanged_system() -> None:
    rng = np.random.default_rng(7)
    blocks = 0
    for trial in range(400):
        change = (rng.binomial(10, 0.8, 30) - rng.binomial(10, 0.8, 30)) / 10
        blocks += sign_flip_p(range(30), change, seed=trial, resamples=499) < 0.025
    assert blocks / 400 <= 0.025 + 3 * math.sqrt(0.025 * 0.975 / 400)


@pytest.mark.parametrize("sd", [0.0, 0.2, 0.45])
def test_cases_needed_is_the_fewest_that_reach_the_target(sd: float) -> None:
    for target in (0.05, 0.1, 0.3):
        needed = cases_needed(target, sd, level=0.025, power=0.8)
        assert needed is not None
        reached = suite_drop(needed, sd, level=0.025, power=0.8)
        assert reached is not None and reached <= target + 1e-9
        fewer = suite_drop(needed - 1, sd, level=0.025, power=0.8)
        assert fewer is None or fewer > target
    # the closed form at a large size: G = ((z_a sqrt(s^2 + d) + z_b sqrt(s^2 + d (1 - d))) / d)^2, rounded up
    za, zb = Z.inv_cdf(0.975), Z.inv_cdf(0.8)
    closed = ((za * math.sqrt(0.04 + 0.05) + zb * math.sqrt(0.04 + 0.05 * 0.95)) / 0.05) ** 2
    assert cases_needed(0.05, 0.2, level=0.025, power=0.8) == math.ceil(closed)


def test_repeats_needed_shrinks_the_noise_until_the_target_is_reached() -> None:
    units, sd = 200, 0.6  # N = 1 of a flaky model: wide per-case changes
    now = suite_drop(units, sd, level=0.025, power=0.8)
    assert now is not None and now > 0.1
    repeats = repeats_needed(0.1, units, sd, 1, level=0.025, power=0.8)
    assert repeats is not None and repeats > 1
    at = suite_drop(units, sd / math.sqrt(repeats), level=0.025, power=0.8)
    before = suite_drop(units, sd / math.sqrt(repeats - 1), level=0.025, power=0.8)
    assert at is not None and at <= 0.1 + 1e-9 and before is not None and before > 0.1
    # twenty cases cannot see five points however often each is sampled: the drop may fall on one case
    assert repeats_needed(0.05, 20, sd, 1, level=0.025, power=0.8) is None


def test_spread_weights_units_equally_and_counts_agree_with_rows() -> None:
    found = spread(["a", "a", "b", "c"], [-1.0, 0.0, 0.0, 1.0])
    assert found.units == 3 and found.mean == pytest.approx(0.5 / 3)
    assert found.sd == pytest.approx(float(np.std([-0.5, 0.0, 1.0], ddof=1)))
    rows = [-1.0] * 7 + [1.0] * 2 + [0.0] * 91
    counted = counted_spread(100, 7, 2)
    assert counted.sd == pytest.approx(float(np.std(rows, ddof=1))) and counted.mean == pytest.approx(-0.05)


def _exact_power(base: int, base_runs: int, cand_runs: int, rate: float, level: float) -> float:
    """The probability the candidate's count is significant, summed over every count it can take."""
    return sum(math.comb(cand_runs, k) * rate ** k * (1 - rate) ** (cand_runs - k) for k in range(cand_runs + 1)
               if fisher_lower_p(base, base_runs, k, cand_runs) <= level)


@pytest.mark.parametrize(("base", "runs", "level"), [(10, 10, 0.025), (10, 10, 0.025 / 20), (8, 10, 0.025),
                                                      (20, 20, 0.001)])
def test_one_test_drop_is_the_exact_power_of_the_fisher_test(base: int, runs: int, level: float) -> None:
    drop = one_test_drop(base, runs, runs, level=level, power=0.8)
    assert drop is not None
    rate = base / runs
    assert _exact_power(base, runs, runs, rate - drop, level) == pytest.approx(0.8, abs=1e-6)
    assert _exact_power(base, runs, runs, rate - drop + 0.01, level) < 0.8


def test_one_test_drop_says_when_no_outcome_could_count() -> None:
    assert one_test_drop(3, 3, 3, level=0.025, power=0.8) is None  # p >= 1/20 at best
    assert one_test_drop(0, 10, 10, level=0.025, power=0.8) is None  # nothing to fall from
    repeats = one_test_repeats(0.5, 1.0, level=0.025 / 20, power=0.8)
    assert repeats is not None
    found = one_test_drop(repeats, repeats, repeats, level=0.025 / 20, power=0.8)
    assert found is not None and found <= 0.5
    assert one_test_repeats(0.001, 1.0, level=0.001, power=0.8) is None  # beyond a thousand samples


def test_repeats_for_any_outcome_is_where_the_best_outcome_clears_holm() -> None:
    needed = repeats_for_any_outcome(2, 0.025)
    assert needed is not None
    assert min_fisher_p(needed, needed) <= 0.025 / 2 < min_fisher_p(needed - 1, needed - 1)


KEY = {"suite": "s", "dataset_sha": "d", "judge_model": "j"}


def _cases_report(passed: list[bool], prompt: str, groups: list[str] | None = None) -> RunReport:
    cases = [{"id": f"c{i}", "status": "scored", "passed": ok} | ({"group": groups[i]} if groups else {})
             for i, ok in enumerate(passed)]
    tests = [{"nodeid": f"t.py::test_x[c{i}]", "outcome": "passed" if ok else "failed"} for i, ok in enumerate(passed)]
    return report_from_mapping({"eval": KEY | {"prompt_sha": prompt}, "tests": tests, "cases": cases}, f"{prompt}.json")


def test_a_go_says_what_it_could_have_detected() -> None:
    decision = decide(Policy(), _cases_report([True] * 20, "p1"), _cases_report([True] * 20, "p2"))
    assert decision.decision is Verdict.GO
    suite = decision.detectable and decision.detectable["suite"]
    assert suite and suite["metric"] == "case pass rate" and suite["units"] == 20 and suite["level"] == 0.025
    assert suite["drop"] == pytest.approx(suite_drop(20, 0.0, level=0.025, power=0.8))
    text = render_decision(decision)
    assert text.splitlines()[0] == "decision: GO"
    assert text.splitlines()[1] == ("GO: no regression; this run could detect drops of 37 points or more in the case "
                                    "pass rate (20 cases paired; one-sided level 0.025, power 80%)")
    assert decision.record().data()["detectable"]["suite"]["drop"] == suite["drop"]


def test_max_detectable_drop_turns_a_go_into_review_naming_the_cases_needed() -> None:
    policy = Policy(max_detectable_drop=0.3)
    decision = decide(policy, _cases_report([True] * 20, "p1"), _cases_report([True] * 20, "p2"))
    assert decision.decision is Verdict.REVIEW
    finding = next(f for f in decision.findings if f.rule == "detectable_drop")
    needed = cases_needed(0.3, 0.0, level=0.025, power=0.8)
    assert finding.figures["units_needed"] == needed and finding.figures["required"] == 0.3
    assert f"{needed} cases at these repeats ({needed - 20} more)" in finding.message
    assert "more repeats alone cannot reach it" in finding.message
    # enough cases, and it goes
    assert decide(policy, _cases_report([True] * needed, "p1"), _cases_report([True] * needed, "p2")).decision \
        is Verdict.GO
    rule = rules_for("detectable_drop")
    assert rule is not None and rule.fields == ("max_detectable_drop", "power")


def test_the_headline_is_clustered_by_the_cases_groups() -> None:
    groups = [f"g{i // 4}" for i in range(40)]  # 40 cases in 10 groups: 10 units
    decision = decide(Policy(), _cases_report([True] * 40, "p1", groups), _cases_report([True] * 40, "p2", groups))
    suite = decision.detectable and decision.detectable["suite"]
    assert suite and suite["unit"] == "group" and suite["units"] == 10 and suite["rows"] == 40
    assert suite["drop"] == suite_drop(10, 0.0, level=0.025, power=0.8)
    assert "10 groups paired, 40 cases" in render_decision(decision)


def test_graded_suites_pair_task_success_at_the_intervals_level() -> None:
    def graded(passes: list[bool], prompt: str) -> RunReport:
        cases = [{"id": f"c{i}", "group": f"g{i % 8}", "grade": {"status": "scored", "task_pass": ok}}
                 for i, ok in enumerate(passes)]
        return report_from_mapping({"eval": KEY | {"prompt_sha": prompt}, "cases": cases,
                                    "tests": [{"nodeid": "t.py::test_ok", "outcome": "passed"}]}, "g.json")

    policy = Policy(paired=PairedRule(confidence=0.9))
    decision = decide(policy, graded([True] * 32, "p1"), graded([True] * 31 + [False], "p2"))
    suite = decision.detectable and decision.detectable["suite"]
    assert suite and suite["metric"] == "task success" and suite["unit"] == "group" and suite["units"] == 8
    assert suite["level"] == pytest.approx(0.05)


def _repeated(rates: dict[str, tuple[int, int]], prompt: str) -> RunReport:
    tests = [{"nodeid": name, "case": name.split("[")[-1].rstrip("]"),
              "outcome": "passed" if passed == runs else "failed", "repeats": {"passed": passed, "runs": runs}}
             for name, (passed, runs) in rates.items()]
    return report_from_mapping({"eval": KEY | {"prompt_sha": prompt}, "tests": tests}, f"{prompt}.json")


def test_repeated_runs_state_each_tests_figure_and_list_disagreeing_samples() -> None:
    base = {f"test_x[c{i}]": (10, 10) for i in range(20)} | {"test_x[c0]": (9, 10)}
    cand = {f"test_x[c{i}]": (10, 10) for i in range(20)} | {"test_x[c1]": (7, 10)}
    decision = decide(Policy(), _repeated(base, "p1"), _repeated(cand, "p2"))
    found = decision.detectable
    assert found is not None and found["suite"]["metric"] == "pass fraction per case"
    assert found["suite"]["repeats"] == 10
    tests = found["tests"]
    assert tests["level"] == pytest.approx(0.025 / 20)
    assert tests["drops"]["test_x[c5]"] == one_test_drop(10, 10, 10, level=0.025 / 20, power=0.8)
    assert decision.repeats is not None and decision.repeats["disagree"] == {
        "test_x[c0]": {"candidate": [10, 10], "baseline": [9, 10]},
        "test_x[c1]": {"candidate": [7, 10], "baseline": [10, 10]}}
    text = render_decision(decision)
    assert "per test: each repeated test could show a drop of" in text
    assert "  - test_x[c1]: candidate 7/10, baseline 10/10" in text
    markdown = render_markdown(decision)
    assert "candidate 7/10, baseline 10/10" in markdown and "could detect drops of" in markdown


def test_too_few_repeats_names_the_repeats_needed() -> None:
    decision = decide(Policy(), _repeated({"test_x[a]": (3, 3), "test_x[b]": (3, 3)}, "p1"),
                      _repeated({"test_x[a]": (0, 3), "test_x[b]": (3, 3)}, "p2"))
    needed = repeats_for_any_outcome(2, 0.025)
    assert decision.decision is Verdict.REVIEW
    assert f"run at least {needed} repeats on each side (run.repeats={needed})" in decision.review_reasons[0]
    assert "per test: 2 test(s) could show no drop at these sample sizes" in render_decision(decision)


def test_an_incomparable_pair_states_no_figure_and_the_page_shows_it() -> None:
    other = report_from_mapping({"eval": KEY | {"dataset_sha": "other", "prompt_sha": "p2"},
                                 "tests": [{"nodeid": "t", "outcome": "passed"}]}, "o.json")
    base = _cases_report([True] * 20, "p1")
    assert decide(Policy(), base, other).detectable is None
    decision = decide(Policy(), base, _cases_report([True] * 20, "p2"))
    page = render_report_html(base, decision, base)
    assert 'class="detectable"' in page and "could detect drops of 37 points or more" in page


def test_the_new_policy_keys_keep_the_identity_of_policies_that_leave_them_alone() -> None:
    assert policy_sha256(Policy(power=0.8)) == policy_sha256(Policy())
    assert policy_sha256(Policy(max_detectable_drop=0.05)) != policy_sha256(Policy())
    assert policy_sha256(Policy(power=0.9)) != policy_sha256(Policy())
    assert policy_sha256(Policy(repeats=RepeatsRule(alpha=0.01))) != policy_sha256(Policy())


def test_policy_diff_and_junit_show_the_new_rule_with_no_change_of_their_own(tmp_path: Path) -> None:
    """A rule is a policy field plus one function: policy-diff and the JUnit output pick up `detectable_drop`."""
    old, new = tmp_path / "old.yaml", tmp_path / "new.yaml"
    old.write_text("max_regressions: 0\n")
    new.write_text("max_regressions: 0\nmax_detectable_drop: 0.2\n")
    baseline = "suites/issue_triage/runs/baseline.json"
    done = subprocess.run([str(Path(sys.executable).parent / "evalkit"), "policy-diff", str(old), str(new), "--pair",
                           baseline, baseline], cwd=PROJECT_ROOT, env=evalkit_env(), capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 0, done.stderr
    assert "review: detectable_drop: this run could detect drops of 58 points or more" in done.stdout
    assert "max_detectable_drop" in done.stdout
    decision = decide(Policy(max_detectable_drop=0.2), _cases_report([True] * 20, "p1"),
                      _cases_report([True] * 20, "p2"))
    assert 'value="review detectable_drop"' in render_junit(decision, _cases_report([True] * 20, "p2"))


def _judged_report(prompt: str, scores: list[float]) -> RunReport:
    """Every case fails (a judge that fails every reply), its judge's scores as a per-case metric."""
    cases = [{"id": f"c{i}", "status": "scored", "passed": False, "metrics": {"faithfulness.score": s},
              "checks": {"test_cites": "failed"}} for i, s in enumerate(scores)]
    tests = [{"nodeid": f"t.py::test_x[c{i}]", "outcome": "failed"} for i in range(len(scores))]
    return report_from_mapping({"eval": KEY | {"prompt_sha": prompt}, "tests": tests, "cases": cases}, f"{prompt}.json")


def test_a_metric_at_its_floor_says_it_cannot_show_a_drop_and_names_one_that_can() -> None:
    scores = [1.0, 2.0] * 10
    decision = decide(Policy(), _judged_report("p1", scores), _judged_report("p2", scores))
    suite = decision.detectable and decision.detectable["suite"]
    assert suite and suite["base"] == 0.0
    text = render_decision(decision)
    assert "could detect drops" not in text
    assert ("the case pass rate is 0 on the baseline (every case failed there), so it cannot show a drop "
            "(20 cases paired; one-sided level 0.025, power 80%); the metric faithfulness.score (mean 1.5 over 20 "
            "cases) differs across the cases and can show a change") in text
    # nothing that moves: said so, never a figure
    flat = decide(Policy(), _judged_report("p1", [1.0] * 20), _judged_report("p2", [1.0] * 20))
    assert "this run measured nothing that could fall" in render_decision(flat)
    # a policy asking for a detectable drop does not pass a floor on the strength of its arithmetic
    review = decide(Policy(max_detectable_drop=0.4), _judged_report("p1", scores), _judged_report("p2", scores))
    assert review.decision is Verdict.REVIEW
    finding = next(f for f in review.findings if f.rule == "detectable_drop")
    assert finding.figures["drop"] is None and "cannot show a drop" in finding.message

