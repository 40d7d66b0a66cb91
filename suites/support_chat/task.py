"""The support chat's task: the assistant's instructions only. Each case is a conversation (its `conversation`
field: scripted user turns, or a simulated customer), whose turns evalkit appends one by one, recording each reply."""

from evalkit import Message, Request


def build_task(case, prompt, model):
    return Request(model=model.name, options=model.options, messages=(Message(role="system", content=prompt),))
