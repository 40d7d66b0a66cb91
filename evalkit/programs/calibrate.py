"""`evalkit calibrate suite=NAME [--out FILE]`: run a suite's graders on its authored counterexamples.

A suite opts in with `calibration.py` beside its tests, defining `GRADERS` (name -> grader(case, reference,
response, artifacts) returning a bool or an evalkit.Grade) and `examples()` (each with `id`, `case`,
`reference`, `response`, `artifacts`, `reference_pass` and `why`). Every grader runs on every example; the
result is each grader's confusion matrix with passing as the positive class, its false-positive rate
FP / (FP + TN), and the per-example verdicts with the contract grade's details.

The examples are authored, so the numbers describe those traps only: not a human-agreement study, not a
population error rate.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from evalkit.core.errors import InputError
from evalkit.programs.grade import Grade

__all__ = ["KIND", "calibrate", "confusion", "false_positive_rate", "render"]

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

