"""`evalkit calibrate suite=NAME [--out FILE]`: run a suite's graders on its authored counterexamples;
with `--report REPORT`, measure its judged checks against human labels of the replies that run judged.

A suite opts in with `calibration.py` beside its tests, defining `GRADERS` (name -> grader(case, reference,
response, artifacts) returning a bool or an evalkit.Grade) and `examples()` (each with `id`, `case`,
`reference`, `response`, `artifacts`, `reference_pass` and `why`). Every grader runs on every example; the
result is each grader's confusion matrix with passing as the positive class, its false-positive rate
FP / (FP + TN), and the per-example verdicts with the contract grade's details.

The examples are authored, so the numbers describe those traps only: not a human-agreement study, not a
population error rate.

The judged checks of checks.yaml (faithfulness, answer-relevancy, g-eval, llm-rubric, pairwise) call a model, so
they are calibrated on a run rather than on examples: a person labels the replies a recorded run judged (a labels
file: check -> case -> pass or fail, or the level the judge scores on), and `calibrate_judges` sets each check's
verdicts in that run report against the labels (the confusion matrix, agreement and Cohen's kappa for pass/fail;
weighted kappa, quadratic unless asked, for levels). Runs with repeats are calibrated on every verdict the judge
gave sample 0's reply. The result names the judge it measured (`judge_model`, `judge_sha`): a gate's
`min_judge_kappa` trusts it for that judge only (evalkit.records.calibration). The replay of a recording always
gives the judge's same verdicts, so the calibration is repeatable; the labels say as much as their labeller and
cases.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from evalkit.core.errors import InputError
from evalkit.judging.agreement import Weights, weighted_kappa
from evalkit.programs.grade import Grade
from evalkit.records.report import JudgedCheck

__all__ = ["JUDGE_KIND", "KIND", "Label", "calibrate", "calibrate_judges", "cohen_kappa", "confusion",
           "false_positive_rate", "parse_labels", "render", "render_judges"]

KIND = "authored counterexamples with mechanically checkable reference verdicts; not a human or model-judge study"
_EXAMPLE_KEYS = ("id", "case", "reference", "response", "artifacts", "reference_pass")


def confusion(predicted: Sequence[bool], reference: Sequence[bool]) -> dict[str, int]:
    """Counts with passing as the positive class: tp, fp (a bad case let through), tn, fn (a good one refused)."""
    out = {"tp": 0, "fp": 0, "tn": 0, "fn": 0}
    for said, truth in zip(predicted, reference, strict=True):
        out[("t" if said == truth else "f") + ("p" if said else "n")] += 1
    return out


def false_positive_rate(matrix: Mapping[str, int]) -> float | None:
    """FP / (FP + TN): the share of should-fail examples let through; None without any should-fail example."""
    negatives = matrix["fp"] + matrix["tn"]
    return matrix["fp"] / negatives if negatives else None


def calibrate(graders: Mapping[str, Callable[..., Any]], examples: Sequence[Mapping[str, Any]],
              where: str = "calibration") -> dict[str, Any]:
    """Run every grader on every example (pure apart from what the graders do)."""
    if not graders:
        raise InputError(f"{where}: GRADERS is empty; name at least one grader")
    if not examples:
        raise InputError(f"{where}: examples() returned none")
    cases = []
    for index, example in enumerate(examples):
        missing = [k for k in _EXAMPLE_KEYS if k not in example]
        if missing or not isinstance(example.get("reference_pass"), bool):
            raise InputError(f"{where}: example {index} ({example.get('id', '?')}) needs {', '.join(_EXAMPLE_KEYS)} "
                             "with a boolean reference_pass")
        verdicts: dict[str, bool] = {}
        details: dict[str, Any] = {}
        for name, grader in graders.items():
            result = grader(example["case"], example["reference"], example["response"], example["artifacts"])
            if isinstance(result, Grade):
                verdicts[name], details[name] = result.passed, result.to_json()
            elif isinstance(result, bool):
                verdicts[name] = result
            else:
                raise InputError(f"{where}: grader {name} returned {type(result).__name__} for {example['id']}; "
                                 "a grader returns a bool or an evalkit.Grade")
        cases.append({"id": example["id"], "reference_pass": example["reference_pass"], "why": example.get("why"),
                      "verdicts": verdicts, "details": details})
    matrices = {name: confusion([c["verdicts"][name] for c in cases], [c["reference_pass"] for c in cases])
                for name in graders}
    return {"kind": KIND, "positive_class": "should pass", "examples": len(cases),
            "graders": {name: {**m, "false_positive_rate": false_positive_rate(m)} for name, m in matrices.items()},
            "cases": cases}

def render(result: Mapping[str, Any]) -> str:
    lines = [f"calibration: {result['examples']} examples ({result['kind']})",
             f"{'grader':<10} {'TP':>3} {'FP':>3} {'TN':>3} {'FN':>3}  false-positive rate (FP / (FP + TN))"]
    for name, m in result["graders"].items():
        rate = "n/a" if m["false_positive_rate"] is None else f"{m['false_positive_rate']:.2f}"
        lines.append(f"{name:<10} {m['tp']:>3} {m['fp']:>3} {m['tn']:>3} {m['fn']:>3}  {rate}")
    lines.append("examples:")
    for case in result["cases"]:
        said = ", ".join(f"{name} {'pass' if v else 'fail'}" for name, v in case["verdicts"].items())
        why = f" ({case['why']})" if case.get("why") else ""
        lines.append(f"  - {case['id']}: should {'pass' if case['reference_pass'] else 'fail'}; {said}{why}")
    return "\n".join(lines)



JUDGE_KIND = ("human labels on recorded replies: how often the judged checks agree with them; as good as the labels "
              "and as broad as the labelled cases, not a population error rate")
LABELS = {"pass": True, "fail": False, True: True, False: False}
Label = bool | int
"""pass (True) or fail (False), or an ordinal level (an int: the score a ready-made judge gives, 1 to 5)."""


def parse_labels(data: Any, where: str) -> tuple[dict[str, dict[str, Label]], str | None]:
    """A labels file read (`labels: {check: {case: pass|fail|LEVEL}}`, optionally `recording:` naming the recording
    whose replies were labelled): the labels by check and case, and that recording; every mistake an InputError.
    A check's labels are all pass/fail or all levels (integers, for ordinal checks such as `faithfulness`)."""
    if not isinstance(data, dict) or not isinstance(data.get("labels"), dict) or set(data) - {"labels", "recording"}:
        raise InputError(f"{where}: a labels file holds `labels: {{CHECK: {{CASE: pass | fail | LEVEL}}}}` and "
                         "optionally `recording: PATH` (the recording whose replies were labelled)")
    recording = data.get("recording")
    if recording is not None and not isinstance(recording, str):
        raise InputError(f"{where}: recording must be the recording's path as the run report names it")
    out: dict[str, dict[str, Label]] = {}
    for check, cases in data["labels"].items():
        if not isinstance(cases, dict) or not cases:
            raise InputError(f"{where}: labels.{check} must map case ids to pass or fail, or to a level")
        for case, label in cases.items():
            verdict = LABELS.get(label) if isinstance(label, str | bool) else \
                label if isinstance(label, int) else None
            if verdict is None:
                raise InputError(f"{where}: labels.{check}.{case} is {label!r}; label each case pass or fail, or "
                                 "with the level (an integer) the check's judge scores on")
            out.setdefault(str(check), {})[str(case)] = verdict
        kinds = {type(label) is bool for label in out[str(check)].values()}
        if len(kinds) > 1:
            raise InputError(f"{where}: labels.{check} mixes pass/fail with levels; label every case of a check "
                             "the same way")
    return out, recording


