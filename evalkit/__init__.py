"""evalkit: turn a change to an LLM application into a release decision a reviewer can trust and re-run.

Everything a suite needs is importable from here. The names are re-exported lazily, so `import evalkit` has no
side effects and stays cheap (and `evalkit gate` does not import the gate twice); type checkers read
the same names through the imports under TYPE_CHECKING, so `from evalkit import Request` is typed.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from evalkit.core.config import Mode, ModelConfig, RunConfig
    from evalkit.core.dataset import Case, Dataset, load_dataset
    from evalkit.core.errors import EvalkitError
    from evalkit.core.key import EvalKey
    from evalkit.core.policy import Policy
    from evalkit.core.version import __version__
    from evalkit.gate.decide import decide
    from evalkit.gate.decision import Decision, ExitCode, Verdict
    from evalkit.gate.findings import Effect, Finding
    from evalkit.judging.pairwise import (
        NEW_FIRST,
        OLD_FIRST,
        VERDICT_SCHEMA,
        PairOutcome,
        PairVerdict,
        combine,
        pairwise_prompts,
        parse_verdict,
    )
    from evalkit.judging.rubric import Rubric, load_rubric
    from evalkit.judging.slices import language_of
    from evalkit.live.providers.base import CallFailure, Provider
    from evalkit.programs.grade import Grade
    from evalkit.records.call import Message, Reply, Request, Usage
    from evalkit.records.report_reader import RunReport
    from evalkit.run.manifest import ManifestDataset, load_manifest_dataset

__all__ = [
    "NEW_FIRST", "OLD_FIRST", "VERDICT_SCHEMA", "CallFailure", "Case", "Dataset", "Decision", "Effect", "EvalKey",
    "EvalkitError", "ExitCode", "Finding", "Grade", "ManifestDataset", "Message", "Mode", "ModelConfig",
    "PairOutcome", "PairVerdict", "Policy", "Provider", "Reply", "Request", "Rubric", "RunConfig", "RunReport",
    "Usage", "Verdict", "__version__", "combine", "decide", "language_of", "load_dataset", "load_manifest_dataset",
    "load_rubric", "pairwise_prompts", "parse_verdict",
]

_WHERE = {
    "Case": "evalkit.core.dataset", "Dataset": "evalkit.core.dataset", "load_dataset": "evalkit.core.dataset",
    "Decision": "evalkit.gate.decision", "ExitCode": "evalkit.gate.decision", "Verdict": "evalkit.gate.decision",
    "Effect": "evalkit.gate.findings", "Finding": "evalkit.gate.findings",
    "EvalKey": "evalkit.core.key", "EvalkitError": "evalkit.core.errors", "Grade": "evalkit.programs.grade",
    "Message": "evalkit.records.call", "CallFailure": "evalkit.live.providers.base",
    "Provider": "evalkit.live.providers.base", "Reply": "evalkit.records.call",
    "Request": "evalkit.records.call", "Usage": "evalkit.records.call",
    "Mode": "evalkit.core.config", "ModelConfig": "evalkit.core.config", "RunConfig": "evalkit.core.config",
    "Policy": "evalkit.core.policy", "RunReport": "evalkit.records.report_reader", "decide": "evalkit.gate.decide",
    "NEW_FIRST": "evalkit.judging.pairwise", "OLD_FIRST": "evalkit.judging.pairwise",
    "VERDICT_SCHEMA": "evalkit.judging.pairwise", "PairOutcome": "evalkit.judging.pairwise",
    "PairVerdict": "evalkit.judging.pairwise", "combine": "evalkit.judging.pairwise",
    "pairwise_prompts": "evalkit.judging.pairwise", "parse_verdict": "evalkit.judging.pairwise",
    "Rubric": "evalkit.judging.rubric", "load_rubric": "evalkit.judging.rubric",
    "language_of": "evalkit.judging.slices",
    "ManifestDataset": "evalkit.run.manifest", "load_manifest_dataset": "evalkit.run.manifest",
    "__version__": "evalkit.core.version",
}


def __getattr__(name: str) -> Any:
    module = _WHERE.get(name)
    if module is None:
        raise AttributeError(f"module 'evalkit' has no attribute {name!r}")
    return getattr(importlib.import_module(module), name)


def __dir__() -> list[str]:
    return sorted(__all__)
