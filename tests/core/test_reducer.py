"""Reducers (evalkit.core.reducer): how N samples' outcomes become a test's, read from checks.yaml, markers and run
reports; the sample shown follows the reducer (evalkit.run.sample_protocol), and a report whose outcome does not
follow its counts and reducer is refused (evalkit.records.report_reader)."""

from __future__ import annotations

import itertools

import pytest

from evalkit.core.errors import InputError
from evalkit.core.reducer import ALL, Reducer, parse_reducer
from evalkit.records.report_reader import report_from_mapping
from evalkit.run.sample_protocol import shown_sample


@pytest.mark.parametrize(("spelled", "name"), [
    ("all", "all"), ("majority", "majority"), ({"mean": 0.8}, "mean 0.8"), ({"at_least": 3}, "at_least 3"),
    ("mean 0.8", "mean 0.8"), ("at_least 3", "at_least 3"), ({"mean": 1}, "mean 1"),
])
def test_each_spelling_reads_and_names_itself(spelled, name):
    reducer = parse_reducer(spelled)
    assert reducer.name == name and parse_reducer(reducer.name) == reducer


@pytest.mark.parametrize(("spelled", "error"), [
    ("mean", r"reduce mean needs its number: reduce: \{mean: 0.8\}"),
    ("at_least", "needs its number"),
    ({"mean": 0}, "0 < T <= 1"), ({"mean": 1.5}, "0 < T <= 1"),
    ({"at_least": 0}, "at least 1"), ({"at_least": 2.5}, "whole number"), ({"at_least": True}, "not a reducer"),
    ("most", "not a reducer; use all, majority"), ({"mean": 0.5, "at_least": 2}, "not a reducer"), (3, "not a reducer"),
])
def test_anything_else_is_refused_naming_the_forms(spelled, error):
    with pytest.raises(ValueError, match=error):
        parse_reducer(spelled)


def direct(rule: str, value: float | None, passed: int, runs: int) -> bool:
    """The rules as the docs state them, counted here independently."""
    return {"all": passed == runs, "majority": passed > runs / 2,
            "mean": value is not None and passed / runs >= value,
            "at_least": value is not None and passed >= value}[rule]


@pytest.mark.parametrize("reducer", [ALL, Reducer("majority"), parse_reducer({"mean": 0.6}),
                                     parse_reducer({"mean": 1 / 3}), parse_reducer({"at_least": 2})])
def test_each_reducer_passes_exactly_the_counts_its_rule_says(reducer):
    for runs in range(1, 8):
        for passed in range(runs + 1):
            assert reducer.passes(passed, runs) == direct(reducer.rule, reducer.value, passed, runs), (passed, runs)


def test_majority_of_an_even_count_needs_more_than_half():
    assert not Reducer("majority").passes(2, 4) and Reducer("majority").passes(3, 4)


def test_the_shown_sample_follows_the_reducer_and_an_error_is_never_outvoted():
    outcomes = ["passed", "failed", "passed"]
    assert shown_sample(outcomes) == 1  # all: the first failing sample
    assert shown_sample(outcomes, Reducer("majority")) == 0
    assert shown_sample(["failed", "passed", "failed"], Reducer("majority")) == 0
    assert shown_sample(["failed", "passed", "failed"], parse_reducer({"at_least": 1})) == 1
    assert shown_sample(["passed", "error", "passed"], Reducer("majority")) == 1
    assert shown_sample(["skipped", "passed", "passed"], Reducer("majority")) == 1
    for combo in itertools.product(("passed", "failed", "skipped"), repeat=3):
        for reducer in (ALL, Reducer("majority"), parse_reducer({"at_least": 2})):
            shown = combo[shown_sample(list(combo), reducer)]
            assert (shown == "passed") == reducer.passes(combo.count("passed"), 3), (combo, reducer)


