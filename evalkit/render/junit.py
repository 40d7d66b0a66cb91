"""A decision as JUnit XML (`decision.xml`), for the CI systems that read JUnit: GitLab, Jenkins, GitHub test
reporters.

One `<testsuite>` (named after the suite) holds one `<testcase>` per test of the candidate, plus one per test
the baseline had and the candidate lacks when that matters (a regression or a missing critical test), plus one
named `evalkit::decision` that carries the decision itself. What the JUnit readers count as a failure is what
the gate counts against the candidate, so a CI page that goes red on failures agrees with the gate:

- `<failure>`: a regressed test, a critical test that does not pass or is missing, and a new failing test
  when the policy blocks on those (`new_failing: block`); `type` says which, `message` says why;
- `<skipped>`: a test pytest skipped or an expected failure (xfail), with pytest's reason, as pytest's own
  `--junitxml` writes them;
- a test that did not pass but does not count against the candidate (it failed on the baseline too, or it is
  new and the policy only reviews or lists new failures) is not a failure: its outcome and why are properties
  of its testcase (`outcome`, `evalkit.status`) and its message is its `<system-out>`;
- `evalkit::decision` fails when the decision is block (the message is the reasons) and errors when it is
  incomparable, so a block that no single test explains (a metric floor, the pass rate) is still red.

Test names are split as pytest's `--junitxml` splits them, so a test keeps one identity in both files:
`classname` is the file as a dotted module path plus any classes (`suites/x/test_a.py::TestB::test_c[p]` ->
`suites.x.test_a.TestB`), `name` the test with its parameters (`test_c[p]`). The decision, its reasons and the
suite's counts are properties of the `<testsuite>`.

XML 1.0 cannot hold most control characters (nor lone surrogates) even escaped: model output and failure
messages can contain them, so they are written as visible escapes (`\\x1b`), never dropped silently.
"""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from collections.abc import Iterable

from evalkit.core.nodeid import name_parts
from evalkit.core.policy import Policy
from evalkit.core.report import PASSING, RunReport
from evalkit.gate.decision import Decision, Verdict

__all__ = ["render_junit", "xml_safe", "junit_names"]

# What XML 1.0 forbids (Char production): C0 controls but tab, newline and return; surrogates; U+FFFE, U+FFFF.
_FORBIDDEN = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ud800-\udfff\ufffe\uffff]")
_SKIPPED = frozenset({"skipped", "xfailed"})
DECISION_CASE = ("evalkit", "decision")
"""The classname and name of the testcase that carries the decision."""


def xml_safe(text: str) -> str:
    """`text` with every character XML 1.0 cannot hold written as a visible escape (`\\x00`, `\\ud800`)."""
    return _FORBIDDEN.sub(lambda m: f"\\x{ord(m.group()):02x}" if ord(m.group()) < 0x100
                          else f"\\u{ord(m.group()):04x}", text)


def junit_names(nodeid: str) -> tuple[str, str]:
    """(classname, name) of a pytest node id, split as pytest's --junitxml splits it."""
    path, sep, _ = nodeid.partition("::")
    if not sep:  # not a test function id (a doctest file, a collector): the file is the class, the id the name
        return _module(nodeid), nodeid
    parts = name_parts(nodeid)
    bracket = nodeid.find("[", len(path))
    name = parts[-1] + (nodeid[bracket:] if bracket >= 0 else "")
    return ".".join([_module(path), *parts[:-1]]), name


def _module(path: str) -> str:
    stem = path[:-3] if path.endswith(".py") else path
    return stem.replace("\\", "/").replace("/", ".")


