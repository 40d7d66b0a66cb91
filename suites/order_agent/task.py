"""The order agent's task: the shop assistant's instructions and the customer's question. evalkit offers the
suite's tools (tools.py) and runs the loop (agent.max_steps); the final answer is what the checks read."""

from evalkit import Message, Request


def build_task(case, prompt, model):
    return Request(model=model.name, options=model.options,
                   messages=(Message(role="system", content=prompt), Message(role="user", content=case.question)))
