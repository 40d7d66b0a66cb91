"""The layers that isolate a candidate program, and how a run report states which of them held.

A program run's `provenance.isolation` is `{"layers": {layer: {"held": bool, "detail": str}}, "label": str}`:
one entry per layer, so a policy can require layers (`require_isolation`) without reading sentences.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping
from typing import Any

__all__ = ["Layer", "isolation_label", "layers_held"]


class Layer(enum.StrEnum):
    """One layer of a candidate program's isolation."""

    FILESYSTEM = "filesystem"  # a mount namespace showing the task folder, the runtime and a private /tmp only
    NETWORK = "network"  # an empty network namespace (abstract Unix sockets of the host cut with it)
    PID = "pid"  # a PID namespace with its own /proc; the whole tree dies with it
    USER = "user"  # not root on the host, no capabilities, no_new_privs
    LIMITS = "limits"  # memory, CPU time, processes and disk written, all enforced


def layers_held(provenance: Mapping[str, Any]) -> dict[Layer, bool] | None:
    """Which layers a run report's provenance says held; None when it states no layers (a report written before
    layers were recorded, or one that is not a program run)."""
    isolation = provenance.get("isolation")
    layers = isolation.get("layers") if isinstance(isolation, Mapping) else None
    if not isinstance(layers, Mapping):
        return None
    return {layer: isinstance(layers.get(layer.value), Mapping) and layers[layer.value].get("held") is True
            for layer in Layer}


def isolation_label(isolation: Any) -> Any:
    """A program run's `provenance.isolation` as one line: the label naming its layers (a report written before
    layers were recorded carries that label alone)."""
    return isolation.get("label") if isinstance(isolation, Mapping) else isolation
