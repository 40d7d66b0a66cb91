"""The eval block of a run report: the key, provenance, cases, pass rates, metrics, classification and slices,
computed from the report's tests and what each test recorded.

Pure: the plugin computes it for a run on one process (evalkit.run.plugin), the runner from the merged tests of
its shards (evalkit.run.workers), the same function either way, so a run's report cannot depend on how many
processes ran its checks.

With `run.repeats=N` (N > 1) a test's outcome is its shown sample's, chosen by its reducer
(evalkit.run.sample_protocol), and it carries `"repeats": {"passed": k, "runs": N, "not_passed": [sample numbers],
"reduce": "all"}` for the gate (evalkit.gate.repeats); a metric is the mean over the samples that measured it.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Callable
from typing import Any, Final

from evalkit.core.call_id import CallId
from evalkit.core.key import with_settings
from evalkit.judging.agreement import self_agreement
from evalkit.judging.classification import classify
from evalkit.judging.slices import language_of_field, slice_cases
from evalkit.programs.candidate import is_scorable
from evalkit.programs.grade import Grade
from evalkit.records.report_reader import PASSING
from evalkit.run.execute import UNSCORED  # a case with such a call is reported unscored
from evalkit.run.run_input import RunInput

__all__ = ["CLASSIFIED", "COULD_NOT_RUN", "DENIED", "JUDGE_VERDICTS", "REPLY_CHARS", "REPORT_FORMAT", "TEXT_CHARS",
           "EvalBlock",
           "aggregate_metrics", "cap_reply", "kept_text"]

REPORT_FORMAT: Final = "evalkit-run-report/1"
CLASSIFIED: Final = "classified"
"""The key under which a classification check records `{"check", "label", "predicted"}` for its case."""
JUDGE_VERDICTS: Final = "judge_verdicts"
"""The key under which a judged declared check records `{"check", "kind", "verdicts": {sample: [level per judge
repeat]}, "passed": {sample: [passed per judge repeat]}}` for its case; the report's `judges` block is made of
them."""
COULD_NOT_RUN: Final = "could_not_run"
"""The key under which a declared check records why it could not run on its case; the case's entry keeps
`could_not_run: {check: why}`, and the case is unscored."""
DENIED: Final = "denied"
"""The key under which a case whose call evalkit did not make (the budget denied it) keeps why, the call's reason
(`budget_denied: budget.max_calls=5 would be exceeded`); the case is unscored and its tests skipped with it."""
REPLY_CHARS: Final = 2000
"""A reply kept in a case's entry is cut after this many characters (with a marker): enough to see the answer,
not a copy of the recording."""
TEXT_CHARS: Final = 20_000
"""A text the run measured (its prompt, a candidate program) is kept in the report up to this many characters, so
that a later gate can show a reviewer its diff against the baseline's; its SHA-256 is of the whole text."""


