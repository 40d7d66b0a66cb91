"""Authored fixtures: a suite's recording written by a hand-made policy in place of a model.

The policy answers through the real live path (every request is what a live run sends, every reply is recorded and
fingerprinted as a model's), then the recording is marked `authored`, with a note saying who wrote the replies, so
no reader takes it for a model's. The shipped suites' `author_recordings.py` scripts call `record_authored`.
"""

from __future__ import annotations

import sys
from collections.abc import Collection, Sequence
from pathlib import Path

from evalkit.live.providers.base import Provider

__all__ = ["record_authored"]


def record_authored(suite: str, policy: Provider, note: str, argv: Sequence[str], *,
                    decided: Collection[int] = (0,)) -> int:
    """Run `suite` live with `policy` in place of every provider (the model, and a judge or simulated user), then
    mark each recording it made `authored` with `note`. `decided`: the run's exit codes that still make a fixture
    (a suite with a case that fails on purpose blocks: 1). Run from the project root; `argv` are overrides."""
    import evalkit.run.record_or_replay as record_or_replay
    from evalkit.cli.run import main as evalkit_main
    from evalkit.run.recording import load_recording, save_recording

    record_or_replay._provider = lambda model, role: policy  # noqa: SLF001 - the policy plays every provider
    sys.argv = [sys.argv[0], f"suite={suite}", "mode=live", "baseline=none", *argv]  # Hydra reads sys.argv
    code = evalkit_main()
    if code not in decided:
        return code
    for path in sorted(Path("recordings", suite).glob("*.json")):
        recording = load_recording(path)
        if recording.provenance.kind == "recorded" and recording.provenance.note != note:
            authored = recording.provenance.model_copy(update={"kind": "authored", "note": note, "producer": None})
            save_recording(recording.model_copy(update={"provenance": authored}), path)
            print(f"marked {path} as an authored fixture", file=sys.stderr)
    return 0