def render_junit(decision: Decision, candidate: RunReport, policy: Policy) -> str:
    """The decision and the candidate's tests as a JUnit XML document (UTF-8, with its XML declaration)."""
    failures = _failures(decision, policy)
    root = ET.Element("testsuites")
    suite = ET.SubElement(root, "testsuite", name=xml_safe(f"evalkit.{candidate.eval.get('suite', 'suite')}"))
    properties = ET.SubElement(suite, "properties")
    for name, value in _suite_properties(decision):
        ET.SubElement(properties, "property", name=name, value=xml_safe(value))
    counts = {"tests": 0, "failures": 0, "errors": 0, "skipped": 0}
    absent = [n for n in (*decision.regressed, *decision.missing_critical) if n not in candidate.outcomes]
    for nodeid, outcome in [*candidate.outcomes.items(), *((n, None) for n in dict.fromkeys(absent))]:
        case = _testcase(suite, nodeid)
        counts["tests"] += 1
        message = candidate.messages.get(nodeid) or decision.messages.get(nodeid) or ""
        if nodeid in failures:
            counts["failures"] += 1
            kind, why = failures[nodeid]
            text = message if outcome is not None else "absent from the candidate"
            ET.SubElement(case, "failure", type=kind, message=xml_safe(f"{why}: {text}" if text else why)).text = \
                xml_safe(f"{why}\noutcome: {outcome or 'absent'}\n{text}".rstrip())
        elif outcome in _SKIPPED:
            counts["skipped"] += 1
            ET.SubElement(case, "skipped", type=f"pytest.{outcome}", message=xml_safe(message or outcome))
        elif outcome not in PASSING:
            props = ET.SubElement(case, "properties")
            ET.SubElement(props, "property", name="outcome", value=str(outcome))
            ET.SubElement(props, "property", name="evalkit.status", value=_not_counted(nodeid, decision))
            if message:
                ET.SubElement(case, "system-out").text = xml_safe(message)
    _decision_case(suite, decision, counts)
    for element in (root, suite):
        for counted, number in counts.items():
            element.set(counted, str(number))
    ET.indent(root)  # one element per line: a reviewer can read and diff it
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + ET.tostring(root, encoding="unicode") + "\n"


def _failures(decision: Decision, policy: Policy) -> dict[str, tuple[str, str]]:
    """nodeid -> (failure type, why) for the tests that count against the candidate; the first reason wins."""
    out: dict[str, tuple[str, str]] = {}
    groups: list[tuple[Iterable[str], str, str]] = [
        (decision.critical_failures, "critical", "critical test does not pass"),
        (decision.missing_critical, "missing_critical", "critical test absent from the candidate"),
        (decision.regressed, "regression", "regressed: passed on the baseline"),
    ]
    if policy.new_failing == "block":
        groups.append((decision.new_failing, "new_failing", "new failing test (new_failing: block)"))
    for names, kind, why in groups:
        for name in names:
            out.setdefault(name, (kind, why))
    return out


def _not_counted(nodeid: str, decision: Decision) -> str:
    if nodeid in decision.new_failing:
        return "new failing test; the policy reviews or lists these (new_failing), it does not block on them"
    if decision.decision is Verdict.INCOMPARABLE:
        return "not compared: the runs are incomparable"
    return "known failure: did not pass on the baseline either"


def _suite_properties(decision: Decision) -> list[tuple[str, str]]:
    props = [("evalkit.decision", str(decision.decision))]
    props += [("evalkit.reason", reason) for reason in decision.reasons]
    props += [("evalkit.review_reason", reason) for reason in decision.review_reasons]
    props += [("evalkit.warning", warning) for warning in decision.warnings]
    props += [("evalkit.changed", f"{name} {old} -> {new}") for name, (old, new) in decision.changed.items()]
    if decision.pass_rate is not None:
        props.append(("evalkit.pass_rate", f"{decision.pass_rate:.6g}"))
    return props


def _testcase(suite: ET.Element, nodeid: str) -> ET.Element:
    classname, name = junit_names(nodeid)
    return ET.SubElement(suite, "testcase", classname=xml_safe(classname), name=xml_safe(name))


def _decision_case(suite: ET.Element, decision: Decision, counts: dict[str, int]) -> None:
    case = ET.SubElement(suite, "testcase", classname=DECISION_CASE[0], name=DECISION_CASE[1])
    counts["tests"] += 1
    summary = "; ".join(decision.reasons) or "no reasons given"
    if decision.decision is Verdict.BLOCK:
        counts["failures"] += 1
        ET.SubElement(case, "failure", type="block", message=xml_safe(f"BLOCK: {summary}")).text = \
            xml_safe("\n".join(decision.reasons))
    elif decision.decision is Verdict.INCOMPARABLE:
        counts["errors"] += 1
        ET.SubElement(case, "error", type="incomparable", message=xml_safe(f"INCOMPARABLE: {summary}")).text = \
            xml_safe("\n".join(decision.reasons))
    else:
        lines = [f"{str(decision.decision).upper()}", *(f"for review: {r}" for r in decision.review_reasons)]
        ET.SubElement(case, "system-out").text = xml_safe("\n".join(lines))