def calibrate_judges(outcomes: Mapping[str, str], messages: Mapping[str, str], repeats: Mapping[str, Any],
                     labels: Mapping[str, Mapping[str, Label]], where: str = "labels",
                     judges: Mapping[str, JudgedCheck] | None = None,
                     weights: Weights = "quadratic") -> dict[str, Any]:
    """How each labelled check's verdicts agree with the labels. Pure.

    Where the run report keeps the check's verdicts (its `judges` block), every verdict the judge gave the
    labelled reply is set against the label: with `judge.repeats=K`, K verdicts per case, so a judge that flips
    cannot earn agreement it does not show; with `run.repeats=N`, the reply of sample 0 (the one every page shows
    as the case's output). Pass/fail labels give the confusion matrix with passing as the positive class, the
    agreement (TP + TN) / n, Cohen's kappa and the false-positive rate; level labels (integers) give the exact
    agreement and the weighted kappa (`weights`, quadratic unless asked) over the judge's scores. A report without
    the block (written before it was kept) is read by its tests' outcomes (`checks.yaml::CHECK[case]`, or a
    hand-written `test_x[case]`), pass/fail only and one sample only. A labelled case the check skipped, errored
    on, or whose judge answered without a verdict, is listed as not judged, outside the counts."""
    by_test = {nodeid.rsplit("::", 1)[-1]: nodeid for nodeid in outcomes}
    checks: dict[str, Any] = {}
    for check, cases in labels.items():
        if not any(name.startswith(f"{check}[") for name in by_test):
            raise InputError(f"{where}: check {check} has no test in the run report (tests are named CHECK[case])")
        block = (judges or {}).get(check)
        levels = not all(isinstance(label, bool) for label in cases.values())
        if levels and block is None:
            raise InputError(f"{where}: labels.{check} are levels, and the run report keeps no verdicts of check "
                             f"{check} to set them against (only the judged checks of checks.yaml, in reports of "
                             "this evalkit); label it pass or fail, or run the suite again")
        said: list[Any] = []
        truth: list[Any] = []
        disagree, unjudged = [], []
        for case, label in cases.items():
            nodeid = by_test.get(f"{check}[{case}]")
            if nodeid is None:
                raise InputError(f"{where}: {check}[{case}] is not in the run report; label only cases it ran")
            outcome = outcomes[nodeid]
            given = _verdicts(block, case, levels, check, where) if block is not None else None
            if given is None:
                if nodeid in repeats:
                    raise InputError(f"{where}: {nodeid} ran several samples and the report keeps no verdicts per "
                                     "sample to calibrate; run the suite again with this evalkit")
                given = [outcome == "passed"] if outcome in ("passed", "failed") else []
            if outcome not in ("passed", "failed") or not given:
                unjudged.append({"case": case, "outcome": outcome if outcome not in ("passed", "failed")
                                 else "no verdict in the judge's answer"})
                continue
            said += given
            truth += [label] * len(given)
            wrong = [v for v in given if v != label]
            if wrong:
                several = {"verdicts": [_shown(v) for v in given]} if len(given) > 1 or levels else {}
                disagree.append({"case": case, "label": _shown(label), "check": outcome, **several,
                                 "message": messages.get(nodeid)})
        checks[check] = _figures(said, truth, levels, weights) | {"disagreements": disagree, "not_judged": unjudged}
    return {"kind": JUDGE_KIND, "positive_class": "labelled pass", "weights": weights, "checks": checks}


