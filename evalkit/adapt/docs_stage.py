"""Saved documentation stage reports as run reports: validate the metric rows, map them to outcomes, gate them.

A docs-assistant stage report scores every case on tool use, page-ID retrieval and judged metrics.
Each applicable check becomes one outcome `docs-stages::<case>::test_<check>`. These are mapped
metric outcomes, not a new pytest or judge run. Pure: text and data in, data out; no I/O, no clock.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from evalkit.core.errors import InputError
from evalkit.core.fingerprint import fingerprint
from evalkit.core.parsing import check_values, json_object, json_type, parse_json, refuse_lone_surrogates, unique_object
from evalkit.core.policy import Policy
from evalkit.gate.decide import decide
from evalkit.gate.decision import Decision
from evalkit.records.report_reader import report_from_mapping

__all__ = ["DOCS_STAGE_POLICY", "PROTOCOL", "DocsStageComparison", "adapt_docs_stage", "compare_docs_stages",
           "parse_docs_stage"]

PROTOCOL = "docs-stage-scores-v1"
"""Names this mapping inside the comparison contract: change it whenever the mapping's meaning changes,
so reports adapted under different rules never compare."""

SUITE = "docs-stages"
JUDGED = ("faithfulness", "contextual_recall", "answer_relevancy")
CHECKS = ("tools", "retrieval", *JUDGED)
"""The gated checks, in the order the stage report's `first_failure` reads them."""

# Contextual precision stays in the saved report but is not gated: the stage-failure policy leaves it out.
_WITH_CONTEXT = frozenset({*JUDGED, "contextual_precision"})
# The stage report's own contract: the small-talk case has no source context, so it is judged on relevancy only.
_NO_CONTEXT = {"thanks": frozenset({"answer_relevancy"})}
_KEY_TEXT = ("cases", "cases_sha", "docs_sha", "prompt_sha", "model", "embedder", "judge")
_CONTRACT_KEY = ("cases", "cases_sha", "docs_sha", "embedder", "k", "strict_faithfulness")
_SCORES = "scores are numbers in [0, 1]"

DOCS_STAGE_POLICY = Policy(max_regressions=0, min_pass_rate=0.9, critical=("test_tools", "test_faithfulness"))
"""The documentation stages' own policy; it does not replace the issue-triage policy in conf/policy/."""


def parse_docs_stage(text: str, where: str) -> Any:
    """Parse a saved stage report's text. Python's json accepts NaN and Infinity, which JSON does not: refuse them."""

    try:
        data = json.loads(text, object_pairs_hook=unique_object)
    except ValueError:  # a duplicate key, bad JSON, a huge integer: the strict parser words it
        return parse_json(text, where, "stage report")
    except RecursionError:
        return parse_json(text, where, "stage report")
    _refuse_non_finite(data, where)  # NaN and Infinity named by the case they sit in
    check_values(data, where, "stage report")
    refuse_lone_surrogates(data, where)  # half a character (`\ud800`) cannot be fingerprinted or written back
    return data


def _refuse_non_finite(data: Any, where: str) -> None:
    """Refuse NaN and Infinity anywhere in the report, naming the case when they sit inside a row."""
    rows = data.get("rows") if isinstance(data, dict) else None
    if isinstance(rows, list):
        for index, row in enumerate(rows):
            case = row.get("id") if isinstance(row, dict) else None
            label = f"case {case!r}" if isinstance(case, str) else f"rows[{index}]"
            _refuse_non_finite_in(row, f"{where}: {label}", "")
    others = {name: value for name, value in data.items() if name != "rows"} if isinstance(data, dict) else data
    _refuse_non_finite_in(others, where, "")


def _refuse_non_finite_in(value: Any, where: str, path: str) -> None:
    if isinstance(value, float) and not math.isfinite(value):
        raise InputError(f"{where}: {path or 'the value'} is {_spell(value)}, which JSON does not allow; "
                         f"{_SCORES}")
    if isinstance(value, dict):
        for name, item in value.items():
            _refuse_non_finite_in(item, where, f"{path}.{name}" if path else str(name))
    elif isinstance(value, list):
        for index, item in enumerate(value):
            _refuse_non_finite_in(item, where, f"{path}[{index}]")


