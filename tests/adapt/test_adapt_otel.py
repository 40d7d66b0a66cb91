"""`evalkit adapt otel`: agents' OpenTelemetry traces gated with trajectory checks (evalkit/adapt/otel.py, otlp.py).

The traces under test are made by the real SDK (tests/helpers/traced_agent.py: the `openai` SDK instrumented by
opentelemetry-instrumentation-openai-v2 against a loopback fake, tools in `execute_tool` spans, exported through
the OTLP encoder); the hostile ones are authored here, span by span, and read in a bounded child."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest
from conftest import evalkit_cli
from helpers.bounded import evalkit_bounded
from helpers.traced_agent import export_agent_traces

from evalkit.adapt.otel import read_otel, trajectories
from evalkit.adapt.otlp import MAX_ATTRIBUTE_CHARS, MAX_SPAN_DEPTH, read_otlp
from evalkit.core.errors import InputError
from evalkit.records import ModelCall, ToolCall, ToolResult

CHECKS = """\
checks:
  - {id: searches-then-fetches, kind: tool-sequence, tools: [search, fetch], mode: in-order}
  - {id: search-args, kind: tool-args, tool: search, schema: {type: object, required: [q], properties: {q: {type: string}}}}
  - {id: at-most-3-calls, kind: steps, max_model_calls: 3}
  - {id: tools-succeed, kind: no-tool-errors}
  - {id: never-deletes, kind: tool-not-called, tool: delete_file}
"""


@pytest.fixture(scope="module")
def traces(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The agent's export for cases `paris` and `oslo`, and the checks file, in one folder."""
    folder = tmp_path_factory.mktemp("otel")
    export_agent_traces(folder / "agent.json", ["paris", "oslo"], protobuf=folder / "agent.binpb")
    (folder / "checks.yaml").write_text(CHECKS, encoding="utf-8")
    return folder


def _without_tool(export: dict[str, Any], case: str, tool: str) -> dict[str, Any]:
    """A copy of the export without `tool`'s execute_tool span in `case` (the agent skipped that call)."""
    changed = copy.deepcopy(export)
    spans = [s for rs in changed["resourceSpans"] for ss in rs["scopeSpans"] for s in ss["spans"]]
    root = next(s for s in spans if {"key": "evalkit.case_id", "value": {"stringValue": case}} in s["attributes"])
    for rs in changed["resourceSpans"]:
        for ss in rs["scopeSpans"]:
            ss["spans"] = [s for s in ss["spans"] if not (
                s["traceId"] == root["traceId"] and s["name"] == f"execute_tool {tool}")]
    return changed


def test_the_sdk_trace_reads_into_trajectories(traces: Path) -> None:
    export = json.loads((traces / "agent.json").read_text())
    scopes = {ss["scope"]["name"] for rs in export["resourceSpans"] for ss in rs["scopeSpans"]}
    assert any(scope.startswith("opentelemetry.") for scope in scopes)  # the instrumentation made the chat spans
    cases, notes = trajectories(read_otlp((traces / "agent.json").read_bytes(), "agent.json"), "agent.json")
    assert sorted(cases) == ["oslo", "paris"] and notes == []
    steps = cases["paris"].steps
    assert [type(s).__name__ for s in steps] == ["ModelCall", "ToolCall", "ToolResult", "ModelCall", "ToolCall",
                                                 "ToolResult", "ModelCall"]
    first = steps[0]
    assert isinstance(first, ModelCall) and (first.model, first.input_tokens, first.output_tokens) == \
        ("agent-model", 20, 7)
    search = steps[1]
    assert isinstance(search, ToolCall) and (search.id, search.tool, search.arguments) == \
        ("call_search", "search", {"q": "paris"})
    result = steps[2]
    assert isinstance(result, ToolResult) and (result.call_id, result.content, result.error) == \
        ("call_search", "search result for paris", False)


def test_one_test_per_case_and_check(traces: Path) -> None:
    run = read_otel(traces / "agent.json", traces / "checks.yaml")
    assert len(run.tests) == 10
    assert {t.nodeid for t in run.tests} >= {"otel::searches-then-fetches[paris]", "otel::never-deletes[oslo]"}
    assert all(t.outcome == "passed" for t in run.tests)
    assert run.key.contract["checks_sha256"] == run.provenance["checks_sha256"]
    assert run.key.model == "agent-model"


