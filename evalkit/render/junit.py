"""A decision as JUnit XML (`decision.xml`), for the CI systems that read JUnit: GitLab, Jenkins, GitHub test
reporters.

One `<testsuite>` (named after the suite) holds one `<testcase>` per test of the candidate, plus one per test
the baseline had and the candidate lacks when that matters (a regression or a missing critical test), plus one
named `evalkit::decision` that carries the decision itself. What the JUnit readers count as a failure is what
the gate counts against the candidate, so a CI page that goes red on failures agrees with the gate:

- `<failure>`: a test that a blocking finding of the decision names (evalkit.gate.rules): more regressions than
  the policy allows, a critical test that does not pass or is missing, a new failing test when the policy blocks
  on those (`new_failing: block`), and any rule of the policy's own; `type` is the rule's id, `message` says why;
- `<skipped>`: a test pytest skipped or an expected failure (xfail), with pytest's reason, as pytest's own
  `--junitxml` writes them;
- a test that did not pass but does not count against the candidate (it failed on the baseline too, it is new
  and the policy only reviews or lists new failures, or its regression is within what the policy allows or only
  reviewed) is not a failure: its outcome and why are properties
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
from itertools import chain, compress, count, repeat
from operator import not_

from evalkit.core.nodeid import name_parts
from evalkit.gate.decision import Decision, Verdict
from evalkit.gate.findings import Effect
from evalkit.gate.rules import rules_for
from evalkit.records.report_reader import PASSING, RunReport

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


def junit_names(nodeid: str, modules: dict[str, str] | None = None) -> tuple[str, str]:
    """(classname, name) of a pytest node id, split as pytest's --junitxml splits it; `modules` caches the dotted
    name of each file (a suite's tests share a few files)."""
    path, sep, rest = nodeid.partition("::")
    if not sep:  # not a test function id (a doctest file, a collector): the file is the class, the id the name
        return _module(nodeid), nodeid
    module = modules.get(path) if modules is not None else None
    if module is None:
        module = _module(path)
        if modules is not None:
            modules[path] = module
    if "::" not in rest:  # the common case, a function without classes: no parsing of the parameters needed
        return module, rest
    parts = name_parts(nodeid)
    bracket = nodeid.find("[", len(path))
    name = parts[-1] + (nodeid[bracket:] if bracket >= 0 else "")
    return ".".join([module, *parts[:-1]]), name


def _module(path: str) -> str:
    stem = path[:-3] if path.endswith(".py") else path
    return stem.replace("\\", "/").replace("/", ".")


def render_junit(decision: Decision, candidate: RunReport) -> str:
    """The decision and the candidate's tests as a JUnit XML document (UTF-8, with its XML declaration)."""
    failures = _failures(decision)
    counts = {"tests": 0, "failures": 0, "errors": 0, "skipped": 0}
    properties = ET.Element("properties")
    for name, value in _suite_properties(decision):
        ET.SubElement(properties, "property", name=name, value=xml_safe(value))
    cases = [_element(properties)]
    absent = [n for n in failures if n not in candidate.outcomes]
    modules: dict[str, str] = {}
    # Most tests pass and most ids need no escaping: one C-speed scan of all ids decides whether any does, and
    # runs of passing tests are then written in bulk (an ElementTree of a million tests would take seconds and
    # memory, and even a line per test written by a bytecode loop takes most of a second).
    ids = " ".join(candidate.outcomes)
    plain = (len(ids.encode("ascii").translate(None, _ASCII_SPECIAL)) == len(ids) if ids.isascii()
             else not _SPECIAL.search(ids))
    del ids
    escaped: Iterable[tuple[str, str | None]] = candidate.outcomes.items()  # every test, one by one
    if plain:
        order = list(candidate.outcomes)
        others = compress(count(), map(not_, map(PASSING.__contains__, candidate.outcomes.values())))
        done = 0  # the tests written, in order: passing ones in runs, the others one by one
        for index in chain(others, [len(order)]):
            cases += _passing_lines(order[done:index], modules)
            if index < len(order):
                nodeid = order[index]
                cases.append(_case(nodeid, candidate.outcomes[nodeid], candidate, decision, failures, counts,
                                   modules))
            done = index + 1
        escaped = ()
    for nodeid, outcome in chain(escaped, ((n, None) for n in dict.fromkeys(absent))):
        cases.append(_case(nodeid, outcome, candidate, decision, failures, counts, modules))
    counts["tests"] = len(candidate.outcomes) + len(dict.fromkeys(absent))
    cases.append(_element(_decision_case(decision, counts)))
    totals = " ".join(f'{counted}="{number}"' for counted, number in counts.items())
    suite = _attribute(f"evalkit.{candidate.eval.get('suite', 'suite')}")
    # one element per line, indented: a reviewer can read and diff it
    return "\n".join(['<?xml version="1.0" encoding="UTF-8"?>', f"<testsuites {totals}>",
                      f'  <testsuite name="{suite}" {totals}>', *cases,
                      "  </testsuite>", "</testsuites>", ""])


def _case(nodeid: str, outcome: str | None, candidate: RunReport, decision: Decision,
          failures: dict[str, tuple[str, str]], counts: dict[str, int], modules: dict[str, str]) -> str:
    """The testcase of a test that did not pass (or is absent: outcome None), or whose id needs escaping."""
    classname, name = junit_names(nodeid, modules)
    if outcome in PASSING:
        return f'    <testcase classname="{_attribute(classname)}" name="{_attribute(name)}" />'
    case = ET.Element("testcase", classname=xml_safe(classname), name=xml_safe(name))
    message = candidate.messages.get(nodeid) or decision.messages.get(nodeid) or ""
    if nodeid in failures:
        counts["failures"] += 1
        kind, why = failures[nodeid]
        text = message if outcome is not None else "absent from the candidate"
        ET.SubElement(case, "failure", type=kind, message=xml_safe(f"{why}: {text}" if text else why)).text = \
            xml_safe(f"{why}\noutcome: {outcome or 'absent'}\n{text}".rstrip())
    elif outcome in _SKIPPED:
        counts["skipped"] += 1
        ET.SubElement(case, "skipped", type=f"pytest.{outcome}", message=xml_safe(message or str(outcome)))
    else:
        props = ET.SubElement(case, "properties")
        ET.SubElement(props, "property", name="outcome", value=str(outcome))
        ET.SubElement(props, "property", name="evalkit.status", value=_not_counted(nodeid, decision))
        if message:
            ET.SubElement(case, "system-out").text = xml_safe(message)
    return _element(case)


def _passing_lines(ids: list[str], modules: dict[str, str]) -> list[str]:
    """The testcases of a run of passing tests whose ids need no escaping, in order, as one text.

    The common ids, `file::test[params]` of a few files, are written by a handful of C-speed passes over the run's
    ids joined as lines: each file's `\\nFILE::` becomes the start of its testcase. The files are found by
    jumping from a file's first line to its last (pytest lists a file's tests together); any line left unwritten
    (an id of a file not found so, a doctest file, a class: `::` twice) sends the run one id at a time through
    junit_names."""
    if not ids:
        return []
    text = "\n" + "\n".join(ids)
    paths: list[str] = []
    position = 1
    while 0 < position < len(text) and len(paths) <= _MAX_FILES_IN_BULK:
        path = text[position:text.find("::", position)] if text.find("::", position) >= 0 else ""
        if not path or "\n" in path:
            break
        paths.append(path)
        position = text.rfind("\n" + path + "::") + 1
        position = text.find("\n", position) + 1
    for path in dict.fromkeys(paths):
        module = modules.get(path) or modules.setdefault(path, _module(path))
        text = text.replace("\n" + path + "::", f'\n    <testcase classname="{module}" name="')
    if text.count("::") == 0 and text.count("\n    <testcase ") == len(ids):
        return [text[1:].replace("\n", '" />\n') + '" />']
    return [f'    <testcase classname="{_attribute(classname)}" name="{_attribute(name)}" />'
            for classname, name in map(junit_names, ids, repeat(modules))]


_MAX_FILES_IN_BULK = 32
"""More files than this in one run of passing tests (one pass over the run each) are written one id at a time."""


def _element(element: ET.Element) -> str:
    """One child of the <testsuite>, indented (only between elements: texts are kept as they are)."""
    ET.indent(element, space="  ", level=2)
    return "    " + ET.tostring(element, encoding="unicode").rstrip(" ")


# Anything in a test id that needs escaping in an attribute: what XML forbids, markup, normalised whitespace.
_SPECIAL = re.compile("[\x00-\x1f\ud800-\udfff\ufffe\uffff&<>\"]")
_ASCII_SPECIAL = bytes(range(0x20)) + b'&<>"'
"""The same for ASCII ids, found faster by deleting them (bytes.translate) than by the regular expression."""
# What an attribute value cannot hold as it is: markup, and the whitespace an XML parser would normalise.
_ATTRIBUTE = re.compile("[&<>\"\n\r\t]")
_ENTITIES = {"&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "\n": "&#10;", "\r": "&#13;", "\t": "&#9;"}


def _attribute(text: str) -> str:
    """`text` as a double-quoted XML attribute value, escaped as ElementTree escapes it (checked by the tests)."""
    text = xml_safe(text)
    return _ATTRIBUTE.sub(lambda m: _ENTITIES[m.group()], text) if _ATTRIBUTE.search(text) else text


def _failures(decision: Decision) -> dict[str, tuple[str, str]]:
    """nodeid -> (rule id, why) for the tests a blocking finding names: what counts against the candidate.
    Where several findings name one test, the later rule says more about it (a critical test that regressed is
    a critical failure), so the last one wins."""
    out: dict[str, tuple[str, str]] = {}
    for finding in decision.findings:
        if finding.effect is Effect.BLOCK:
            rule = rules_for(finding.rule)
            why = rule.per_test if rule is not None and rule.per_test else finding.message
            out.update(dict.fromkeys(finding.tests, (finding.rule, why)))
    return out


def _not_counted(nodeid: str, decision: Decision) -> str:
    review = [f.message for f in decision.findings if f.effect is Effect.REVIEW and nodeid in f.tests]
    return _why_not_counted(nodeid, decision) + "".join(f"; for review: {message}" for message in review)


def _why_not_counted(nodeid: str, decision: Decision) -> str:
    if nodeid in decision.new_failing:
        return "new failing test; the policy reviews or lists these (new_failing), it does not block on them"
    if decision.decision is Verdict.INCOMPARABLE:
        return "not compared: the runs are incomparable"
    if nodeid in decision.regressed:
        return "regressed, within what the policy allows or only reviews (max_regressions, regressions)"
    return "known failure: did not pass on the baseline either"


def _suite_properties(decision: Decision) -> list[tuple[str, str]]:
    props = [("evalkit.decision", str(decision.decision))]
    props += [("evalkit.reason", reason) for reason in decision.reasons]
    props += [("evalkit.review_reason", reason) for reason in decision.review_reasons]
    props += [("evalkit.warning", warning) for warning in decision.warnings]
    props += [("evalkit.finding", f"{finding.effect} {finding.rule}") for finding in decision.findings]
    props += [("evalkit.changed", f"{name} {old} -> {new}") for name, (old, new) in decision.changed.items()]
    if decision.pass_rate is not None:
        props.append(("evalkit.pass_rate", f"{decision.pass_rate:.6g}"))
    return props


def _decision_case(decision: Decision, counts: dict[str, int]) -> ET.Element:
    case = ET.Element("testcase", classname=DECISION_CASE[0], name=DECISION_CASE[1])
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
    return case
