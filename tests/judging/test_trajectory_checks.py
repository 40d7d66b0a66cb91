"""Trajectory checks (evalkit/judging/trajectory.py) and the trajectory record (evalkit/records/trajectory.py).

The trajectories here are authored: built by hand, step by step, to put each check on both sides of its line."""

from __future__ import annotations

from pathlib import Path

import pytest

from evalkit.core.errors import InputError
from evalkit.judging.trajectory import (
    evaluate,
    json_subset,
    load_trajectory_checks,
    parse_trajectory_checks,
)
from evalkit.records import MAX_TOOL_RESULT_CHARS, FinalAnswer, ModelCall, ToolCall, ToolResult, Trajectory


def _agent(*tools: tuple[str, dict[str, object]], errors: frozenset[str] = frozenset()) -> Trajectory:
    """An authored trajectory: a model call before each tool call, each tool call answered, a final answer."""
    steps: list[object] = []
    for n, (tool, arguments) in enumerate(tools):
        steps += [ModelCall(call_id=f"m{n}", model="m", input_tokens=10, output_tokens=2),
                  ToolCall(id=f"c{n}", tool=tool, arguments=arguments),
                  ToolResult(call_id=f"c{n}", content="ok", error=tool in errors,
                             error_message="boom" if tool in errors else None)]
    steps += [ModelCall(call_id="last"), FinalAnswer(text="done")]
    return Trajectory.model_validate({"steps": [s.model_dump() for s in steps]})  # type: ignore[attr-defined]


def _check(yaml_text: str):  # type: ignore[no-untyped-def]
    return parse_trajectory_checks(f"checks:\n  - {yaml_text}\n", "checks.yaml")[0]


AGENT = _agent(("search", {"q": "paris", "limit": 5}), ("fetch", {"url": "https://x"}), ("search", {"q": "oslo"}))


@pytest.mark.parametrize(("check", "passed", "reason"), [
    ("{id: a, kind: tool-called, tool: fetch}", True, "step 5: 'fetch' called"),
    ("{id: a, kind: tool-called, tool: delete}", False, "'delete' was never called (tools called: [search, fetch, search])"),
    ("{id: a, kind: tool-called, tool: search, arguments: {q: oslo}}", True, "step 8: 'search' called with matching"),
    ("{id: a, kind: tool-called, tool: search, arguments: {q: rome}}", False, "never with arguments matching"),
    ("{id: a, kind: tool-not-called, tool: delete}", True, "'delete' never called"),
    ("{id: a, kind: tool-not-called, tool: search}", False, "step 2: 'search' called (c0)"),
    ("{id: a, kind: tool-not-called, tool: search, arguments: {q: oslo}}", False, "step 8: 'search' called (c2)"),
    ("{id: a, kind: tool-not-called, tool: search, arguments: {q: rome}}", True, "never called with arguments"),
])
def test_tool_called_and_not_called(check: str, passed: bool, reason: str) -> None:
    verdict = evaluate(_check(check), AGENT)
    assert verdict.passed is passed
    assert reason in verdict.reason


@pytest.mark.parametrize(("tools", "mode", "passed", "reason"), [
    ("[search, fetch, search]", "exact", True, "exactly"),
    ("[search, fetch]", "exact", False, "step 8: extra call 'search'"),
    ("[search, search, fetch]", "exact", False, "step 5: tool call 2 is 'fetch', expected 'search'"),
    ("[search, fetch, search, fetch]", "exact", False, "missing 'fetch' after 3 call(s)"),
    ("[search, search]", "in-order", True, "at steps [2, 8]"),
    ("[fetch, search]", "in-order", True, "at steps [5, 8]"),
    ("[fetch, fetch]", "in-order", False, "'fetch' is never called after step 5 ('fetch')"),
    ("[delete]", "in-order", False, "'delete' is never called;"),
    ("[fetch, search, search]", "any-order", True, "each of"),
    ("[fetch, fetch]", "any-order", False, "'fetch' called 1 time(s), expected 2"),
])
def test_tool_sequence_modes(tools: str, mode: str, passed: bool, reason: str) -> None:
    verdict = evaluate(_check(f"{{id: a, kind: tool-sequence, tools: {tools}, mode: {mode}}}"), AGENT)
    assert verdict.passed is passed
    assert reason in verdict.reason


def test_tool_sequence_defaults_to_in_order() -> None:
    check = _check("{id: a, kind: tool-sequence, tools: [fetch, search]}")
    assert evaluate(check, AGENT).passed
    assert not evaluate(check, _agent(("search", {}), ("fetch", {}))).passed


@pytest.mark.parametrize(("check", "passed", "reason"), [
    ("{id: a, kind: tool-args, tool: search, subset: {q: paris}}", False, "step 8: 'search' (c2): arguments"),
    ("{id: a, kind: tool-args, tool: fetch, subset: {url: 'https://x'}}", True, "1 call(s) of 'fetch'"),
    ("{id: a, kind: tool-args, tool: search, schema: {type: object, required: [q]}}", True, "2 call(s)"),
    ("{id: a, kind: tool-args, tool: search, schema: {type: object, required: [limit]}}", False,
     "step 8: 'search' (c2): arguments fail the schema at (top level): \"'limit' is a required property\""),
    ("{id: a, kind: tool-args, tool: search, schema: {$defs: {q: {type: integer}}, properties: {q: {$ref: '#/$defs/q'}}}}",
     False, "step 2: 'search' (c0): arguments fail the schema at q"),
    ("{id: a, kind: tool-args, tool: delete, subset: {}}", False, "'delete' was never called"),
])
def test_tool_args(check: str, passed: bool, reason: str) -> None:
    verdict = evaluate(_check(check), AGENT)
    assert verdict.passed is passed
    assert reason in verdict.reason


