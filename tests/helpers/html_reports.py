"""Run reports for the HTML pages' tests, authored here (not written by a run): a hostile pair whose model output
tries to become markup, and a large pair of 10,000 tests."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

from evalkit.core.policy import Policy
from evalkit.gate.decide import decide
from evalkit.gate.decision import Decision
from evalkit.records.report_reader import RunReport, report_from_mapping

KEY = {"key_version": 1, "suite": "hostile", "dataset": "hostile@1", "dataset_sha": "d1", "model": "m",
       "prompt_version": "v1", "prompt_sha": "p1", "judge_model": "j",
       "components": {"retriever": "default@aaaaaaaaaaaa"}}

SCRIPT = "<script>window.__pwned = 'script'; alert('script')</script>"
IMG = "<img src=x onerror=\"window.__pwned = 'img'; alert('img')\">"
LINK = "<a href=\"javascript:window.__pwned='link';alert('link')\">click me</a> javascript:alert(1)"
STYLE = "<style>body { display: none }</style><link rel=stylesheet href=https://example.invalid/x.css>"
ESCAPE = "</pre></td></tr></table></details><script>window.__pwned='escape'</script>{{ 7*7 }}"
RTL = "\u202eThe price is \u05de\u05d7\u05d9\u05e8 \u0627\u0644\u0633\u0639\u0631 \u0647\u0648 \u0661\u0662\u0663"
BANGLA = "\u09ab\u09c7\u09b0\u09a4 \u09a6\u09c7\u0993\u09af\u09bc\u09be\u09b0 \u09a8\u09c0\u09a4\u09bf \u0995\u09c0?"
HOSTILE_OUTPUT = "\n".join([SCRIPT, IMG, LINK, STYLE, ESCAPE, RTL, BANGLA])
MEGABYTE = 1_048_576
LONG_WORD = "x" * 5_000  # one unbreakable word: the layout must wrap it, not widen the page


def _case(case_id: str, output: str, passed: bool, judge: str, input_text: str) -> dict[str, Any]:
    return {"id": case_id, "status": "scored", "passed": passed, "problems": [],
            "checks": {"test_answer": "passed" if passed else "failed"}, "calls": {},
            "input": {"question": input_text}, "output": output, "judge_replies": {"rubric": judge},
            "metrics": {}}


def hostile_pair() -> tuple[RunReport, RunReport, Decision]:
    """A baseline and a candidate whose outputs, test ids, messages, metric names and settings carry markup,
    `javascript:` links, right-to-left and Bangla text, an unbreakable word and a reply of 1 MB."""
    big = ("\u09ac\u09be\u0982\u09b2\u09be " + SCRIPT + " ") * (MEGABYTE // 70)
    cases = [("hostile", HOSTILE_OUTPUT + " " + LONG_WORD), (f"rtl-{RTL}", RTL), (f"bn-{BANGLA}", BANGLA),
             (f"x{SCRIPT}", IMG), ("megabyte", big)]
    tests_before, tests_after, cases_before, cases_after = [], [], [], []
    for case_id, output in cases:
        nodeid = f"test_hostile.py::test_answer[{case_id}]"
        tests_before.append({"nodeid": nodeid, "outcome": "passed"})
        tests_after.append({"nodeid": nodeid, "outcome": "failed",
                            "call": {"outcome": "failed", "crash": {"message": f"AssertionError: {SCRIPT} {IMG} {RTL}"}}})
        cases_before.append(_case(case_id, "the right answer " + BANGLA, True, '{"score": 2}', IMG + BANGLA))
        cases_after.append(_case(case_id, output, False, f'{{"reason": "{SCRIPT}"}}', IMG + RTL))
    tests_after.append({"nodeid": f"test_hostile.py::test_new[{IMG}]", "outcome": "failed"})
    settings_before = {"retriever": {"k": 3, "template": "<b>bold</b>"}}
    settings_after = {"retriever": {"k": 3, "template": SCRIPT}}
    metrics_before = {"recall": {"mean": 0.9}, f"m{SCRIPT}": {"mean": 1.0}}
    metrics_after = {"recall": {"mean": 0.6}, f"m{SCRIPT}": {"mean": 0.5}}
    provenance = {"recording_provenance": "authored", "recording_note": f"authored by tests/helpers/html_reports.py {IMG}"}
    baseline = report_from_mapping({"eval": {**KEY, "settings": settings_before}, "tests": tests_before,
                                    "cases": cases_before, "metrics": metrics_before, "provenance": provenance,
                                    "trajectories": _hostile_trajectories(cases, "the right answer")},
                                   "hostile baseline")
    candidate = report_from_mapping({"eval": {**KEY, "components": {"retriever": "default@bbbbbbbbbbbb"},
                                              "settings": settings_after},
                                     "tests": tests_after, "cases": cases_after, "metrics": metrics_after,
                                     "provenance": provenance,
                                     "trajectories": _hostile_trajectories(cases, None),
                                     "slices": {f"cut {SCRIPT}": {RTL: {"cases": 2, "pass_rate": 0.5,
                                                                         "failures": [IMG], "unsafe": []}}}},
                                    "hostile candidate")
    policy = Policy(critical=("test_answer",))
    return baseline, candidate, decide(policy, baseline, candidate)


def _hostile_trajectories(cases: list[tuple[str, str]], answer: str | None) -> dict[str, Any]:
    """Each case's agent steps, hostile throughout: the tool's name, its call id, its arguments (keys too), its
    result and error, and the final answer; the baseline's (`answer` given) part from the candidate's at step 3."""
    out = {}
    for case_id, output in cases:
        out[f"task/{case_id}"] = {"steps": [
            {"kind": "model_call", "call_id": f"task/{case_id}@1", "model": IMG, "input_tokens": 3},
            {"kind": "tool_call", "id": SCRIPT, "tool": IMG + RTL, "arguments": {SCRIPT: [ESCAPE, LONG_WORD, BANGLA]}},
            {"kind": "tool_result", "call_id": SCRIPT, "content": (answer or HOSTILE_OUTPUT) + LONG_WORD,
             "error": answer is None, "error_message": None if answer else LINK},
            {"kind": "final_answer", "text": answer or output[:10_000]}]}
    return out


def large_pair(tests: int = 10_000) -> tuple[RunReport, RunReport, Decision]:
    """`tests` tests over tests / 4 cases; every 20th test regresses and every 70th is fixed."""
    def side(fail: Any) -> RunReport:
        entries = [{"nodeid": f"test_big.py::test_check{i % 4}[case-{i // 4:05d}]",
                    "outcome": "failed" if fail(i) else "passed"} for i in range(tests)]
        cases = [{"id": f"case-{c:05d}", "status": "scored", "passed": not any(fail(4 * c + j) for j in range(4)),
                  "checks": {f"test_check{j}": "failed" if fail(4 * c + j) else "passed" for j in range(4)},
                  "calls": {}, "problems": [], "output": f"answer {c}", "input": {"question": f"q {c}"}}
                 for c in range(tests // 4)]
        return report_from_mapping({"eval": KEY, "tests": entries, "cases": cases,
                                    "metrics": {"recall": {"mean": 0.5 + 0.4 * (fail is _after)}}}, "large")

    def _before(i: int) -> bool:
        return i % 70 == 3

    def _after(i: int) -> bool:
        return i % 20 == 1

    baseline, candidate = side(_before), side(_after)
    return baseline, candidate, decide(Policy(max_regressions=10_000), baseline, candidate)


ORDER_AGENT_BASELINE = Path(__file__).resolve().parents[2] / "suites/order_agent/runs/baseline.json"


def agent_pair() -> tuple[dict[str, Any], dict[str, Any]]:
    """The order agent's shipped baseline report (a replay of its authored recording) and a candidate authored
    from it here, in which two cases regress by what the agent did: `email-1001` looks up the wrong customer
    (its trajectory parts from the baseline's at step 5, the tool call's arguments), and `status-1001` sends the
    order number as text, reads a tool error and gives up (it parts at step 2). Both as report.json holds them."""
    baseline = json.loads(ORDER_AGENT_BASELINE.read_text(encoding="utf-8"))
    candidate = copy.deepcopy(baseline)
    steps = candidate["trajectories"]["task/email-1001"]["steps"]
    steps[4] = {**steps[4], "arguments": {"customer_id": 2}}
    steps[5] = {**steps[5], "content": '{"email": "grace@example.com", "id": 2, "name": "Grace Hopper"}'}
    steps[7] = {"kind": "final_answer", "text": "Order 1001 was placed by Grace Hopper (grace@example.com)."}
    _fail(candidate, "email-1001", steps[7]["text"], ["answers_from_the_tools"])
    steps = candidate["trajectories"]["task/status-1001"]["steps"]
    why = "arguments do not match lookup_order's schema: order_id: Input should be a valid integer"
    steps[1:] = [{**steps[1], "arguments": {"order_id": "order #1001"}},
                 {"kind": "tool_result", "call_id": "call_1", "content": f"error: {why}", "error": True,
                  "error_message": why},
                 steps[3], {"kind": "final_answer", "text": "I could not find that order."}]
    _fail(candidate, "status-1001", steps[-1]["text"],
          ["answers_from_the_tools", "order_number_as_a_number", "tools_succeed"])
    candidate["provenance"] = {**candidate["provenance"], "recording_provenance": "authored",
                               "recording_note": "authored by tests/helpers/html_reports.py from the shipped baseline"}
    return baseline, candidate


def _fail(report: dict[str, Any], case_id: str, output: str, checks: list[str]) -> None:
    """The case's output replaced and these checks failed, in its case entry and its tests."""
    case = next(c for c in report["cases"] if c["id"] == case_id)
    case.update(output=output, passed=False)
    case["checks"].update(dict.fromkeys(checks, "failed"))
    for test in report["tests"]:
        if test["nodeid"] in {f"checks.yaml::{check}[{case_id}]" for check in checks}:
            test["outcome"] = "failed"
            test["call"] = {"outcome": "failed", "crash": {"message": f"AssertionError: {case_id} failed"}}
    outcomes = [t["outcome"] for t in report["tests"]]
    report["summary"] = {"collected": len(outcomes), "total": len(outcomes), "passed": outcomes.count("passed"),
                         "failed": outcomes.count("failed")}
    report["exitcode"] = 1


