"""The reply contract: a finished reply has text, a stop reason is one we know; wording is never checked."""

from __future__ import annotations

import typing
from pathlib import Path

import pytest

from evalkit.live.contract import (
    BLOCKED_PREFIX,
    StopKind,
    contract_problems,
    known_stop_reasons,
    stop_kind,
    tool_stop_reasons,
)
from evalkit.records.call import Reply, ToolCall, Usage
from evalkit.run.recording import Recording

PROJECT_ROOT = Path(__file__).resolve().parents[2]  # this repository: the examples project

RECORDED = Reply(text="You can return a new bike within 30 days of delivery.", stop_reason="stop",
                 usage=Usage(input_tokens=30, output_tokens=12))


# --- the printed examples ---

def test_the_seed_replies():
    reworded = Reply(text="Thirty days from delivery.", stop_reason="stop", usage=Usage(input_tokens=30, output_tokens=6))
    empty = Reply(text="", stop_reason="stop", usage=Usage(input_tokens=3, output_tokens=0))
    odd = Reply(text="x", stop_reason="weird", usage=Usage(input_tokens=3, output_tokens=1))
    assert contract_problems(RECORDED) == []
    assert contract_problems(reworded) == []  # another wording is not a contract problem
    assert contract_problems(empty) == ["a finished reply needs text"]
    assert len(contract_problems(odd)) == 1
    assert contract_problems(odd)[0].startswith("unknown stop_reason 'weird' (known: ")


# --- the stop-reason vocabulary ---

@pytest.mark.parametrize("reason, kind", [
    ("stop", StopKind.FINISHED),  # ollama, openai, gemini
    ("length", StopKind.TRUNCATED),  # ollama, openai
    ("max_tokens", StopKind.TRUNCATED),  # gemini
    ("content_filter", StopKind.FILTERED),  # openai
    ("safety", StopKind.FILTERED), ("recitation", StopKind.FILTERED), ("blocklist", StopKind.FILTERED),
    ("prohibited_content", StopKind.FILTERED), ("spii", StopKind.FILTERED),  # gemini
    ("tool_calls", StopKind.OTHER), ("function_call", StopKind.OTHER),  # openai
    ("other", StopKind.OTHER), ("malformed_function_call", StopKind.OTHER),  # gemini
    ("blocked: safety", StopKind.FILTERED), ("blocked: jailbreak", StopKind.FILTERED),  # gemini prompt feedback
])
def test_provider_stop_reasons_map_to_the_vocabulary(reason, kind):
    assert stop_kind(reason) is kind
    assert not any(p.startswith("unknown stop_reason") for p in contract_problems(Reply(text="x", stop_reason=reason)))


@pytest.mark.parametrize("reason", [
    "STOP", "Stop", "end", "finish_reason_unspecified", "load", "unload", "blocked: ", "blocked:safety", " stop", "",
])
def test_anything_else_is_unknown(reason):
    assert stop_kind(reason) is None
    assert contract_problems(Reply(text="x", stop_reason=reason)) == [
        f"unknown stop_reason {reason!r} (known: {', '.join(sorted(known_stop_reasons()))}, {BLOCKED_PREFIX}<reason>)"]


def test_the_vocabulary_is_small():
    assert [k.value for k in StopKind] == ["finished", "truncated", "filtered", "other"]
    assert set(known_stop_reasons().values()) == set(StopKind)
    assert all(reason == reason.lower().strip() for reason in known_stop_reasons())


def test_gemini_finish_reasons_are_lower_cased_sdk_values():
    genai = pytest.importorskip("google.genai.types")
    values = {str(r.value).lower() for r in genai.FinishReason}
    from evalkit.live.providers.gemini import STOP_REASONS as GEMINI

    assert set(GEMINI) <= values, "a gemini stop reason in the table is not one the SDK reports"


def test_anthropic_stop_reasons_are_the_sdks():
    types = pytest.importorskip("anthropic.types")
    from evalkit.live.providers.anthropic import STOP_REASONS as ANTHROPIC

    assert set(ANTHROPIC) == set(typing.get_args(types.StopReason))