def adapt_docs_stage(data: Any, where: str) -> dict[str, Any]:
    """Check a parsed stage report and map it to a run report (eval, tests, contract, provenance).

    Every refusal is an InputError of one line naming `where`, the case and the metric.
    """
    report = json_object(data, where)
    key = _key(report, where)
    threshold = _score(_require(report, "threshold", where), f"{where}: threshold")
    rows = _require(report, "rows", where)
    if not isinstance(rows, list):
        raise InputError(f"{where}: 'rows' must be a list of cases, got {json_type(rows)}")
    if not rows:
        raise InputError(f"{where}: 'rows' is empty: the report has no cases, so there is nothing to gate")

    tests: list[dict[str, str]] = []
    applicability: dict[str, list[str]] = {}
    for index, row in enumerate(rows):
        row = json_object(row, f"{where}: rows[{index}]")
        case = _case_id(row, f"{where}: rows[{index}]", seen=applicability)
        checks = _case_checks(row, case, threshold, f"{where}: case {case!r}")
        applicability[case] = sorted(checks)
        tests += [{"nodeid": f"{SUITE}::{case}::test_{name}", "outcome": "passed" if passed else "failed"}
                  for name, passed in checks.items()]

    # Everything that decides what a score means: a difference in any of it makes two reports incomparable.
    contract = {**{name: key[name] for name in _CONTRACT_KEY},
                "threshold": threshold, "protocol": PROTOCOL, "applicability": applicability}
    source = report.get("provenance")
    if source is not None and not isinstance(source, dict):
        raise InputError(f"{where}: 'provenance' must be an object saying where the report came from, "
                         f"got {json_type(source)}")
    return {
        "eval": {
            "suite": SUITE,
            "dataset": key["cases"],
            "dataset_sha": fingerprint(contract),
            "model": key["model"],
            "prompt_version": f"sha:{key['prompt_sha']}",  # the saved report names its prompt only by hash
            "prompt_sha": key["prompt_sha"],
            "judge_model": key["judge"],
            "components": {"embedder": key["embedder"]},
        },
        "tests": tests,
        "contract": contract,
        "provenance": {
            "execution_mode": "offline-metric-to-outcome-adapter",
            "source_report_sha": fingerprint(report),
            "prompt_version_is_derived": True,
            "source_provenance": source,
            "source_metrics": rows,
        },
    }


def _key(report: Mapping[str, Any], where: str) -> Mapping[str, Any]:
    key = json_object(_require(report, "key", where), f"{where}: 'key'")
    for name in _KEY_TEXT:
        if not isinstance(key.get(name), str) or not key[name]:
            raise InputError(f"{where}: key.{name} is missing or empty; the key names "
                             f"{', '.join(_KEY_TEXT)}, k and strict_faithfulness")
    if not isinstance(key.get("strict_faithfulness"), bool):
        raise InputError(f"{where}: key.strict_faithfulness must be true or false, "
                         f"got {_show(key.get('strict_faithfulness'))}")
    k = _require(report, "k", where)
    if type(k) is not int or k < 1:
        raise InputError(f"{where}: k must be a whole number of retrieved pages (1 or more), got {_show(k)}")
    if type(key.get("k")) is not int or key["k"] != k:
        raise InputError(f"{where}: key.k is {_show(key.get('k'))} but k is {k}; "
                         "the report must state one retrieval count")
    return key


def _case_id(row: Mapping[str, Any], where: str, *, seen: Mapping[str, object]) -> str:
    case = _require(row, "id", where)
    if not isinstance(case, str) or not case.strip() or "::" in case or not case.isprintable():
        raise InputError(f"{where}: invalid case id {case!r}; an id is a printable, non-empty string "
                         "without '::' (it becomes part of a test id)")
    if case in seen:
        raise InputError(f"{where}: duplicate case id {case!r}; each case may appear once")
    return case


def _case_checks(row: Mapping[str, Any], case: str, threshold: float, where: str) -> dict[str, bool]:
    """One case's applicable checks in CHECKS order: name -> passed. A check that does not apply is absent."""
    checks = {"tools": _tools_passed(_require(row, "tools", where), threshold, where)}
    retrieval = _require(row, "retrieval", where)
    if retrieval is not None:  # null: no page is expected for this case; omitted, never counted as passed
        checks["retrieval"] = _retrieval_passed(retrieval, threshold, where)
    scores = _judged_scores(_require(row, "judged", where), case, where)
    checks.update({name: scores[name] >= threshold for name in JUDGED if name in scores})

    stated = _require(row, "first_failure", where)
    actual = next((name for name, passed in checks.items() if not passed), None)
    if stated != actual:
        raise InputError(f"{where}: first_failure is {_show(stated)} but the first failing check is "
                         f"{_show(actual)} (checks in order: {', '.join(CHECKS)})")
    return checks


