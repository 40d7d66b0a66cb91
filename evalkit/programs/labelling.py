"""What a reviewer labels on a case, and which cases to label first.

`label_targets(case)`: every check of the case takes `pass` or `fail`; a number the judge rated on levels takes a
level: a rubric criterion (`rubric.<criterion>`, levels 0 to 2, evalkit.judging.rubric) and a ready-made judge's
score (`<check>.score`, levels 1 to 5, evalkit.judging.ready_judges). The run explorer offers exactly these, and
`evalkit review --labels` refuses any other.

`unsure(report)`: how sure the judge was of each case, as a margin from 0 (a coin toss) to 1 (nowhere near), with
the reason in words, for the explorer's queue:
- samples that disagreed: a check sampled several times whose samples did not all agree (or, where the report's
  tests do not name their case, the case's own samples: its `repeats`); its margin is how far its pass share is
  from one half (|passed / runs - 1/2| x 2);
- a score near the threshold: a judge's score (`<check>.score`) against the boundary the run's own verdicts show,
  halfway between the highest score of a failed verdict and the lowest of a passed one (the report does not carry
  the check's `pass_at`; this boundary equals `pass_at - 1/2` when the run has a case at `pass_at` and one below
  it); its margin is the distance divided by half the scale's span (2 on 1 to 5), at most 1.
A case's margin is its smallest; a case with neither signal has none and queues after those that have one.
Pure.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from evalkit.judging.ready_judges import LEVELS as SCORE_LEVELS
from evalkit.judging.rubric import LEVELS as RUBRIC_LEVELS
from evalkit.judging.rubric import METRIC_PREFIX
from evalkit.records.report_reader import RunReport

__all__ = ["PASS_FAIL", "SCORE_SUFFIX", "Unsure", "label_targets", "unsure"]

PASS_FAIL: tuple[str, ...] = ("pass", "fail")
SCORE_SUFFIX = ".score"
"""A ready-made judge's score of a check, as the case's metrics name it: `<check>.score`."""


@dataclass(frozen=True)
class Unsure:
    """How sure the judge was of one case: the margin (0 a coin toss, 1 nowhere near) and why, in words."""

    margin: float
    why: str


def label_targets(case: Mapping[str, Any]) -> dict[str, tuple[str, ...] | tuple[int, ...]]:
    """What the case can be labelled on, by check id: `pass`/`fail` for each check, the levels for each rated
    number (in the order of the case's checks, then its metrics)."""
    checks = _mapping(case.get("checks"))
    out: dict[str, tuple[str, ...] | tuple[int, ...]] = {str(name): PASS_FAIL for name in checks}
    for name in _mapping(case.get("metrics")):
        name = str(name)
        if name.startswith(METRIC_PREFIX) and len(name) > len(METRIC_PREFIX):
            out[name] = RUBRIC_LEVELS
        elif name.endswith(SCORE_SUFFIX) and name.removesuffix(SCORE_SUFFIX) in checks:
            out[name] = SCORE_LEVELS
    return out


def unsure(report: RunReport) -> dict[str, Unsure]:
    """Each case with a sign of the judge's doubt, by case id: its smallest margin and the reason for it."""
    found: dict[str, list[Unsure]] = {}
    for nodeid, counts in report.repeats.items():
        if counts.case is None or counts.runs < 2 or counts.passed in (0, counts.runs):
            continue
        margin = abs(counts.passed / counts.runs - 0.5) * 2
        check = nodeid.split("::")[-1].split("[", 1)[0]
        found.setdefault(counts.case, []).append(
            Unsure(round(margin, 6), f"{check}: samples disagreed, {counts.passed} of {counts.runs} passed"))
    scores, boundaries, samples = _scores(report.cases)
    for case_id, (passed, runs) in samples.items():
        if case_id not in found:  # a check's own samples say more, where the report has them
            found[case_id] = [Unsure(round(abs(passed / runs - 0.5) * 2, 6),
                                     f"the case's samples disagreed, {passed} of {runs} passed")]
    span = (max(SCORE_LEVELS) - min(SCORE_LEVELS)) / 2
    for case_id, check, score in scores:
        boundary = boundaries[check]
        found.setdefault(case_id, []).append(Unsure(
            round(min(1.0, abs(score - boundary) / span), 6),
            f"{check}{SCORE_SUFFIX} {score:g}, the run's pass/fail boundary {boundary:g}"))
    return {case: min(signs, key=lambda sign: sign.margin) for case, signs in found.items()}


def _scores(cases: Any) -> tuple[list[tuple[str, str, float]], dict[str, float], dict[str, tuple[int, int]]]:
    """Read in one pass over the cases (a large report's cases are decoded as they are read): every judged score
    (case id, check, score); each scored check's boundary, halfway between its highest failing and lowest passing
    score in the run, or half a level beyond the one side the run shows; and each case whose own samples split
    (passed, runs)."""
    scores: list[tuple[str, str, float]] = []
    low_pass: dict[str, float] = {}
    high_fail: dict[str, float] = {}
    samples: dict[str, tuple[int, int]] = {}
    for case in cases:
        counts = _mapping(case.get("repeats"))
        passed, runs = counts.get("passed"), counts.get("runs")
        if type(passed) is int and type(runs) is int and 0 < passed < runs:
            samples[str(case.get("id"))] = (passed, runs)
        checks, metrics = _mapping(case.get("checks")), _mapping(case.get("metrics"))
        for name, outcome in checks.items():
            score = metrics.get(f"{name}{SCORE_SUFFIX}")
            if not isinstance(score, int | float) or isinstance(score, bool):
                continue
            scores.append((str(case.get("id")), str(name), float(score)))
            if outcome == "passed":
                low_pass[name] = min(score, low_pass.get(name, score))
            elif outcome == "failed":
                high_fail[name] = max(score, high_fail.get(name, score))
    boundaries = {}
    for name in low_pass.keys() | high_fail.keys():
        low, high = low_pass.get(name), high_fail.get(name)
        if low is not None and high is not None:
            boundaries[name] = (low + high) / 2
        else:
            boundaries[name] = low - 0.5 if low is not None else high + 0.5  # type: ignore[operator]
    return [score for score in scores if score[1] in boundaries], boundaries, samples


def _mapping(value: Any) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}