def test_bedrock_stop_reasons_are_the_converse_apis():
    botocore_session = pytest.importorskip("botocore.session")
    from evalkit.live.providers.bedrock import STOP_REASONS as BEDROCK

    model = botocore_session.get_session().get_service_model("bedrock-runtime")
    assert set(BEDROCK) == set(model.operation_model("Converse").output_shape.members["stopReason"].enum)


def test_a_missing_stop_reason_is_a_problem():
    assert contract_problems(Reply(text="fine text", stop_reason=None)) == [
        "no stop_reason: a finished reply cannot be told from a cut-off one"]
    assert stop_kind(None) is None


# --- a finished reply needs text ---

@pytest.mark.parametrize("text", ["", "   ", "\n\t", None])
def test_a_finished_reply_without_text_is_a_problem(text):
    assert contract_problems(Reply(text=text, stop_reason="stop")) == ["a finished reply needs text"]


@pytest.mark.parametrize("reason", ["length", "max_tokens", "content_filter", "safety", "blocked: safety"])
@pytest.mark.parametrize("text", ["", None])
def test_only_a_finished_reply_needs_text(reason, text):
    # A filtered reply may carry no text; a truncated one may have spent its tokens thinking.
    assert contract_problems(Reply(text=text, stop_reason=reason)) == []


# --- tool calls ---

CALL = ToolCall(id="call_0", tool="lookup_order", arguments={"order": "A-17"})


@pytest.mark.parametrize("reason", ["tool_calls", "function_call", "tool_use"])  # openai, llamacpp; anthropic, bedrock
@pytest.mark.parametrize("text", ["", None, "Let me look that up."])
def test_a_tool_use_stop_with_its_calls_needs_no_text(reason, text):
    assert contract_problems(Reply(text=text, stop_reason=reason, tool_calls=(CALL,))) == []


@pytest.mark.parametrize("reason", ["tool_calls", "function_call", "tool_use"])
@pytest.mark.parametrize("text", ["", None, "Let me look that up.", "[1, 2]", "{not json"])
def test_a_tool_use_stop_without_calls_is_a_problem(reason, text):
    problems = contract_problems(Reply(text=text, stop_reason=reason))
    assert f"stopped for tool use ({reason}) but called no tool" in problems


def test_a_forced_schema_tools_answer_is_text_not_a_missing_call():
    # Anthropic's and Bedrock's structured output: the forced tool's input, a JSON object, is the reply's text
    assert contract_problems(Reply(text='{"label": "bug"}', stop_reason="tool_use")) == []


@pytest.mark.parametrize("reason", ["stop"])  # Gemini, Ollama: a normal stop after calling tools
def test_a_finished_reply_with_calls_and_no_text_is_fine(reason):
    assert contract_problems(Reply(text=None, stop_reason=reason, tool_calls=(CALL,))) == []
    assert contract_problems(Reply(text="", stop_reason=reason, tool_calls=(CALL,))) == []


def test_tool_stop_reasons_come_from_the_specs():
    assert tool_stop_reasons() == {"tool_calls", "function_call", "tool_use"}
    assert all(stop_kind(reason) is StopKind.OTHER for reason in tool_stop_reasons())


def test_an_unknown_or_missing_stop_reason_never_claims_finished():
    problems = contract_problems(Reply(text=None, stop_reason="weird"))
    assert len(problems) == 1 and problems[0].startswith("unknown stop_reason")  # unknown: finished is not claimed
    assert contract_problems(Reply(text=" ", stop_reason=None)) == [
        "no stop_reason: a finished reply cannot be told from a cut-off one"]


def test_usage_and_latency_are_not_part_of_the_contract():
    assert contract_problems(Reply(text="x", stop_reason="stop", usage=Usage(), latency_ms=None)) == []


# --- recorded replies meet it ---

def test_every_shipped_recorded_reply_meets_the_contract():
    paths = sorted((PROJECT_ROOT / "recordings").rglob("*.json"))
    assert paths, "no recordings shipped"
    checked = 0
    for path in paths:
        recording = Recording.model_validate_json(path.read_text(encoding="utf-8"))
        for call_id, entry in recording.calls.items():
            if entry.reply is not None:
                assert contract_problems(entry.reply) == [], f"{path.name}: {call_id}"
                checked += 1
    assert checked > 0
