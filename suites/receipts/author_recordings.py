"""Write the receipt reader's shipped recording from hand-authored model replies.

No vision model can be reached where evalkit is developed, so the recording is an AUTHORED FIXTURE: `authored_reply`
below plays the model's part by looking the receipt up by its image's SHA-256 in the dataset (it never looks at the
pixels), and reads one receipt wrong on purpose (`MISREAD`: the taxi's total without the tip), so the suite shows a
failing case. The file says so in its provenance. Replace the fixture with a real recording by running
`python -m evalkit suite=receipts mode=live model=...` against a model that takes images.

Usage (from the project root):  python suites/receipts/author_recordings.py [overrides ...]
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from evalkit.records import Reply, Request, Usage

HERE = Path(__file__).resolve().parent
NOTE = ("authored fixture: replies written by a hand-made policy that looks each receipt up by its image's SHA-256 "
        "(suites/receipts/author_recordings.py), not produced by any model")
MISREAD = {"taxi": "18.60"}
"""Case id -> the total the authored model reads wrong (a realistic miss: the line above TOTAL)."""


def _truth() -> dict[str, dict[str, str]]:
    """Image SHA-256 -> the case's id, shop and total, from the dataset and the images on disk."""
    import hashlib
    dataset = json.loads((HERE / "datasets" / "v1.json").read_text(encoding="utf-8"))
    out = {}
    for case in dataset["cases"]:
        sha = hashlib.sha256((HERE / "datasets" / case["receipt"]).read_bytes()).hexdigest()
        out[sha] = {"id": case["id"], "shop": case["shop"], "total": case["total"]}
    return out


def authored_reply(request: Request) -> Reply:
    """The authored model's reply: the shop and the total of the receipt the request carries."""
    (image,) = request.images
    found = _truth()[image.sha256]
    answer = {"shop": found["shop"], "total": MISREAD.get(found["id"], found["total"])}
    return Reply(text=json.dumps(answer), stop_reason="stop", usage=Usage(input_tokens=310, output_tokens=14))


class AuthoredModel:
    """The authored policy as a provider (evalkit.live.providers.base.Provider): what a live run calls."""

    def complete(self, request: Request) -> Reply:
        return authored_reply(request)


def main(argv: list[str]) -> int:
    """Run the suite live with the authored model in place of the providers, then mark the recording authored."""
    from evalkit.cli.authoring import record_authored

    # 1: the misread case blocks, as it should
    return record_authored("receipts", AuthoredModel(), NOTE, argv, decided=(0, 1))


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
