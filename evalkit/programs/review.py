"""Human review, bound to the exact bytes of one run report: decisions on presentation, and labels.

`evalkit review --report R.json --decisions D.json --out R2.json`
`evalkit review --report R.json --labels L.jsonl --out R2.json`

A graded case can be left `review_pending`: its task, quality and safety were scored, and a person
still has to look at how the answer is presented. Review settles that and nothing else:

- it can clear `review_pending` and record who decided what and why (`grade.review`);
- `reject_presentation` also sets `grade.quality_pass` to false;
- it cannot change task or safety results, checks, outcomes or metrics: a decision carrying any
  other key (`task_pass`, `safety_pass`, ...) or any other verdict (`accept_task`, ...) is refused;
- it never modifies the source report; the reviewed copy goes to another file, with an audit trail
  (`review_audit`, one entry per review round) naming the source report's SHA-256.

Labels (a labels file exported from the run explorer, evalkit.records.labels) are a person's verdicts on
checks: `pass`, `fail` or a level. They are recorded as a review round of their own and change no result:
they are evidence of what people saw, which `evalkit calibrate` sets the judge against. A label must name a
case of the report and one of what that case can be labelled on (evalkit.programs.labelling).

The decisions file and the labels file name the SHA-256 of the report file's bytes, so a review made on one
report is refused on any other. That digest is a fingerprint of the bytes, not a signature: it says which report
the decisions were made on, not who made them. Reviewer names are self-asserted; evalkit does not
authenticate them, and the audit trail says so.
"""

from __future__ import annotations

import copy
import difflib
import json
from enum import StrEnum
from typing import Any

from pydantic import BaseModel, ConfigDict, ValidationError, field_validator

from evalkit.core.errors import InputError, describe_validation
from evalkit.core.fingerprint import SHA_LENGTH, sha256
from evalkit.programs.labelling import label_targets
from evalkit.records.labels import LabelsFile
from evalkit.records.report_reader import report_from_mapping

__all__ = ["IDENTITY_ASSURANCE", "DecisionsFile", "ReviewDecision", "PresentationVerdict", "apply_labels",
           "apply_review"]

IDENTITY_ASSURANCE = "reviewer names are self-asserted; evalkit does not authenticate them"

_PRESENTATION_ONLY = ("review can change presentation only (accept_presentation or reject_presentation); "
                      "task and safety results stay as the run measured them")


class PresentationVerdict(StrEnum):
    """What a reviewer can decide about a case's presentation."""

    ACCEPT = "accept_presentation"
    REJECT = "reject_presentation"


class ReviewDecision(BaseModel):
    """One reviewer's decision on one pending case."""

    model_config = ConfigDict(extra="forbid", frozen=True, use_attribute_docstrings=True)

    sample_id: str
    """The case's `id` in the report's `cases`."""

    decision: PresentationVerdict
    """`accept_presentation`, or `reject_presentation` (which also fails the case's quality)."""

    reviewer: str
    """Who decided (self-asserted: evalkit does not authenticate it)."""

    rationale: str
    """Why, in a sentence a later reader can check against the answer."""

    @field_validator("reviewer", "rationale")
    @classmethod
    def _not_blank(cls, value: str) -> str:
        if not value.strip():
            raise ValueError("must not be empty")
        return value


class DecisionsFile(BaseModel):
    """A decisions file: the report it was made on and the decisions, checked one by one afterwards."""

    model_config = ConfigDict(extra="forbid", frozen=True, use_attribute_docstrings=True)

    report_sha256: str
    """SHA-256 (hex) of the report file's exact bytes: decisions apply to that report only."""

    decisions: list[Any]
    """The decisions, each a ReviewDecision (validated one by one, so an error can name its sample)."""


