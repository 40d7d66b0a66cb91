"""evalkit's extension points, in one public module: what a plugin package implements and how it registers it.

Every kind of plugin is a value registered under a name in an entry-point group of the plugin package's
pyproject.toml. evalkit's built-ins are registered exactly so, in evalkit's own pyproject.toml, and found by the
same registry (evalkit.core.registry), so a third-party provider or source is a peer of the built-ins:

| kind      | entry-point group    | the registered value | example in evalkit                         |
|-----------|----------------------|----------------------|--------------------------------------------|
| provider  | `evalkit.providers`  | a `ProviderSpec`     | `openai = "evalkit.live.providers.openai:SPEC"` |
| source    | `evalkit.adapters`   | a `Source`           | `junit = "evalkit.adapt.junit:SOURCE"`     |
| gate rules| `evalkit.rules`      | a `RuleSet`          | `evalkit = "evalkit.gate.rules:BUILTIN"`   |
| suite kind| `evalkit.suite_kinds`| a `SuiteKind`        | `extraction = "evalkit.project.suite_kinds:EXTRACTION"` |
| check kind| `evalkit.check_kinds`| a `CheckKind`        | `regex = "evalkit.judging.checks:REGEX"`   |

A provider's spec builds a `Provider` (the call contract: `Request` in, `Reply` out, `CallFailure` for what went
wrong), importable from `evalkit`. A source reads another tool's result file into a `NeutralRun` of
`AdaptedTest`s. A rule set's `Rule`s read a `Compared` (both reports under the policy) and yield `Finding`s; a
policy runs another package's rule only when it names it under `rules:`. A suite kind plans the files `evalkit new
suite NAME --kind KIND` writes (`folder_kind` makes one from a folder of templates). A check kind is a key of a
`checks.yaml` entry: its `options` type (a pydantic model with `extra="forbid"`) validates the value under the key
when the file is read, and its pure `verdict(spec, value, case, load)` turns one case's reply into a `Verdict`.
docs/how-to/add-a-provider.md, docs/how-to/add-an-adapter-source.md and docs/how-to/add-a-check-kind.md walk
through three of them.

The names are loaded lazily, as in `evalkit`: importing this module imports nothing else of evalkit.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from evalkit.adapt.framework import SOURCES, Source
    from evalkit.adapt.neutral import AdaptedTest, NeutralRun, SourceKey, fingerprint_inputs
    from evalkit.core.dataset import Case
    from evalkit.core.provider_specs import PROVIDERS, ProviderSpec, StopKindName
    from evalkit.core.registry import Entry, Kind, entries, load, load_all
    from evalkit.gate.compared import Compared
    from evalkit.gate.findings import Effect, Finding
    from evalkit.gate.rules import RULE_SETS, Rule, RuleSet
    from evalkit.judging.check_kind import CHECK_KINDS, CheckKind, Verdict
    from evalkit.judging.check_spec import CheckSpec
    from evalkit.live.providers.base import CallFailure, Provider
    from evalkit.project.suite_kinds import SUITE_KINDS, SuiteKind, folder_kind
    from evalkit.records.call import Message, Reply, Request, Usage

__all__ = [
    "CHECK_KINDS", "PROVIDERS", "RULE_SETS", "SOURCES", "SUITE_KINDS", "AdaptedTest", "CallFailure", "Case",
    "CheckKind", "CheckSpec", "Compared", "Effect", "Entry", "Finding", "Kind", "Message", "NeutralRun", "Provider",
    "ProviderSpec", "Reply", "Request", "Rule", "RuleSet", "Source", "SourceKey", "StopKindName", "SuiteKind", "Usage",
    "Verdict", "entries", "fingerprint_inputs", "folder_kind", "load", "load_all",
]

_WHERE = {
    "SOURCES": "evalkit.adapt.framework", "Source": "evalkit.adapt.framework",
    "AdaptedTest": "evalkit.adapt.neutral", "NeutralRun": "evalkit.adapt.neutral",
    "SourceKey": "evalkit.adapt.neutral", "fingerprint_inputs": "evalkit.adapt.neutral",
    "PROVIDERS": "evalkit.core.provider_specs", "ProviderSpec": "evalkit.core.provider_specs",
    "StopKindName": "evalkit.core.provider_specs",
    "Entry": "evalkit.core.registry", "Kind": "evalkit.core.registry", "entries": "evalkit.core.registry",
    "load": "evalkit.core.registry", "load_all": "evalkit.core.registry",
    "Compared": "evalkit.gate.compared", "Effect": "evalkit.gate.findings", "Finding": "evalkit.gate.findings",
    "RULE_SETS": "evalkit.gate.rules", "Rule": "evalkit.gate.rules", "RuleSet": "evalkit.gate.rules",
    "CallFailure": "evalkit.live.providers.base", "Message": "evalkit.records.call",
    "Provider": "evalkit.live.providers.base", "Reply": "evalkit.records.call",
    "Request": "evalkit.records.call", "Usage": "evalkit.records.call",
    "SUITE_KINDS": "evalkit.project.suite_kinds", "SuiteKind": "evalkit.project.suite_kinds",
    "folder_kind": "evalkit.project.suite_kinds",
    "CHECK_KINDS": "evalkit.judging.check_kind", "CheckKind": "evalkit.judging.check_kind",
    "Verdict": "evalkit.judging.check_kind", "CheckSpec": "evalkit.judging.check_spec", "Case": "evalkit.core.dataset",
}


def __getattr__(name: str) -> Any:
    if name not in _WHERE:
        raise AttributeError(f"module 'evalkit.plugins' has no attribute {name!r}")
    return getattr(importlib.import_module(_WHERE[name]), name)


def __dir__() -> list[str]:
    return sorted(__all__)