class EvalBlock:
    """The eval block of one run (see the module)."""

    def __init__(self, run: RunInput, recorded: dict[str, dict[str, Any]],
                 sampled: dict[str, list[str]] | None = None,
                 sample_metrics: dict[str, dict[int, dict[str, float | None]]] | None = None,
                 reducers: dict[str, str] | None = None) -> None:
        self.run = run
        self.recorded = recorded
        """node id -> what the test recorded (its case, metrics, grade)."""
        self.sampled = sampled or {}
        """nodeid -> each sample's outcome, for the checks run once per sample."""
        self.sample_metrics = sample_metrics or {}
        """case id -> sample -> the metrics that sample's checks recorded."""
        self.reducers = reducers or {}
        """nodeid -> the reducer its samples' outcome followed (evalkit.core.reducer); `all` when not named."""
        self.metrics: dict[str, dict[str, float | None]] = {}
        self.grades: dict[str, dict[str, Any]] = {}
        self.classified: dict[str, dict[str, tuple[str, str | None]]] = {}
        """classification check -> case id -> (expected, predicted), for each case that ran it."""
        self.judged: dict[str, dict[str, tuple[str, dict[str, Any]]]] = {}
        """judged check -> case id -> (its test's node id, what it recorded under JUDGE_VERDICTS)."""

    def add_to(self, json_report: dict[str, Any]) -> None:
        """Add the eval block to a report that holds its tests (and marks each test with its case)."""
        self._merge_recorded(json_report.get("tests", []))
        json_report["format"] = REPORT_FORMAT
        json_report["eval"] = with_settings(self.run.key, self.run.shown_settings)
        json_report["provenance"] = self.run.provenance
        tests = json_report.get("tests", [])
        for test in tests:
            outcomes = self.sampled.get(test["nodeid"])
            if outcomes is not None:
                not_passed = [i for i, outcome in enumerate(outcomes) if outcome not in PASSING]
                test["repeats"] = {"passed": len(outcomes) - len(not_passed), "runs": len(outcomes),
                                   "not_passed": not_passed, "reduce": self.reducers.get(test["nodeid"], "all")}
        if self.run.repeats > 1:
            self.metrics = _sample_means(self.sample_metrics)
        json_report["cases"] = self._cases(tests)
        passed = sum(t["outcome"] == "passed" for t in tests)
        json_report["pass_rate"] = round(passed / len(tests), 6) if tests else None
        metrics = aggregate_metrics(self.metrics)
        cases = json_report["cases"]
        scored = [c for c in cases if c["checks"]]
        metrics["pass_rate"] = {"mean": json_report["pass_rate"], "count": len(tests), "unmeasured": 0}
        metrics["case_pass_rate"] = {"mean": round(sum(c["passed"] for c in scored) / len(scored), 6) if scored
                                     else None, "count": len(scored), "unmeasured": len(cases) - len(scored)}
        self._add_classification(json_report, metrics)
        self._add_judges(json_report)
        json_report["metrics"] = metrics
        if self.run.suite.critical:
            json_report["critical_checks"] = list(self.run.suite.critical)
        if self.run.suite.slices:
            json_report["slices"] = self._slices(cases)

    def _merge_recorded(self, tests: list[dict[str, Any]]) -> None:
        """Each case's metrics and grade from what its tests recorded, in the tests' order (collection order, also
        merged from shards: evalkit.run.workers): a metric recorded twice keeps the later test's value."""
        for test in tests:
            recorded = self.recorded.get(test["nodeid"], {})
            if "case" not in recorded:
                continue
            if "metrics" in recorded:
                self.metrics.setdefault(recorded["case"], {}).update(recorded["metrics"])
            if "grade" in recorded:
                self.grades[recorded["case"]] = recorded["grade"]
            if CLASSIFIED in recorded:
                seen = recorded[CLASSIFIED]
                self.classified.setdefault(seen["check"], {})[recorded["case"]] = (seen["label"], seen["predicted"])
            if JUDGE_VERDICTS in recorded:
                seen = recorded[JUDGE_VERDICTS]
                self.judged.setdefault(seen["check"], {})[recorded["case"]] = (test["nodeid"], seen)

    def _add_classification(self, json_report: dict[str, Any], metrics: dict[str, dict[str, Any]]) -> None:
        """Each classification check's confusion matrix under `classification`, and its metrics among the run's:
        by their plain names (`macro_f1`, `recall.billing`) for a suite with one such check, else prefixed with
        the check's name (`label_matches.macro_f1`)."""
        blocks: dict[str, Any] = {}
        for check, pairs in sorted(self.classified.items()):
            result = classify(pairs.values())
            if result is None:
                continue
            # each case's pair too: the gate pairs them with the baseline's for the metrics' intervals
            blocks[check] = {"labels": list(result.labels), "confusion": result.confusion, "cases": result.cases,
                             "pairs": {case: list(pair) for case, pair in sorted(pairs.items())}}
            prefix = "" if len(self.classified) == 1 else f"{check}."
            for name, value in result.metrics().items():
                metrics[prefix + name] = {"mean": value, "count": result.cases,
                                          "unmeasured": 0 if value is not None else result.cases}
        if blocks:
            json_report["classification"] = blocks

    def _add_judges(self, json_report: dict[str, Any]) -> None:
        """Each judged declared check under `judges`: how many times the judge judged each reply, every reply's
        verdicts (by case, then sample), the check's self-agreement when K > 1 (evalkit.judging.agreement), and
        its flips: the cases where the judge both passed and failed one reply (the gate's `judge_flips`)."""
        blocks: dict[str, Any] = {}
        for check, cases in sorted(self.judged.items()):
            rows: list[list[str | None]] = []
            flips = []
            kind = ""
            for case_id, (nodeid, seen) in sorted(cases.items()):
                kind = seen["kind"]
                samples = sorted(seen["verdicts"], key=int)
                rows += [seen["verdicts"][sample] for sample in samples]
                flipped = [int(s) for s in samples if len(set(seen["passed"].get(s, ()))) > 1]
                if flipped:
                    flips.append({"case": case_id, "test": nodeid, "samples": flipped,
                                  "verdicts": {s: seen["verdicts"][s] for s in samples if int(s) in flipped}})
            agreement = self_agreement(rows)
            blocks[check] = {"kind": kind, "repeats": self.run.judge_repeats,
                             "self_agreement": agreement.to_json() if agreement is not None else None,
                             "flips": flips,
                             "verdicts": {case_id: seen["verdicts"] for case_id, (_, seen) in sorted(cases.items())},
                             "passed": {case_id: seen["passed"] for case_id, (_, seen) in sorted(cases.items())}}
        if blocks:
            json_report["judges"] = blocks

    def _slices(self, cases: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
        results = {c["id"]: c for c in cases}
        out: dict[str, dict[str, Any]] = {}
        for spec in self.run.suite.slices:
            by, where = (spec, {}) if isinstance(spec, str) else (spec.by, spec.where)
            chosen = [c for c in self.run.cases if all(c.get(k) == v for k, v in where.items())]
            match = re.fullmatch(r"language\((\w+)\)", by)
            key = language_of_field(match.group(1)) if match else by
            label = by + "".join(f" where {k}={v}" for k, v in where.items())
            cut = slice_cases(chosen, results, key, abstention_check=self.run.suite.abstention_check)
            out[label] = {name: s.model_dump(mode="json") for name, s in cut.items()}
        return out

    def _cases(self, tests: list[dict[str, Any]]) -> list[dict[str, Any]]:
        by_case: dict[str, dict[str, Any]] = {
            c.id: {"id": c.id, "status": "scored", "checks": {}, "calls": {}, "problems": [],
                   "input": _capped(c.fields)} for c in self.run.cases}
        for test in tests:
            recorded = self.recorded.get(test["nodeid"], {})
            case_id = recorded.get("case")
            if case_id is None:
                continue
            test["case"] = case_id
            check = test["nodeid"].split("::")[-1].split("[", 1)[0]
            by_case[case_id]["checks"][check] = test["outcome"]
            if COULD_NOT_RUN in recorded:  # the check neither passed nor failed the case: it is not measured
                unmeasured = by_case[case_id]
                unmeasured["status"] = "unscored"
                unmeasured.setdefault(COULD_NOT_RUN, {})[check] = recorded[COULD_NOT_RUN]
                unmeasured["problems"].append(f"{check}: could not run: {recorded[COULD_NOT_RUN]}")
        for call_id, call in self.run.calls.items():
            which = CallId.parse(call_id)
            case_id = which.case
            if case_id in by_case:
                by_case[case_id]["calls"][call_id] = call.status
                if which.sample == 0 and which.repeat == 0:  # the judge's first look stands for its answer
                    _keep_reply(by_case[case_id], which, call.text)
                if which.kind == "task" and self.run.repeats > 1:  # every sample's reply, in sample order
                    outputs = by_case[case_id].setdefault("outputs", [None] * self.run.samples_of(case_id))
                    if which.sample < len(outputs):
                        outputs[which.sample] = cap_reply(call.text)
                if call.reason and call.reason not in by_case[case_id]["problems"]:
                    by_case[case_id]["problems"].append(call.reason)
                if call.status in UNSCORED:
                    by_case[case_id]["status"] = "unscored"
                    # evalkit's own mark that it made no reply here (the budget denied the call): the gate reads
                    # the case as not run, never its skipped tests as regressions (evalkit.gate.compared)
                    by_case[case_id].setdefault(DENIED, call.reason or call.status)
                # the reply contract (text when finished, a known stop reason), recorded or live
                by_case[case_id]["problems"] += [f"{call_id}: {p}" for p in call.contract]
        for case_id, run in self.run.programs.items():
            entry = by_case.get(case_id)
            if entry is None:
                continue
            entry["program"] = run
            if not is_scorable(run):
                entry["status"] = "unscored"
                entry["problems"].append(f"candidate program: {run['reason']}")
                if run.get("status") == "budget_denied":  # not run: evalkit's unit budget denied it (DENIED)
                    entry.setdefault(DENIED, run["reason"])
                entry["grade"] = Grade.unscored(str(run["reason"])).to_json()
            elif case_id in self.grades:
                entry["grade"] = self.grades[case_id]
        if self.run.suite.group_by:
            for case in self.run.cases:
                by_case[case.id]["group"] = case.get(self.run.suite.group_by)
        sampled: dict[str, list[list[str]]] = {}
        for test in tests:
            if test.get("case") is not None and test["nodeid"] in self.sampled:
                sampled.setdefault(test["case"], []).append(self.sampled[test["nodeid"]])
        for entry in by_case.values():
            # A case passes when every check that ran passed; a check skipped as not applicable does not fail it
            # (a case whose calls failed or were denied is unscored, which the gate treats on its own).
            outcomes = list(entry["checks"].values())
            entry["passed"] = _case_passed(outcomes)
            entry["metrics"] = self.metrics.get(entry["id"], {})
            if self.run.repeats > 1:  # the samples in which the case passed, by the same rule
                checks = sampled.get(entry["id"], [])
                runs = self.run.samples_of(entry["id"])
                entry["repeats"] = {"passed": sum(_case_passed([c[s] for c in checks if s < len(c)])
                                                  for s in range(runs)), "runs": runs}
        return list(by_case.values())


def _case_passed(outcomes: list[str]) -> bool:
    return "passed" in outcomes and all(o in ("passed", "skipped") for o in outcomes)


def _sample_means(by_case: dict[str, dict[int, dict[str, float | None]]]) -> dict[str, dict[str, float | None]]:
    """Each case's metrics: per name, the mean over the samples that measured it (the value itself with one
    sample); None when none could."""
    out: dict[str, dict[str, float | None]] = {}
    for case_id, samples in by_case.items():
        seen: dict[str, list[float]] = {}
        for sample in sorted(samples):
            for name, value in samples[sample].items():
                seen.setdefault(name, [])
                if value is not None:
                    seen[name].append(value)
        out[case_id] = {name: sum(values) / len(values) if values else None for name, values in seen.items()}
    return out


def _keep_reply(entry: dict[str, Any], call_id: CallId, text: str | None) -> None:
    """The case's task reply as `output`, each judge reply under `judge_replies[<metric>]`, cut to REPLY_CHARS.

    The texts come from run-input.json, which the runner wrote redacted, so cutting cannot split a secret that
    redaction would then miss; the report's strings are redacted again, one by one, when it is written."""
    if call_id.kind == "task":
        entry["output"] = cap_reply(text)
    else:
        entry.setdefault("judge_replies", {})[call_id.metric] = cap_reply(text)


def kept_text(text: str, version: str | None, path: str,
              redact: Callable[[str], str] = lambda text: text) -> dict[str, Any]:
    """A measured text as the report's `texts` block keeps it: which version and file, the SHA-256 of the whole
    text as measured, and the text up to TEXT_CHARS, redacted as a message is (a program or prompt may hold a
    secret-shaped string), with how many characters were cut."""
    shown = redact(text)
    return {"version": version, "path": path, "sha256": hashlib.sha256(text.encode("utf-8")).hexdigest(),
            "text": shown[:TEXT_CHARS], "cut": max(0, len(shown) - TEXT_CHARS)}


def cap_reply(text: str | None) -> str | None:
    """A reply cut to REPLY_CHARS characters, the cut said at its end; None (no reply) stays None."""
    if text is None or len(text) <= REPLY_CHARS:
        return text
    return f"{text[:REPLY_CHARS]} [... cut: {len(text) - REPLY_CHARS} more characters]"


def _capped(value: Any) -> Any:
    """A case's input as the report keeps it (beside its output, for a reader of a failing case): each string cut
    like a reply, so one long field cannot swell the report."""
    if isinstance(value, str):
        return cap_reply(value)
    if isinstance(value, dict):
        return {str(k): _capped(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_capped(v) for v in value]
    return value


def aggregate_metrics(per_case: dict[str, dict[str, float | None]]) -> dict[str, dict[str, Any]]:
    """Each metric's mean over the cases that measured it, and how many did; None when none could."""
    values: dict[str, list[float | None]] = {}
    for metrics in per_case.values():
        for name, value in metrics.items():
            values.setdefault(name, []).append(value)
    out: dict[str, dict[str, Any]] = {}
    for name, seen in sorted(values.items()):
        measured = [v for v in seen if v is not None]
        out[name] = {"mean": round(sum(measured) / len(measured), 6) if measured else None,
                     "count": len(measured), "unmeasured": len(seen) - len(measured)}
    return out