SUPPORT_CHAT_BASELINE = Path(__file__).resolve().parents[2] / "suites/support_chat/runs/baseline.json"


def conversation_pair() -> tuple[dict[str, Any], dict[str, Any]]:
    """The support chat's shipped baseline report (a replay of its authored recording) and a candidate authored from
    it here, in which `remembers-the-number` regresses at turn 2: the assistant, answering a hostile user turn
    (markup, a script, a closing tag of the page, right-to-left text), forgets order 1007 and asks for it again, so
    `keeps_the_order_number` fails naming turn 2 of 3 and `short_turns` fails naming turn 3 (the first failing turn
    is 2). The hostile text is in both sides' user turn 2, the candidate's assistant turns and the failure message.
    Both as report.json holds them."""
    baseline = json.loads(SUPPORT_CHAT_BASELINE.read_text(encoding="utf-8"))
    candidate = copy.deepcopy(baseline)
    for report in (baseline, candidate):
        steps = report["trajectories"]["task/remembers-the-number"]["steps"]
        steps[3] = {**steps[3], "text": f"Can you tell me its status? {SCRIPT} {ESCAPE}"}
    steps = candidate["trajectories"]["task/remembers-the-number"]["steps"]
    steps[5] = {**steps[5], "text": f"Which order do you mean? {IMG} {RTL}"}
    steps[8] = {**steps[8], "text": f"You're welcome! {LINK} " + "Is there anything else? " * 20}
    _fail(candidate, "remembers-the-number", steps[8]["text"], ["keeps_the_order_number", "short_turns"])
    tests = {t["nodeid"]: t for t in candidate["tests"]}
    tests["checks.yaml::keeps_the_order_number[remembers-the-number]"]["call"]["crash"]["message"] = \
        f"Failed: turn 2 of 3: expected a text containing \"1007\", came \"Which order do you mean? {IMG}\""
    tests["checks.yaml::short_turns[remembers-the-number]"]["call"]["crash"]["message"] = \
        f"Failed: turn 3 of 3: expected 0 to 240 characters, came 521 {SCRIPT}"
    candidate["provenance"] = {**candidate["provenance"], "recording_provenance": "authored",
                               "recording_note": "authored by tests/html_reports.py from the shipped baseline"}
    return baseline, candidate
