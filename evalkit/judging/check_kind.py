"""The check-kind extension point: what one kind of `checks.yaml` entry is (its name, the model of the value under
its key, its pure verdict function), and the registry group every kind, evalkit's own included, is found through.

A `checks.yaml` entry names exactly one kind by a key (`regex: "^\\d+$"`, `toxicity: {max: 0.2}`); the value under
that key is validated by the kind's `options` type (a pydantic model with `extra="forbid"`, or a plain type such as
`str`), and the kind's `verdict` judges one case's value with it. evalkit's own kinds are registered in its
pyproject.toml under `evalkit.check_kinds` exactly as another package registers its own, so the kinds' names are
written once, in the entry points (and, as the registry checks, on the values themselves): the file's format
(evalkit.judging.check_spec), the judging (evalkit.judging.checks) and the reference page all read the registry.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

from pydantic import BaseModel

from evalkit.core.registry import Kind, entries, load, load_all

if TYPE_CHECKING:
    from evalkit.core.dataset import Case
    from evalkit.judging.check_spec import CheckSpec

__all__ = ["CHECK_KINDS", "CheckKind", "Reads", "Shown", "Verdict", "check_kind", "kind_names", "reference"]

Reads = Literal["reply", "judge", "trajectory"]
"""What a kind's verdict reads: the task's reply (or the value at the entry's `field`), the pinned judge's answer
about the reply, or an agent case's trajectory. A plugin kind reads the reply; the other two need evalkit's
planner (the judge calls it plans, the trajectory the agent loop records)."""
Shown = Literal["reply", "trajectory", "conversation"]
"""What evalkit's planner shows the judge for a judged kind: the case's reply (planned with the reply), an agent
case's trajectory (`trajectory-goal`), or a conversation case's whole transcript with the task's system prompt (the
conversation judges, evalkit.judging.conversation_judges). The last two are both read from the case's recorded
trajectory, so both are planned once the agent's loop or the conversation's last turn has ended; a conversation
kind is refused on a dataset without conversations."""


@dataclass(frozen=True)
class Verdict:
    """One check's result on one case: passed or not, and, when not, one line of expected against came."""

    passed: bool
    message: str = ""
    predicted: str | None = None
    """classification checks: the label the reply gave (None when the reply gave none), for the metrics."""
    metrics: Mapping[str, float | None] = field(default_factory=dict)
    """Numbers the check measured on the case, kept as the metrics `<check>.<name>`: a ready-made judge's
    `score`, a pairwise check's `win`, `tie`, `loss` and `disagree`; None where it could not measure one."""
    ran: bool = True
    """False when the check could not judge the case at all: `message` says why, it neither passed nor failed."""

    @classmethod
    def could_not_run(cls, spec: CheckSpec, why: str) -> Verdict:
        """The verdict of a check that could not judge the case: why, and each of its metrics unmeasured."""
        return cls(False, why, metrics=dict.fromkeys(spec.metric_names), ran=False)


VerdictFunction = Callable[["CheckSpec", Any, "Case", Callable[[str], Any]], Verdict]
"""`verdict(spec, value, case, load) -> Verdict`: pure. `spec.options` is the entry's value under the kind's key,
validated by the kind's `options`; `value` is what the check reads (the reply's text, or the parsed JSON at the
entry's `field`); `load` imports a `module:function` of the suite's folder (the `python` kind's need; others
ignore it). A reply the kind cannot read fails with a message, never raises."""


@dataclass(frozen=True)
class CheckKind:
    """One kind of `checks.yaml` entry, as a package registers it under `evalkit.check_kinds`."""

    name: str
    """The key that names the kind in a `checks.yaml` entry; equal to the name it is registered under."""
    options: Any
    """The type of the value under the key, validated when the file is read: a pydantic model with
    `extra="forbid"` (so a typo in it is refused with its allowed keys), or a plain type (`str`, `int` ...)."""
    verdict: VerdictFunction
    """The pure function that judges one case (VerdictFunction)."""
    summary: str
    """When it passes, in one line, for the generated reference (Markdown allowed)."""
    reads: Reads = "reply"
    shown: Shown = "reply"
    """A judged kind (`reads="judge"`): what the judge is shown about the case (Shown)."""
    json: bool = False
    """Whether the reply must parse as JSON for the kind to judge it (without a `field`, too)."""
    false_is_absent: bool = False
    """Whether `KEY: false` names no kind at all (`is-json: false`), as an unset key does."""
    metric_names: tuple[str, ...] = ()
    """The metrics the kind measures on each case (`<check>.<name>`), each None where the check could not run."""
    case_fields: Callable[[Any], Iterable[tuple[str, str]]] = lambda options: ()
    """The case fields its options name, each with the key under the kind's that names it (`""` for the value
    itself: `equals: {case: FIELD}`; `context` for `faithfulness: {context: FIELD}`): a field no case of the run's
    dataset has is refused when the file is read, since the check could never run."""

    def __post_init__(self) -> None:
        if self.shown != "reply" and self.reads != "judge":
            raise TypeError(f"check kind {self.name!r}: only a judged kind (reads='judge') shows the judge "
                            f"a {self.shown}")
        # the contract's one promise about options: a model refuses the keys it does not know, with its list
        if isinstance(self.options, type) and issubclass(self.options, BaseModel) \
                and self.options.model_config.get("extra") != "forbid":
            raise TypeError(f"check kind {self.name!r}: its options model {self.options.__name__} must set "
                            "model_config = ConfigDict(extra='forbid')")


CHECK_KINDS: Kind[CheckKind] = Kind("evalkit.check_kinds", "check kind", CheckKind, lambda kind: kind.name)
"""The check-kind extension point in evalkit's registry (public in evalkit.plugins)."""


def kind_names() -> tuple[str, ...]:
    """Every registered kind's name, sorted (the registry's order: the same whatever the install order), without
    importing any of them."""
    return tuple(entries(CHECK_KINDS))


def check_kind(name: str) -> CheckKind:
    """The registered kind `name`, imported (an unknown name lists the installed ones)."""
    return load(CHECK_KINDS, name)


def reference() -> str:
    """Every registered kind as a Markdown table for the docs: its key, what it reads, who registered it, when it
    passes."""
    owners = {name: entry.owner for name, entry in entries(CHECK_KINDS).items()}
    lines = ["| kind | reads | from | passes when |", "|---|---|---|---|"]
    lines += [f"| `{name}` | {_reads(kind)} | {owners[name]} | {kind.summary.replace('|', chr(92) + '|')} |"
              for name, kind in load_all(CHECK_KINDS).items()]
    return "\n".join(lines) + "\n"


def _reads(kind: CheckKind) -> str:
    return f"judge (of the {kind.shown})" if kind.reads == "judge" else kind.reads