def _verdicts(block: JudgedCheck, case: str, levels: bool, check: str, where: str) -> list[Any] | None:
    """The verdicts the judge gave sample 0's reply of `case`: passes, or scores for level labels; None when the
    block does not hold the case (read by the test's outcome instead)."""
    if levels:
        given = (block.verdicts.get(case) or {}).get("0")
        if given is None:
            return None
        scores = [_score(v) for v in given]
        if any(v is not None and s is None for v, s in zip(given, scores, strict=True)):
            raise InputError(f"{where}: labels.{check} are levels, and check {check}'s judge gives "
                             f"{', '.join(sorted({str(v) for v in given}))}, not scores; label it pass or fail")
        return [s for s in scores if s is not None]
    passed = (block.passed.get(case) or {}).get("0")
    return None if passed is None else list(passed)


def _score(verdict: str | None) -> int | None:
    """`score 4` -> 4; anything else None."""
    if verdict is None or not verdict.startswith("score "):
        return None
    try:
        return int(float(verdict.removeprefix("score ")))
    except ValueError:
        return None


def _shown(value: Any) -> Any:
    return ("pass" if value else "fail") if isinstance(value, bool) else value


def _figures(said: list[Any], truth: list[Any], levels: bool, weights: Weights) -> dict[str, Any]:
    """A check's agreement figures: over levels, exact agreement and weighted kappa; over pass/fail, the confusion
    matrix, agreement, Cohen's kappa and the false-positive rate."""
    agreement = round(sum(a == b for a, b in zip(said, truth, strict=True)) / len(said), 6) if said else None
    if levels:
        return {"judged": len(said), "agreement": agreement, "kappa": weighted_kappa(said, truth, weights),
                "kappa_kind": f"weighted-{weights}"}
    matrix = confusion(said, truth)
    return {**matrix, "judged": len(said), "agreement": agreement, "kappa": cohen_kappa(said, truth),
            "kappa_kind": "cohen", "false_positive_rate": false_positive_rate(matrix)}