def test_the_trace_gated_against_itself_is_go(traces: Path) -> None:
    done = evalkit_cli("evalkit.cli.main", "adapt", "otel", str(traces / "agent.json"), str(traces / "agent.json"),
                       "--checks", str(traces / "checks.yaml"))
    assert done.returncode == 0, done.stdout + done.stderr
    assert "decision: GO" in done.stdout
    assert "10 of 10 tests passed" in done.stdout


def test_a_skipped_tool_call_blocks_on_the_sequence_check(traces: Path, tmp_path: Path) -> None:
    export = json.loads((traces / "agent.json").read_text())
    (tmp_path / "candidate.json").write_text(json.dumps(_without_tool(export, "paris", "fetch")))
    done = evalkit_cli("evalkit.cli.main", "adapt", "otel", str(traces / "agent.json"), str(tmp_path / "candidate.json"),
                       "--checks", str(traces / "checks.yaml"))
    assert done.returncode == 1, done.stdout + done.stderr
    regressed = done.stdout.split("regressed (1):\n", 1)[1].splitlines()[0]
    assert regressed.startswith("  - otel::searches-then-fetches[paris] -- 'fetch' is never called after step 2")
    assert "1 regression(s)" in done.stdout


def test_a_failed_tool_is_a_tool_error(traces: Path, tmp_path: Path) -> None:
    export_agent_traces(tmp_path / "failing.json", ["paris"], failing_tool="fetch")
    cases, _ = trajectories(read_otlp((tmp_path / "failing.json").read_bytes(), "f"), "f")
    errors = [s for s in cases["paris"].steps if isinstance(s, ToolResult) and s.error]
    assert [(e.call_id, e.error_message) for e in errors] == [("call_fetch", "fetch timed out")]
    run = read_otel(tmp_path / "failing.json", traces / "checks.yaml")
    failed = [(t.nodeid, t.message) for t in run.tests if t.outcome == "failed"]
    assert failed == [("otel::tools-succeed[paris]", "step 6: tool 'fetch' (call_fetch) failed: 'fetch timed out'")]


def test_runs_checked_with_different_files_are_incomparable(traces: Path, tmp_path: Path) -> None:
    other = tmp_path / "other.yaml"
    other.write_text(CHECKS.replace("max_model_calls: 3", "max_model_calls: 4"))
    baseline = read_otel(traces / "agent.json", traces / "checks.yaml")
    candidate = read_otel(traces / "agent.json", other)
    from evalkit.adapt.framework import incomparable_fields
    reasons = incomparable_fields(baseline, candidate)
    assert any(reason.startswith("checks_sha256: baseline") for reason in reasons), reasons


def test_json_lines_read_like_one_export(traces: Path, tmp_path: Path) -> None:
    export = json.loads((traces / "agent.json").read_text())
    lines = [json.dumps({"resourceSpans": [{**rs, "scopeSpans": [ss]}]})
             for rs in export["resourceSpans"] for ss in rs["scopeSpans"]]
    assert len(lines) >= 2
    (tmp_path / "agent.jsonl").write_text("\n".join(lines) + "\n")
    one = read_otel(traces / "agent.json", traces / "checks.yaml")
    many = read_otel(tmp_path / "agent.jsonl", traces / "checks.yaml")
    assert many.tests == one.tests


def test_otlp_protobuf_reads_like_its_json(traces: Path) -> None:
    one = read_otel(traces / "agent.json", traces / "checks.yaml")
    binary = read_otel(traces / "agent.binpb", traces / "checks.yaml")
    assert binary.tests == one.tests and binary.key == one.key
    done = evalkit_cli("evalkit.cli.main", "adapt", "otel", str(traces / "agent.json"), str(traces / "agent.binpb"),
                       "--checks", str(traces / "checks.yaml"))
    assert done.returncode == 0 and "decision: GO" in done.stdout, done.stdout + done.stderr


def test_truncated_otlp_protobuf_is_refused(traces: Path, tmp_path: Path) -> None:
    cut = tmp_path / "cut.binpb"
    cut.write_bytes((traces / "agent.binpb").read_bytes()[:-25])
    with pytest.raises(InputError, match=r"cut.binpb: not an OTLP protobuf trace export \(.*\); check that the file is a whole export"):
        read_otel(cut, traces / "checks.yaml")


def test_deeply_nested_otlp_protobuf_is_refused() -> None:
    pytest.importorskip("opentelemetry.proto", reason="install evalkit's [otel] or [test] extra")
    from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

    request = ExportTraceServiceRequest()
    span = request.resource_spans.add().scope_spans.add().spans.add()
    span.trace_id, span.span_id, span.name = b"t" * 16, b"s" * 8, "chat"
    attribute = span.attributes.add()
    attribute.key, value = "nested", attribute.value
    for _ in range(5000):  # an attribute value nested 5,000 levels deep
        inner = value.kvlist_value.values.add()
        inner.key, value = "a", inner.value
    with pytest.raises(InputError, match=r"x.binpb: not an OTLP protobuf trace export \("):
        read_otlp(request.SerializeToString(), "x.binpb", protobuf=True)


