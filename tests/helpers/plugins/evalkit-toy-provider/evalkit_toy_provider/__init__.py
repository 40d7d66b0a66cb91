"""An authored third-party evalkit provider, for tests: a "model" that answers every call from a fixed table,
without a network. It uses only evalkit's public names, as an outside package would."""

from __future__ import annotations

import json
from typing import Any

from evalkit import Reply, Request, Usage
from evalkit.core.provider_specs import ProviderSpec

TRIAGE = {"label": "bug", "priority": "p1", "summary": "A toy answer from a plugin provider."}
VERDICT = {"faithful": True, "reason": "The toy judge accepts every summary."}


class ToyProvider:
    def __init__(self, config: Any) -> None:
        self.name = config.name

    def complete(self, request: Request) -> Reply:
        properties = (request.response_schema or {}).get("properties", {})
        answer = VERDICT if "faithful" in properties else TRIAGE
        return Reply(text=json.dumps(answer), stop_reason="toy_done", usage=Usage(input_tokens=1, output_tokens=1),
                     latency_ms=0.0)

    def describe(self) -> dict[str, Any]:
        return {"provider": "toy", "model": self.name}


SPEC = ProviderSpec(name="toy", factory=ToyProvider, stop_reasons={"toy_done": "finished"},
                    requirements=("evalkit-toy-provider",))