def cohen_kappa(said: Sequence[bool], truth: Sequence[bool]) -> float | None:
    """Cohen's kappa of two pass/fail raters: agreement beyond what their pass rates give by chance; None when
    chance agreement is total (both rate every case the same way) or nothing was rated."""
    n = len(said)
    if n == 0:
        return None
    observed = sum(a == b for a, b in zip(said, truth, strict=True)) / n
    yes_a, yes_b = sum(said) / n, sum(truth) / n
    chance = yes_a * yes_b + (1 - yes_a) * (1 - yes_b)
    return None if chance == 1 else round((observed - chance) / (1 - chance), 6)


def render_judges(result: Mapping[str, Any]) -> str:
    judge = result.get("judge") or {}
    lines = [f"judge calibration ({result['kind']})"]
    if judge:
        lines.append(f"judge: {judge.get('model')}@{judge.get('sha')} (a gate's min_judge_kappa holds only for it)")
    lines.append(f"{'check':<20} {'n':>3} {'TP':>3} {'FP':>3} {'TN':>3} {'FN':>3}  agreement  kappa  "
                 "false-positive rate")
    for name, m in result["checks"].items():
        shown = {k: "n/a" if m.get(k) is None else f"{m[k]:.2f}" for k in ("agreement", "kappa",
                                                                             "false_positive_rate")}
        counts = " ".join(f"{'-' if m.get(k) is None else m[k]:>3}" for k in ("tp", "fp", "tn", "fn"))
        kind = "" if m.get("kappa_kind", "cohen") == "cohen" else f" ({m['kappa_kind']}, over levels)"
        lines.append(f"{name:<20} {m['judged']:>3} {counts}  {shown['agreement']:>9}  {shown['kappa']:>5}  "
                     f"{shown['false_positive_rate']}{kind}")
    for name, m in result["checks"].items():
        for d in m["disagreements"]:
            why = f": {d['message']}" if d.get("message") else ""
            said = d.get("verdicts")
            verdicts = f" (verdicts {', '.join(str(v) for v in said)})" if said and len(said) > 1 else ""
            lines.append(f"  - {name}[{d['case']}]: labelled {d['label']}, the check {d['check']}{verdicts}{why}")
        for u in m["not_judged"]:
            lines.append(f"  - {name}[{u['case']}]: not judged ({u['outcome']}), left out of the counts")
    return "\n".join(lines)