def test_steps_counts_model_calls() -> None:
    assert evaluate(_check("{id: a, kind: steps, max_model_calls: 4}"), AGENT).passed
    verdict = evaluate(_check("{id: a, kind: steps, max_model_calls: 2}"), AGENT)
    assert not verdict.passed
    assert verdict.reason == "step 7: model call 3 of 4; at most 2 allowed"


def test_no_tool_errors_names_the_failed_step() -> None:
    assert evaluate(_check("{id: a, kind: no-tool-errors}"), AGENT).passed
    verdict = evaluate(_check("{id: a, kind: no-tool-errors}"), _agent(("search", {}), ("fetch", {}),
                                                                      errors=frozenset({"fetch"})))
    assert not verdict.passed
    assert verdict.reason == "step 6: tool 'fetch' (c1) failed: 'boom'"


@pytest.mark.parametrize(("expected", "actual", "matches"), [
    ({"a": 1}, {"a": 1, "b": 2}, True),
    ({"a": {"b": [1, {"c": 2}]}}, {"a": {"b": [1, {"c": 2, "d": 3}]}, "e": 0}, True),
    ({"a": [1]}, {"a": [1, 2]}, False),  # lists match item by item, the same length
    ({"a": True}, {"a": 1}, False),  # JSON's true is not 1
    ({"a": 1}, {"a": 1.0}, True),
    ({"a": None}, {}, False),
    ("x", "x", True),
])
def test_json_subset(expected: object, actual: object, matches: bool) -> None:
    assert json_subset(expected, actual) is matches


@pytest.mark.parametrize(("text", "message"), [
    ("checks:\n  - {id: a, kind: tool-called, tool: x, tools: [y]}\n",
     r"^checks.yaml: check 'a' \(tool-called\): unknown key 'tools' \(allowed: arguments, id, kind, tool\)$"),
    ("checks:\n  - {id: a, kind: tool-sequence, tools: [x], mode: sometimes}\n", r"check 'a' \(tool-sequence\): 'mode'"),
    ("checks:\n  - {id: a, kind: tool-args, tool: x}\n", r"give one of 'subset' .* or 'schema'"),
    ("checks:\n  - {id: a, kind: tool-args, tool: x, schema: {$ref: 'https://example.com/s.json'}}\n",
     r"\$ref 'https://example.com/s.json' points outside the schema"),
    ("checks:\n  - {id: a, kind: tool-args, tool: x, schema: {properties: {q: {$ref: 'other.json#/q'}}}}\n",
     r"\$ref 'other.json#/q' points outside"),
    ("checks:\n  - {id: a, kind: tool-args, tool: x, schema: {type: 12}}\n", r"not a valid JSON Schema"),
    ("checks:\n  - {id: a, kind: judge}\n", r"check 'a': kind 'judge' is not a trajectory check; known kinds: tool-called"),
    ("checks:\n  - {id: a, kind: steps, max_model_calls: 1}\n  - {id: a, kind: no-tool-errors}\n",
     r"check id 'a' appears twice"),
    ("checks:\n  - {id: 'a b', kind: no-tool-errors}\n", r"'id': String should match"),
    ("checks:\n  - {id: a, kind: steps}\n", r"check 'a' \(steps\): missing key 'max_model_calls'"),
    ("checks: []\n", r"holds 0 checks"),
    ("- {id: a, kind: steps}\n", r"expected a mapping with one key, 'checks'"),
    ("checks:\n  - {id: a, kind: steps, max_model_calls: 1, max_model_calls: 2}\n", r"appears twice in one mapping"),
])
def test_checks_file_refusals_are_one_line(text: str, message: str) -> None:
    with pytest.raises(InputError, match=message) as caught:
        parse_trajectory_checks(text, "checks.yaml")
    assert "\n" not in str(caught.value)


def test_checks_file_hash_is_of_its_bytes(tmp_path: Path) -> None:
    one = tmp_path / "one.yaml"
    two = tmp_path / "two.yaml"
    one.write_text("checks:\n  - {id: a, kind: no-tool-errors}\n")
    two.write_text("checks:\n  - {id: a, kind: no-tool-errors}  # the same check, another file\n")
    first, second = load_trajectory_checks(one), load_trajectory_checks(two)
    assert first.checks == second.checks
    assert first.sha256 != second.sha256
    assert len(first.sha256) == 64


def test_trajectory_record_is_strict_and_round_trips() -> None:
    assert Trajectory.model_validate_json(AGENT.model_dump_json()) == AGENT
    with pytest.raises(ValueError, match="extra"):
        ToolCall.model_validate({"id": "c", "tool": "t", "args": {}})
    with pytest.raises(ValueError, match="frozen"):
        AGENT.steps[0].call_id = "x"  # type: ignore[union-attr, misc]


def test_tool_result_content_is_cut_to_the_bound_once() -> None:
    result = ToolResult(call_id="c", content="x" * (MAX_TOOL_RESULT_CHARS * 3))
    assert len(result.content) == MAX_TOOL_RESULT_CHARS
    assert result.content.endswith(f"[... {MAX_TOOL_RESULT_CHARS * 3:,} characters in all, cut]")
    assert ToolResult.model_validate_json(result.model_dump_json()) == result  # read back, not cut again