def apply_review(report: dict[str, Any], report_bytes: bytes, decisions: Any, *,
                 report_name: str = "report", decisions_name: str = "decisions") -> dict[str, Any]:
    """The reviewed copy of `report`: pending cases settled by `decisions`, plus an audit round.

    `report` must be what `report_bytes` parse to; `decisions` is the parsed decisions file. Pure: the
    arguments are not modified. Every refusal is an InputError naming the file or sample and the fix.
    """
    _check_report(report, report_bytes, report_name)
    sha = sha256(report_bytes)
    reviewed = _check_decisions(decisions, sha, report_name, decisions_name)
    cases = {case.get("id"): case for case in report["cases"] if isinstance(case, dict)}
    for decision in reviewed:
        _check_pending(cases, decision.sample_id, report_name, decisions_name)

    out = copy.deepcopy(report)
    out_cases = {case.get("id"): case for case in out["cases"] if isinstance(case, dict)}
    for decision in reviewed:
        grade = out_cases[decision.sample_id]["grade"]
        grade["review_pending"] = False
        grade["review"] = {"decision": decision.decision.value, "reviewer": decision.reviewer,
                           "rationale": decision.rationale}
        if decision.decision is PresentationVerdict.REJECT:
            grade["quality_pass"] = False
    rounds = _earlier_rounds(report.get("review_audit"), report_name)
    rounds.append({"source_report_sha256": sha, "decisions": copy.deepcopy(decisions["decisions"]),
                   "identity_assurance": IDENTITY_ASSURANCE})
    out["review_audit"] = rounds
    return out


def apply_labels(report: dict[str, Any], report_bytes: bytes, labels: LabelsFile, *,
                 report_name: str = "report", labels_name: str = "labels") -> dict[str, Any]:
    """The reviewed copy of `report` with the labels recorded as a review round (`review_audit`); no result of
    the report changes. Pure; every refusal is an InputError naming the file, the label and the fix."""
    _check_report(report, report_bytes, report_name)
    sha = sha256(report_bytes)
    given = labels.header.report_sha256
    if given != sha:
        raise InputError(f"{labels_name}: the labels were made on another report (report_sha256 "
                         f"{given[:SHA_LENGTH]}…), not on {report_name} ({sha[:SHA_LENGTH]}…); review that "
                         "report with them, or label this one in evalkit view")
    if not labels.labels:
        raise InputError(f"{labels_name}: no labels after the header, so there is nothing to record; label cases "
                         "in the run explorer before exporting")
    cases = {case.get("id"): case for case in report["cases"] if isinstance(case, dict)}
    for number, label in enumerate(labels.labels, start=1):
        at = f"{labels_name}: label {number} (case {label.case_id!r}, check {label.check_id!r})"
        case = cases.get(label.case_id)
        if case is None:
            close = difflib.get_close_matches(label.case_id, [c for c in cases if isinstance(c, str)], n=1)
            hint = f" (closest: {close[0]!r})" if close else ""
            raise InputError(f"{at}: no such case in {report_name}{hint}; label cases of this report")
        targets = label_targets(case)
        allowed = targets.get(label.check_id)
        if allowed is None:
            raise InputError(f"{at}: the case has no such check or rated number (it has: "
                             f"{', '.join(targets) or 'none'}); label what the explorer offers")
        if label.label not in allowed:
            raise InputError(f"{at}: {label.label!r} is not a label of this check (give one of "
                             f"{', '.join(map(str, allowed))})")
    out = copy.deepcopy(report)
    rounds = _earlier_rounds(report.get("review_audit"), report_name)
    rounds.append({"source_report_sha256": sha, "kind": "labels", "reviewer": labels.header.reviewer,
                   "tool_version": labels.header.tool_version,
                   "labels": [label.model_dump(mode="json") for label in labels.labels],
                   "identity_assurance": IDENTITY_ASSURANCE})
    out["review_audit"] = rounds
    return out