def report(outcome: str, passed: int, runs: int, reduce: str | None) -> dict[str, object]:
    repeats: dict[str, object] = {"passed": passed, "runs": runs}
    if reduce is not None:
        repeats["reduce"] = reduce
    return {"eval": {"dataset": "d@1", "dataset_sha": "a", "model": "m", "prompt_version": "v1", "prompt_sha": "p",
                     "judge_model": None},
            "tests": [{"nodeid": "checks.yaml::c[a]", "outcome": outcome, "case": "a", "repeats": repeats}]}


@pytest.mark.parametrize(("outcome", "passed", "runs", "reduce"), [
    ("passed", 3, 3, None), ("failed", 2, 3, None), ("passed", 2, 3, "majority"), ("failed", 1, 3, "majority"),
    ("passed", 3, 5, "at_least 3"), ("passed", 4, 5, "mean 0.8"), ("error", 2, 3, "majority"),
    ("skipped", 2, 3, "all"),
])
def test_the_reader_accepts_an_outcome_that_follows_its_counts(outcome, passed, runs, reduce):
    counts = report_from_mapping(report(outcome, passed, runs, reduce), "r").repeats["checks.yaml::c[a]"]
    assert (counts.passed, counts.runs, counts.reduce) == (passed, runs, reduce or "all")


@pytest.mark.parametrize(("outcome", "passed", "runs", "reduce"), [
    ("passed", 2, 3, None), ("failed", 3, 3, None), ("failed", 2, 3, "majority"), ("passed", 1, 3, "majority"),
    ("passed", 3, 5, "mean 0.8"), ("error", 3, 3, "majority"),
])
def test_the_reader_refuses_an_outcome_its_counts_contradict(outcome, passed, runs, reduce):
    with pytest.raises(InputError, match=rf"outcome '{outcome}' contradicts {passed} of {runs} samples passing "
                                         rf"under reduce {reduce or 'all'}"):
        report_from_mapping(report(outcome, passed, runs, reduce), "r")


def test_the_reader_refuses_a_reducer_it_does_not_know():
    with pytest.raises(InputError, match=r"'repeats.reduce' 'most' is not a reducer"):
        report_from_mapping(report("passed", 2, 3, "most"), "r")


def sampled(tests: dict[str, tuple[str, int, int, str]]) -> dict[str, object]:
    return {"eval": {"dataset": "d@1", "dataset_sha": "a", "model": "m", "prompt_version": "v1", "prompt_sha": "p",
                     "judge_model": None},
            "tests": [{"nodeid": f"checks.yaml::{name}[{case}]", "outcome": outcome, "case": case,
                       "repeats": {"passed": k, "runs": n, "reduce": reduce}}
                      for name, (outcome, k, n, reduce) in tests.items() for case in ("a",)]}


def test_the_gate_reads_the_counts_for_regressions_and_the_reduced_outcome_for_critical_checks():
    from evalkit.core.policy import Policy
    from evalkit.gate.decide import decide
    from evalkit.gate.repeats import fisher_lower_p

    baseline = report_from_mapping(sampled({"most": ("passed", 20, 20, "majority"),
                                            "every": ("passed", 20, 20, "all")}), "baseline")
    dropped = report_from_mapping(sampled({"most": ("passed", 11, 20, "majority"),  # still a majority: passed
                                           "every": ("passed", 20, 20, "all")}), "candidate")
    policy = Policy.model_validate({"name": "p", "critical": ["most"]})
    decision = decide(policy, baseline, dropped)
    # the counts decide a regression, not the outcome: 20/20 -> 11/20 is a drop Fisher's test finds (p < 0.001,
    # under Holm's alpha/2 / 2), though the reduced outcome passed on both sides
    assert fisher_lower_p(20, 20, 11, 20) < policy.repeats.alpha / 2 / 2
    assert decision.regressed == ("checks.yaml::most[a]",)
    assert decision.critical_failures == ()  # the reduced outcome passed: the critical rule reads that
    failed = report_from_mapping(sampled({"most": ("failed", 5, 10, "majority"),
                                          "every": ("passed", 10, 10, "all")}), "candidate")
    assert decide(policy, baseline, failed).critical_failures == ("checks.yaml::most[a]",)
