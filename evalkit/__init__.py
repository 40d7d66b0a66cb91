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
    "Case": "evalkit.dataset", "Dataset": "evalkit.dataset",
    "Decision": "evalkit.decision", "ExitCode": "evalkit.decision", "Verdict": "evalkit.decision",
    "EvalKey": "evalkit.key", "EvalkitError": "evalkit.errors", "Grade": "evalkit.grade",
    "Message": "evalkit.providers.base", "CallFailure": "evalkit.providers.base",
    "Provider": "evalkit.providers.base", "Reply": "evalkit.providers.base",
    "Request": "evalkit.providers.base", "Usage": "evalkit.providers.base",
    "Mode": "evalkit.config", "ModelConfig": "evalkit.config", "RunConfig": "evalkit.config",
    "Policy": "evalkit.policy", "RunReport": "evalkit.report", "decide": "evalkit.gate",
    "__version__": "evalkit.version",
}


def __getattr__(name: str) -> Any:
    module = _WHERE.get(name)
    if module is None:
        raise AttributeError(f"module 'evalkit' has no attribute {name!r}")
    return getattr(importlib.import_module(module), name)


def __dir__() -> list[str]:
    return sorted(__all__)
