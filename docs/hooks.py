"""MkDocs hook: fill the reference pages from evalkit itself, so they cannot drift from the program.

A page marks where generated text goes with an HTML comment: `<!-- evalkit:options MODULE:CLASS [PREFIX] -->`
(a config model's options as a table), `<!-- evalkit:schema MODULE:CLASS -->` (its JSON Schema),
`<!-- evalkit:commands -->` (`evalkit --help` and every subcommand's `--help`), `<!-- evalkit:rules -->` (the gate's
rules, evalkit.gate.rules), `<!-- evalkit:api -->` (every name `from evalkit import` offers) and
`<!-- evalkit:judges -->` (the prompts of the judged check kinds, evalkit.judging) and `<!-- evalkit:check_kinds -->`
(every installed check kind, evalkit.judging.check_kind).
"""

from __future__ import annotations

import contextlib
import importlib
import io
import json
import re
from typing import Any

_MARK = re.compile(r"<!-- evalkit:(options|schema|commands|rules|api|judges|check_kinds)"
                   r"(?: ([\w.:]+))?(?: ([\w.]+))? -->")


def _target(spec: str) -> Any:
    module, _, name = spec.partition(":")
    return getattr(importlib.import_module(module), name)


def _commands() -> str:
    from evalkit.cli.main import SUBCOMMANDS, usage

    parts = ["```text\n" + usage() + "```\n"]
    for name, sub in SUBCOMMANDS.items():
        if name == "run":
            continue  # Hydra's own help: see the configuration reference
        module = importlib.import_module(sub.module)
        parts.append(f"## evalkit {name}\n\n```text\n{_help(module, [])}```\n")
        for command in _subcommands(module):  # `evalkit new suite --help` and the like: their own options
            parts.append(f"### evalkit {name} {command}\n\n```text\n{_help(module, [command])}```\n")
    return "\n".join(parts)


def _help(module: Any, words: list[str]) -> str:
    out = io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.suppress(SystemExit):
        module.main([*words, "--help"])
    return out.getvalue()


def _subcommands(module: Any) -> list[str]:
    """The subcommands of a command whose parser has them (`evalkit new project | suite | ci`), in order."""
    import argparse

    build = getattr(module, "build_parser", None)
    if build is None:
        return []
    return [name for action in build()._actions if isinstance(action, argparse._SubParsersAction)
            for name in action.choices]


def _api() -> str:
    import evalkit

    lines = ["| name | from | what it is |", "|---|---|---|"]
    for name in evalkit.__all__:
        value = getattr(evalkit, name)
        if callable(value) or isinstance(value, type):
            what = " ".join((value.__doc__ or "").strip().split("\n\n")[0].split())
        else:  # a constant: its value says what it is
            what = f"the constant `{value!r}`" if isinstance(value, str) else "a constant (see the module)"
        cell = what.replace("|", "\\|")
        lines.append(f"| `{name}` | `{evalkit._WHERE[name]}` | {cell} |")
    return "\n".join(lines) + "\n"


def _judges() -> str:
    """Each judged kind's system message as the judge receives it, then the user message's form."""
    from evalkit.judging import llm_rubric, pairwise, pairwise_check, ready_judges

    def block(text: str) -> str:
        return "```text\n" + text.rstrip("\n") + "\n```\n"

    parts = []
    for kind in ready_judges.JUDGES:
        parts.append(f"#### {kind}\n\n{block(ready_judges.system_prompt(kind))}")
    steps = "\n".join(f"{n}. {step}" for n, step in enumerate(ready_judges.FIXED_STEPS, start=1))
    parts.append(f"A `g-eval` check without `steps` gives the judge these:\n\n{block(steps)}")
    parts.append(f"#### llm-rubric\n\n{block(llm_rubric.JUDGE_PROMPT)}")
    question = pairwise.pairwise_prompts("QUESTION", new="FIRST", old="SECOND", instruction="CRITERION")
    parts.append(f"#### pairwise\n\nThe system message:\n\n{block(pairwise_check.PAIRWISE_SYSTEM)}\nThe user "
                 "message, once with the new reply first and once with it second:\n\n"
                 f"{block(question[pairwise.NEW_FIRST])}\nThe criterion by default:\n\n"
                 f"{block(pairwise.DEFAULT_INSTRUCTION)}")
    return "\n".join(parts)


def _fill(match: re.Match[str]) -> str:
    from evalkit.render.reference import options_table

    kind, spec, prefix = match.group(1), match.group(2), match.group(3)
    if kind == "commands":
        return _commands()
    if kind == "rules":
        from evalkit.gate.rules import reference

        return reference()
    if kind == "api":
        return _api()
    if kind == "judges":
        return _judges()
    if kind == "check_kinds":
        from evalkit.judging.check_kind import reference as check_kinds

        return check_kinds()
    target = _target(spec)
    if kind == "options":
        return options_table(target, f"{prefix}." if prefix else "")
    schema = target() if callable(target) and not isinstance(target, type) else target.model_json_schema()
    text = schema if isinstance(schema, str) else json.dumps(schema, indent=2, sort_keys=True)
    return "```json\n" + text.rstrip("\n") + "\n```\n"


def on_page_markdown(markdown: str, **_: Any) -> str:
    return _MARK.sub(_fill, markdown)