def test_without_a_checks_file_the_command_is_a_usage_error(traces: Path) -> None:
    done = evalkit_cli("evalkit.cli.main", "adapt", "otel", str(traces / "agent.json"), str(traces / "agent.json"))
    assert done.returncode == 3
    assert "--checks" in done.stderr


# -- authored traces: the case rules and the refusals ------------------------------------------------------------

def _span(span_id: str, parent: str | None = None, name: str = "step", trace: str = "t1",
          **attributes: Any) -> dict[str, Any]:
    values = [{"key": key.replace("__", "."), "value": {"intValue": str(v)} if isinstance(v, int)
               else {"stringValue": v}} for key, v in attributes.items()]
    span = {"traceId": trace, "spanId": span_id, "name": name, "startTimeUnixNano": str(int(span_id, 16)),
            "endTimeUnixNano": str(int(span_id, 16) + 1), "attributes": values}
    if parent is not None:
        span["parentSpanId"] = parent
    return span


def _export(*spans: dict[str, Any]) -> str:
    return json.dumps({"resourceSpans": [{"resource": {}, "scopeSpans": [{"scope": {}, "spans": list(spans)}]}]})


CHAT = {"gen_ai__operation__name": "chat", "gen_ai__request__model": "m"}


def test_root_spans_are_cases_named_by_their_names_without_case_ids() -> None:
    text = _export(_span("01", name="case-a"), _span("02", "01", **CHAT), _span("03", name="case-b", trace="t2"),
                   _span("04", "03", trace="t2", **CHAT), _span("05", name="unrelated-http", trace="t3"))
    cases, notes = trajectories(read_otlp(text.encode(), "x.json"), "x.json")
    assert sorted(cases) == ["case-a", "case-b"]
    assert notes == ["1 root span(s) without GenAI spans below them are not cases"]
    bare = _export(_span("01", evalkit__case_id="c1"), _span("02", "01", gen_ai__operation__name="execute_tool",
                                                             gen_ai__tool__name="search"))
    _, notes = trajectories(read_otlp(bare.encode(), "x.json"), "x.json")
    assert notes == ["1 tool call(s) record no arguments (gen_ai.tool.call.arguments): argument checks find nothing "
                     "to match on them; record arguments where the tools are traced"]
    twice = _export(_span("01", name="agent"), _span("02", "01", **CHAT), _span("03", name="agent", trace="t2"),
                    _span("04", "03", trace="t2", **CHAT))
    with pytest.raises(InputError, match="case 'agent' appears twice .*set the span attribute evalkit.case_id"):
        trajectories(read_otlp(twice.encode(), "x.json"), "x.json")


def test_a_case_inside_a_case_is_refused() -> None:
    text = _export(_span("01", evalkit__case_id="outer"), _span("02", "01", evalkit__case_id="inner"),
                   _span("03", "02", **CHAT))
    with pytest.raises(InputError, match="holds case"):
        trajectories(read_otlp(text.encode(), "x.json"), "x.json")


def _chain(depth: int) -> str:
    spans = [_span(f"{n + 1:x}", f"{n:x}" if n else None, **(CHAT if n == depth - 1 else {})) for n in range(depth)]
    return _export(*spans)


@pytest.mark.parametrize(("data", "message"), [
    (_export(_span("01", name="GET /"), _span("02", "01")).encode(), r"no span follows OpenTelemetry's GenAI"),
    (_export(_span("01", **CHAT)).encode()[:-40], r"x.json: "),
    (_export(_span("01", **CHAT), _span("01", **CHAT)).encode(), r"span id '01' appears twice in trace 't1'"),
    (_export(_span("01", "03", **CHAT), _span("02", "01"), _span("03", "02")).encode(), r"is its own ancestor"),
    (_export(_span("01", "01", **CHAT)).encode(), r"span '01' of trace 't1' is its own ancestor"),
    (_chain(MAX_SPAN_DEPTH + 2).encode(), rf"nests more than {MAX_SPAN_DEPTH} spans deep"),
    (_export(_span("01", big="x" * (MAX_ATTRIBUTE_CHARS + 1), **CHAT)).encode(), r"more than 1,048,576"),
    (_export(_span("01", name="caf\udce9", **CHAT)).encode(), r"lone surrogate"),
    (_export(_span("01", name="CAFE", **CHAT)).encode().replace(b"CAFE", b"caf\xe9"), r"not UTF-8 text"),
    (json.dumps({"resourceLogs": []}).encode(), r"not an OTLP trace export \(a logs export, not traces\)"),
    (b"", r"the trace export is empty"),
])
def test_bad_traces_are_refused_in_one_line(data: bytes, message: str) -> None:
    with pytest.raises(InputError, match=message) as caught:
        trajectories(read_otlp(data, "x.json"), "x.json")
    assert "\n" not in str(caught.value)