def _tools_passed(value: Any, threshold: float, where: str) -> bool:
    tools = json_object(value, f"{where}: tools")
    score = _score(_require(tools, "score", f"{where}: tools"), f"{where}: tools score")
    unexpected = _require(tools, "unexpected", f"{where}: tools")
    if not isinstance(unexpected, list):
        raise InputError(f"{where}: tools.unexpected must be a list of tool names, got {json_type(unexpected)}")
    passed = _require(tools, "pass", f"{where}: tools")
    if not isinstance(passed, bool):
        raise InputError(f"{where}: tools.pass must be true or false, got {_show(passed)}")
    expected = score >= threshold and not unexpected
    if passed != expected:
        raise InputError(f"{where}: tools.pass is {_show(passed)} but score {score} against threshold "
                         f"{threshold} with unexpected tools {_show(unexpected)} gives {_show(expected)} "
                         "(pass means score >= threshold and no unexpected tools)")
    return passed


def _retrieval_passed(value: Any, threshold: float, where: str) -> bool:
    retrieval = json_object(value, f"{where}: retrieval")
    hit = _require(retrieval, "hit", f"{where}: retrieval")
    if not isinstance(hit, bool):
        raise InputError(f"{where}: retrieval.hit must be true or false, got {_show(hit)}")
    _score(_require(retrieval, "reciprocal_rank", f"{where}: retrieval"), f"{where}: retrieval reciprocal_rank")
    recall = _score(_require(retrieval, "recall", f"{where}: retrieval"), f"{where}: retrieval recall")
    return recall >= threshold


def _judged_scores(value: Any, case: str, where: str) -> dict[str, float]:
    """The judged metrics' scores; exactly the case's expected metrics, each with a score and a reason."""
    judged = json_object(value, f"{where}: judged")
    expected = _NO_CONTEXT.get(case, _WITH_CONTEXT)
    names = ", ".join(sorted(expected))
    unexpected = sorted(set(judged) - expected)
    if unexpected:
        raise InputError(f"{where}: unexpected metric {unexpected[0]!r} (this case is judged on {names})")
    missing = sorted(expected - set(judged))
    if missing:
        raise InputError(f"{where}: metric {missing[0]!r} is missing (this case is judged on {names})")
    scores: dict[str, float] = {}
    for name, metric in judged.items():
        at = f"{where}: metric {name!r}"
        metric = json_object(metric, at)
        if not isinstance(_require(metric, "reason", at), str):
            raise InputError(f"{at}: the judge's reason must be text, got {json_type(metric['reason'])}")
        scores[name] = _score(_require(metric, "score", at), f"{at} score")
    return scores


def _score(value: Any, what: str) -> float:
    """A score as saved: a JSON number (not a boolean, not text), finite, within [0, 1]."""
    if type(value) not in (int, float):
        raise InputError(f"{what} is {_show(value)}, not a number; {_SCORES}")
    if not math.isfinite(value):
        raise InputError(f"{what} is {_spell(value)}, not a finite number; {_SCORES}")
    if not 0 <= value <= 1:
        raise InputError(f"{what} {value} is outside [0, 1]; {_SCORES}")
    return float(value)


def _require(mapping: Mapping[str, Any], name: str, where: str) -> Any:
    if name not in mapping:
        raise InputError(f"{where}: missing '{name}'")
    return mapping[name]




def _show(value: Any) -> str:
    """A saved value as JSON spells it, cut short so that an error stays one readable line."""
    text = json.dumps(value, default=repr)
    return text if len(text) <= 80 else text[:77] + "..."


def _spell(value: float) -> str:
    return "NaN" if math.isnan(value) else ("Infinity" if value > 0 else "-Infinity")


@dataclass(frozen=True)
class DocsStageComparison:
    """Both adapted run reports and the gate's decision on them: the result the CLI saves."""

    baseline: Mapping[str, Any]
    candidate: Mapping[str, Any]
    decision: Decision

    def to_json(self) -> dict[str, Any]:
        return {
            "execution_mode": "offline-saved-stage-report-adaptation",
            "policy": DOCS_STAGE_POLICY.model_dump(mode="json"),
            "baseline": dict(self.baseline),
            "candidate": dict(self.candidate),
            "decision": self.decision.record().data(),
        }


def compare_docs_stages(baseline: Any, candidate: Any, *, baseline_where: str = "baseline",
                        candidate_where: str = "candidate") -> DocsStageComparison:
    """Adapt two parsed stage reports and gate the candidate against the baseline under DOCS_STAGE_POLICY."""
    adapted_baseline = adapt_docs_stage(baseline, baseline_where)
    adapted_candidate = adapt_docs_stage(candidate, candidate_where)
    decision = decide(DOCS_STAGE_POLICY, report_from_mapping(adapted_baseline, baseline_where),
                      report_from_mapping(adapted_candidate, candidate_where))
    return DocsStageComparison(adapted_baseline, adapted_candidate, decision)
