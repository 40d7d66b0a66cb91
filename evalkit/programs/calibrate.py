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
file: check -> case -> pass or fail), and `calibrate_judges` sets each check's verdicts in that run report against
the labels (the same confusion matrix, plus agreement and Cohen's kappa). The replay of a recording always gives
the judge's same verdicts, so the calibration is repeatable; the labels say as much as their labeller and cases.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from evalkit.core.errors import InputError
from evalkit.programs.grade import Grade

__all__ = ["JUDGE_KIND", "KIND", "calibrate", "calibrate_judges", "cohen_kappa", "confusion", "false_positive_rate",
           "parse_labels", "render", "render_judges"]

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


def parse_labels(data: Any, where: str) -> tuple[dict[str, dict[str, bool]], str | None]:
    """A labels file read (`labels: {check: {case: pass|fail}}`, optionally `recording:` naming the recording whose
    replies were labelled): the labels by check and case, and that recording; every mistake an InputError."""
    if not isinstance(data, dict) or not isinstance(data.get("labels"), dict) or set(data) - {"labels", "recording"}:
        raise InputError(f"{where}: a labels file holds `labels: {{CHECK: {{CASE: pass | fail}}}}` and optionally "
                         "`recording: PATH` (the recording whose replies were labelled)")
    recording = data.get("recording")
    if recording is not None and not isinstance(recording, str):
        raise InputError(f"{where}: recording must be the recording's path as the run report names it")
    out: dict[str, dict[str, bool]] = {}
    for check, cases in data["labels"].items():
        if not isinstance(cases, dict) or not cases:
            raise InputError(f"{where}: labels.{check} must map case ids to pass or fail")
        for case, label in cases.items():
            verdict = LABELS.get(label) if isinstance(label, str | bool) else None
            if verdict is None:
                raise InputError(f"{where}: labels.{check}.{case} is {label!r}; label each case pass or fail")
            out.setdefault(str(check), {})[str(case)] = verdict
    return out, recording


def calibrate_judges(outcomes: Mapping[str, str], messages: Mapping[str, str], repeats: Mapping[str, Any],
                     labels: Mapping[str, Mapping[str, bool]], where: str = "labels") -> dict[str, Any]:
    """How each labelled check's verdicts (its tests' outcomes in a run report: `checks.yaml::CHECK[case]`, or a
    hand-written `test_x[case]`) agree with the labels: the confusion matrix with passing as the positive class,
    the agreement (TP + TN) / n, Cohen's kappa, the false-positive rate, and each disagreement with the check's
    message. A labelled case the check skipped or errored on is listed as not judged, outside the counts. Pure."""
    by_test = {nodeid.rsplit("::", 1)[-1]: nodeid for nodeid in outcomes}
    checks: dict[str, Any] = {}
    for check, cases in labels.items():
        if not any(name.startswith(f"{check}[") for name in by_test):
            raise InputError(f"{where}: check {check} has no test in the run report (tests are named CHECK[case])")
        said: list[bool] = []
        truth: list[bool] = []
        disagree, unjudged = [], []
        for case, label in cases.items():
            nodeid = by_test.get(f"{check}[{case}]")
            if nodeid is None:
                raise InputError(f"{where}: {check}[{case}] is not in the run report; label only cases it ran")
            if nodeid in repeats:
                raise InputError(f"{where}: {nodeid} ran several samples; labels are about one reply, so calibrate "
                                 "a run with run.repeats=1")
            outcome = outcomes[nodeid]
            if outcome not in ("passed", "failed"):
                unjudged.append({"case": case, "outcome": outcome})
                continue
            said.append(outcome == "passed")
            truth.append(label)
            if said[-1] != label:
                disagree.append({"case": case, "label": "pass" if label else "fail", "check": outcome,
                                 "message": messages.get(nodeid)})
        matrix = confusion(said, truth)
        checks[check] = {**matrix, "judged": len(said), "agreement": round((matrix["tp"] + matrix["tn"]) / len(said), 6)
                         if said else None, "kappa": cohen_kappa(said, truth),
                         "false_positive_rate": false_positive_rate(matrix), "disagreements": disagree,
                         "not_judged": unjudged}
    return {"kind": JUDGE_KIND, "positive_class": "labelled pass", "checks": checks}


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
    lines = [f"judge calibration ({result['kind']})",
             f"{'check':<20} {'n':>3} {'TP':>3} {'FP':>3} {'TN':>3} {'FN':>3}  agreement  kappa  false-positive rate"]
    for name, m in result["checks"].items():
        shown = {k: "n/a" if m[k] is None else f"{m[k]:.2f}" for k in ("agreement", "kappa", "false_positive_rate")}
        lines.append(f"{name:<20} {m['judged']:>3} {m['tp']:>3} {m['fp']:>3} {m['tn']:>3} {m['fn']:>3}  "
                     f"{shown['agreement']:>9}  {shown['kappa']:>5}  {shown['false_positive_rate']}")
    for name, m in result["checks"].items():
        for d in m["disagreements"]:
            why = f": {d['message']}" if d.get("message") else ""
            lines.append(f"  - {name}[{d['case']}]: labelled {d['label']}, the check {d['check']}{why}")
        for u in m["not_judged"]:
            lines.append(f"  - {name}[{u['case']}]: not judged ({u['outcome']}), left out of the counts")
    return "\n".join(lines)