def _check_report(report: Any, report_bytes: bytes, where: str) -> None:
    if not isinstance(report, dict) or not isinstance(report.get("cases"), list):
        raise InputError(f"{where}: not an evalkit run report (no 'cases' list); "
                         "review the report `evalkit run` wrote")
    try:
        parsed = json.loads(report_bytes)
    except (json.JSONDecodeError, UnicodeDecodeError):
        parsed = None
    if parsed != report:
        raise InputError(f"{where}: the report object does not match the report bytes; "
                         "pass the bytes the report was parsed from, unchanged")
    report_from_mapping(report, where)  # the reviewed copy must still be a report the gate can read


def _check_decisions(data: Any, sha: str, report_name: str, where: str) -> list[ReviewDecision]:
    if not isinstance(data, dict):
        raise InputError(f"{where}: not a decisions file (expected a JSON object with "
                         f"'report_sha256' and 'decisions', got {type(data).__name__})")
    given = data.get("report_sha256")
    if not isinstance(given, str):
        raise InputError(f"{where}: no 'report_sha256' string; set it to the SHA-256 of the exact bytes of "
                         f"the report the decisions were made on ({report_name}: {sha[:SHA_LENGTH]}…)")
    if given.lower() != sha:
        raise InputError(f"{where}: report_sha256 {given[:SHA_LENGTH]}… does not match {report_name} "
                         f"({sha[:SHA_LENGTH]}…): decisions were made on another report; "
                         "review this report and record its SHA-256")
    try:
        file = DecisionsFile.model_validate(data)
    except ValidationError as error:
        raise InputError(describe_validation(error, DecisionsFile, where)) from None
    if not file.decisions:
        raise InputError(f"{where}: the decisions list is empty, so there is nothing to review; "
                         "add one decision per reviewed sample")
    reviewed: list[ReviewDecision] = []
    seen: set[str] = set()
    for index, entry in enumerate(file.decisions):
        sample = entry.get("sample_id") if isinstance(entry, dict) else None
        at = f"{where}: decisions[{index}]" + (f" (sample {sample!r})" if isinstance(sample, str) else "")
        try:
            decision = ReviewDecision.model_validate(entry)
        except ValidationError as error:
            line = describe_validation(error, ReviewDecision, at)
            if any(item["type"] == "extra_forbidden" or item["loc"][:1] == ("decision",)
                   for item in error.errors()):
                line += f"; {_PRESENTATION_ONLY}"
            raise InputError(line) from None
        if decision.sample_id in seen:
            raise InputError(f"{at}: sample {decision.sample_id!r} is decided twice; "
                             "keep one decision per sample")
        seen.add(decision.sample_id)
        reviewed.append(decision)
    return reviewed


def _check_pending(cases: dict[Any, dict[str, Any]], sample: str, report_name: str, where: str) -> None:
    case = cases.get(sample)
    if case is None:
        close = difflib.get_close_matches(sample, [c for c in cases if isinstance(c, str)], n=1)
        hint = f" (closest: {close[0]!r})" if close else ""
        raise InputError(f"{where}: sample {sample!r} is not a case of {report_name}{hint}; "
                         "name cases by their 'id' in the report's 'cases'")
    grade = case.get("grade")
    if not isinstance(grade, dict):
        raise InputError(f"{where}: sample {sample!r} has no grade in {report_name}, so there is no "
                         "presentation to review; remove its decision")
    if grade.get("review_pending") is not True:
        earlier = grade.get("review")
        state = (f"already reviewed ({earlier.get('decision')} by {earlier.get('reviewer')!r})"
                 if isinstance(earlier, dict) else f"review_pending is {json.dumps(grade.get('review_pending'))}")
        raise InputError(f"{where}: sample {sample!r} is not pending review in {report_name} ({state}); "
                         "remove its decision")


def _earlier_rounds(audit: Any, where: str) -> list[Any]:
    """Earlier review rounds, oldest first; a single round (a mapping) counts as one."""
    if audit is None:
        return []
    if isinstance(audit, dict):
        return [copy.deepcopy(audit)]
    if isinstance(audit, list):
        return copy.deepcopy(audit)
    raise InputError(f"{where}: 'review_audit' is neither a review round nor a list of rounds; "
                     "review the report `evalkit run` or evalkit.review wrote")
