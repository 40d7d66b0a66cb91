"""What every provider's tool-call mapping shares: ids for wire formats that give none, the tool a result answers,
and the refusal of what a wire format cannot say.

Each provider writes its own wire shape (OpenAI's `tool_calls`, Anthropic's `tool_use` blocks, Gemini's
`functionCall` parts ...); these are the rules they must all keep alike, so a conversation means the same on every
provider and a request a provider cannot express is refused, never sent with a part of it dropped.
"""

from __future__ import annotations

from pydantic import JsonValue

from evalkit.core.provider_specs import ToolChoiceName
from evalkit.live.providers.base import CallFailure, Provider
from evalkit.records.call import Message, NamedTool, Reply, Request

__all__ = ["WithoutTools", "answered_tools", "made_up_id", "object_arguments", "prior_tool_calls", "refuse_unsendable",
           "unsupported"]


def unsupported(name: str, provider: str, field: str, why: str) -> CallFailure:
    """The refusal of a request a provider's wire format cannot express: not retryable (trying again sends the same
    request), naming the model, the provider and the field."""
    return CallFailure(f"{name}: the {provider} provider cannot send {field}: {why}", retryable=False)


def prior_tool_calls(request: Request) -> int:
    """How many tool calls the request's assistant turns already hold: where made-up ids of a reply start."""
    return sum(len(m.tool_calls) for m in request.messages)


def made_up_id(request: Request, index: int) -> str:
    """A call id for a wire format that gives none (Gemini, Ollama): `call_<n>`, counting every tool call in the
    conversation, so the same request always gets the same ids (a replay matches) and no two calls of one
    conversation share one (a tool message names exactly the call it answers)."""
    return f"call_{prior_tool_calls(request) + index}"


def answered_tools(name: str, provider: str, messages: tuple[Message, ...]) -> dict[str, str]:
    """The tool each tool message answers, by the call id it names, for a wire format that sends a result by the
    tool's name (Gemini's `functionResponse`, Ollama's `tool_name`). A result that answers no earlier call is
    refused: sent by guess, it would tell the model a tool said something it never asked for."""
    called: dict[str, str] = {}
    answered: dict[str, str] = {}
    for message in messages:
        for call in message.tool_calls:
            called[call.id] = call.tool
        if message.role == "tool":
            assert message.tool_call_id is not None  # a tool message has one (Message's validation)
            if message.tool_call_id not in called:
                raise unsupported(name, provider, f"the tool message for call {message.tool_call_id!r}",
                                  "no earlier assistant turn made a call with that id; answer a call the "
                                  "conversation holds")
            answered[message.tool_call_id] = called[message.tool_call_id]
    return answered


def object_arguments(name: str, provider: str, arguments: JsonValue, call_id: str) -> dict[str, JsonValue]:
    """A call's arguments for a wire format that takes only a JSON object (Anthropic's `input`, Gemini's `args`,
    Bedrock's and Ollama's): a call whose arguments were kept as malformed text cannot be sent back as it was."""
    if not isinstance(arguments, dict):
        raise unsupported(name, provider, f"the arguments of tool call {call_id!r}",
                          f"its wire format takes a JSON object, and these are {type(arguments).__name__} "
                          f"({str(arguments)[:80]!r})")
    return arguments


def refuse_unsendable(name: str, provider: str, choices: tuple[ToolChoiceName, ...], request: Request) -> None:
    """Refuse a request whose tool choice the provider's wire format cannot say (its spec's `tool_choices`)."""
    if request.tool_choice is None:
        return
    kind: ToolChoiceName = "named" if isinstance(request.tool_choice, NamedTool) else request.tool_choice
    if kind not in choices:
        raise unsupported(name, provider, f"tool_choice {kind!r}",
                          f"its API has no such setting (it can send: {', '.join(choices)}); choose another, or "
                          "another provider")


class WithoutTools:
    """A provider that does not speak tools (its spec declares no `tool_choices`), kept from a request that uses
    them: it would send the messages' text and leave the tools, the calls and the results out unsaid. Everything
    else (its `describe`) is the provider's own."""

    def __init__(self, provider: Provider, name: str, kind: str) -> None:
        self._provider = provider
        self._name = name
        self._kind = kind

    def complete(self, request: Request) -> Reply:
        if request.tools or request.tool_choice is not None or any(
                m.tool_calls or m.role == "tool" for m in request.messages):
            raise unsupported(self._name, self._kind, "tools, tool calls or tool results",
                              "its spec declares no tool_choices: it does not speak tool calling")
        return self._provider.complete(request)

    def __getattr__(self, name: str) -> object:
        return getattr(self._provider, name)