def test_a_chain_at_the_depth_bound_is_read() -> None:
    cases, _ = trajectories(read_otlp(_chain(MAX_SPAN_DEPTH + 1).encode(), "x.json"), "x.json")
    assert len(cases["step"].steps) == 1


def test_a_truncated_json_lines_file_names_the_line(tmp_path: Path) -> None:
    line = _export(_span("01", evalkit__case_id="a", **CHAT))
    with pytest.raises(InputError, match=r"x.json line 2: "):
        read_otlp((line + "\n" + line[:-30] + "\n").encode(), "x.json")


def _hostile(tmp_path: Path, name: str) -> Path:
    path = tmp_path / f"{name}.json"
    if name == "deep":  # a parent chain of 100,000 spans: no walk may recurse or run long
        path.write_text(_chain(100_000))
    elif name == "huge":  # a 50 MB attribute
        path.write_text(_export(_span("01", big="x" * 50_000_000, **CHAT)))
    elif name == "cycle":
        path.write_text(_export(*[_span(f"{n:x}", f"{(n + 1) % 5000:x}", **CHAT) for n in range(5000)]))
    else:  # a span name that is not UTF-8
        path.write_bytes(_export(_span("01", name="NAME", **CHAT)).encode().replace(b"NAME", b"\xff\xfe"))
    return path


@pytest.mark.parametrize(("name", "message"), [
    ("deep", "nests more than"), ("huge", "more than 1,048,576"), ("cycle", "is its own ancestor"),
    ("non-utf8", "not UTF-8 text"),
])
def test_a_hostile_trace_is_one_line_exit_3_in_a_bounded_child(tmp_path: Path, name: str, message: str) -> None:
    path = _hostile(tmp_path, name)
    checks = tmp_path / "checks.yaml"
    checks.write_text(CHECKS)
    done = evalkit_bounded("adapt", "otel", str(path), str(path), "--checks", str(checks))
    assert done.returncode == 3, done.stderr[-2000:]
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and message in lines[0] and str(path) in lines[0], lines


def test_the_attributes_the_guide_names_are_read() -> None:
    """Authored spans: a structured argument value, a result that is not text, an error said by `error.type` and an
    `exception` event, a model named only in the response, and the final answer from `gen_ai.output.messages`."""
    tool = _span("02", "01", name="execute_tool lookup", gen_ai__operation__name="execute_tool",
                 gen_ai__tool__name="lookup", error__type="KeyError")
    tool["attributes"] += [
        {"key": "gen_ai.tool.call.arguments", "value": {"kvlistValue": {"values": [
            {"key": "id", "value": {"intValue": "7"}}, {"key": "deep", "value": {"boolValue": True}}]}}},
        {"key": "gen_ai.tool.call.result", "value": {"arrayValue": {"values": [{"doubleValue": 1.5}]}}}]
    tool["events"] = [{"name": "exception", "attributes": [{"key": "exception.message",
                                                            "value": {"stringValue": "no such id: 7"}}]}]
    answer = json.dumps([{"role": "assistant", "parts": [{"type": "text", "content": "It is "},
                                                         {"type": "text", "content": "seven."}]}])
    chat = _span("03", "01", gen_ai__operation__name="chat", gen_ai__response__model="m-2026",
                 gen_ai__output__messages=answer)
    text = _export(_span("01", evalkit__case_id="c1"), tool, chat)
    cases, _ = trajectories(read_otlp(text.encode(), "x.json"), "x.json")
    call, result, model, final = cases["c1"].steps
    assert isinstance(call, ToolCall) and (call.id, call.arguments) == ("02", {"id": 7, "deep": True})
    assert isinstance(result, ToolResult) and (result.content, result.error, result.error_message) == \
        ("[1.5]", True, "no such id: 7")
    assert isinstance(model, ModelCall) and model.model == "m-2026" and model.milliseconds == 0.000001
    assert final.model_dump() == {"kind": "final_answer", "text": "It is seven."}
