"""evalkit: turn a change to an LLM application into a release decision a reviewer can trust and re-run.

The public API is re-exported here lazily, so `import evalkit` has no side effects and stays cheap
(and `python -m evalkit.gate` does not import the gate twice).
"""

from __future__ import annotations

import importlib
from typing import Any

__all__ = [
    "CallFailure", "Case", "Dataset", "Decision", "EvalKey", "EvalkitError", "ExitCode", "Grade", "Message", "Mode",
    "ModelConfig",
    "Policy", "Provider", "Reply", "Request", "RunConfig", "RunReport", "Usage", "Verdict", "__version__", "decide",
]

_WHERE = {
    "Case": "evalkit.core.dataset", "Dataset": "evalkit.core.dataset",
    "Decision": "evalkit.gate.decision", "ExitCode": "evalkit.gate.decision", "Verdict": "evalkit.gate.decision",
    "EvalKey": "evalkit.core.key", "EvalkitError": "evalkit.core.errors", "Grade": "evalkit.programs.grade",
    "Message": "evalkit.live.providers.base", "CallFailure": "evalkit.live.providers.base",
    "Provider": "evalkit.live.providers.base", "Reply": "evalkit.live.providers.base",
    "Request": "evalkit.live.providers.base", "Usage": "evalkit.live.providers.base",
    "Mode": "evalkit.core.config", "ModelConfig": "evalkit.core.config", "RunConfig": "evalkit.core.config",
    "Policy": "evalkit.core.policy", "RunReport": "evalkit.core.report", "decide": "evalkit.gate.decide",
    "__version__": "evalkit.core.version",
}


def __getattr__(name: str) -> Any:
    module = _WHERE.get(name)
    if module is None:
        raise AttributeError(f"module 'evalkit' has no attribute {name!r}")
    return getattr(importlib.import_module(module), name)


def __dir__() -> list[str]:
    return sorted(__all__)
