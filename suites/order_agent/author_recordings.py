"""Write the order agent's shipped recording from hand-authored model replies.

No model can be reached where evalkit is developed, so the recording is an AUTHORED FIXTURE: `authored_reply` below
is a hand-written policy that plays the model's part (look the order up, then the customer when the question is
about them, then answer from what the tools returned), and the file says so in its provenance. The tools are the
suite's real ones: their results in the recording are what tools.py returned. Replace the fixture with a real
recording by running `python -m evalkit suite=order_agent mode=live model=...` against a model that calls tools.

Usage (from the project root):  python suites/order_agent/author_recordings.py [overrides ...]
"""

from __future__ import annotations

import json
import re
import sys
from typing import Any

from evalkit.records.call import Reply, Request, ToolCall, Usage

NOTE = ("authored fixture: model replies written by a hand-made policy (suites/order_agent/author_recordings.py), "
        "not produced by any model; the tool results are the suite's own tools'")


def _question(request: Request) -> str:
    return next(m.text for m in reversed(request.messages) if m.role == "user")


def _results(request: Request) -> dict[str, list[tuple[Any, bool]]]:
    """Tool name -> its results so far (parsed JSON where it is JSON), and whether each was an error."""
    names = {call.id: call.tool for m in request.messages for call in m.tool_calls}
    out: dict[str, list[tuple[Any, bool]]] = {}
    for message in request.messages:
        if message.role == "tool" and message.tool_call_id is not None:
            try:
                value: Any = json.loads(message.text)
            except ValueError:
                value = message.text
            out.setdefault(names.get(message.tool_call_id, "?"), []).append((value, message.error))
    return out


def _call(step: int, tool: str, arguments: Any) -> Reply:
    return Reply(tool_calls=(ToolCall(id=f"call_{step}", tool=tool, arguments=arguments),), stop_reason="tool_calls",
                 usage=Usage(input_tokens=40 * step, output_tokens=12))


def _answer(text: str) -> Reply:
    return Reply(text=text, stop_reason="stop", usage=Usage(input_tokens=90, output_tokens=len(text.split())))


def authored_reply(request: Request) -> Reply:
    """The authored model's reply to one step. A question may carry a directive in brackets, which the tests use to
    make the model misbehave: `[loop]` calls lookup_order forever, `[unknown-tool]` calls a tool that does not
    exist, `[bad-args]` passes a text order number, `[tool:NAME]` calls the tool NAME (with no arguments) first."""
    question = _question(request)
    results = _results(request)
    step = 1 + sum(len(m.tool_calls) for m in request.messages)
    number = re.search(r"\b(\d{4})\b", question)
    order_id = int(number.group(1)) if number else 0
    errors = [value for values in results.values() for value, error in values if error]
    if errors:
        return _answer(f"Sorry, I could not look that up: {errors[0]}")
    if "[loop]" in question:
        return _call(step, "lookup_order", {"order_id": order_id})
    if "[unknown-tool]" in question and not results:
        return _call(step, "issue_refund", {"order_id": order_id})
    if "[bad-args]" in question and not results:
        return _call(step, "lookup_order", {"order_id": f"number {order_id}"})
    forced = re.search(r"\[tool:([A-Za-z_]+)\]", question)
    if forced and forced.group(1) not in results:
        return _call(step, forced.group(1), {})
    if "lookup_order" not in results:
        return _call(step, "lookup_order", {"order_id": order_id})
    order = results["lookup_order"][-1][0]
    if not isinstance(order, dict):
        return _answer(f"Order {order_id} was not found.")
    about_customer = re.search(r"\b(who|email|customer)\b", question, re.IGNORECASE)
    if about_customer and "lookup_customer" not in results:
        return _call(step, "lookup_customer", {"customer_id": order["customer_id"]})
    if about_customer:
        customer = results["lookup_customer"][-1][0]
        if not isinstance(customer, dict):
            return _answer(f"Order {order_id} has no customer on record.")
        return _answer(f"Order {order_id} was placed by {customer['name']} ({customer['email']}).")
    return _answer(f"Order {order_id} is {order['status']}; its total was {order['total_usd']:.2f} US dollars.")


class AuthoredModel:
    """The authored policy as a provider (evalkit.live.providers.base.Provider): what a live run calls."""

    def complete(self, request: Request) -> Reply:
        return authored_reply(request)


def main(argv: list[str]) -> int:
    """Run the suite live with the authored model in place of the providers, then mark the recording authored."""
    from evalkit.cli.authoring import record_authored

    return record_authored("order_agent", AuthoredModel(), NOTE, argv)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
