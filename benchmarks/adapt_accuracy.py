"""Benchmark: how many of the shared corpus's files evalkit reads right, per tool, and its silent wrong decisions.

Every file of ../shared/corpus/{wild,holdout-2026-12-03} (or EVALKIT_CORPUS) is read by evalkit and judged
against tests/helpers/corpus_manifest.tsv and the independent readers of tests/helpers/corpus.py (no evalkit code):
- read right: a file read with the outcomes its own fields hold, gated against itself as its row says, or a file
  refused in one line with the words its row names;
- silent wrong decision: a read file whose copy with one passing test made to fail does not BLOCK (written to a
  temporary folder), or a file read with wrong outcomes and no refusal.

Run from the project root:  .venv/bin/python benchmarks/adapt_accuracy.py
Lines: `<tool> read_right=<n>/<files> (<share>)`, then `silent_wrong_decisions=<n>` (the target: 0).
"""

from __future__ import annotations

import sys
import tempfile
from collections import Counter
from pathlib import Path

PROJECT_ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(PROJECT_ROOT), str(PROJECT_ROOT / "tests")]
from helpers.corpus import READERS, corpus_root, manifest, mismatch  # noqa: E402
from test_corpus_wild import FLIPPERS  # noqa: E402

from evalkit.adapt.framework import gate_runs  # noqa: E402
from evalkit.core.errors import InputError  # noqa: E402
from evalkit.core.policy import STRICT_DEFAULT  # noqa: E402
from evalkit.gate.decision import Verdict  # noqa: E402


def main() -> int:
    root = corpus_root()
    if not root.is_dir():
        print(f"no shared corpus at {root}; set EVALKIT_CORPUS", file=sys.stderr)
        return 3
    files, right, silent = Counter[str](), Counter[str](), []
    with tempfile.TemporaryDirectory() as scratch:
        for index, row in enumerate(manifest().values()):
            files[row.tool] += 1
            path = root / row.path
            try:
                run = READERS[row.tool](path)
            except InputError as refusal:
                right[row.tool] += row.expect == "refused" and row.words in str(refusal) and "\n" not in str(refusal)
                continue
            if mismatch(path, row.tool, run) is not None:
                silent.append(f"{row.path}: {mismatch(path, row.tool, run)}")
                continue
            itself = gate_runs(STRICT_DEFAULT, run, run).decision.decision
            right[row.tool] += row.expect != "refused" and itself is Verdict(row.expect)
            folder = Path(scratch) / str(index)
            folder.mkdir()
            flip = FLIPPERS[row.tool](path, run, folder)
            if flip is not None and gate_runs(STRICT_DEFAULT, flip[1], flip[2]).decision.decision is not Verdict.BLOCK:
                silent.append(f"{row.path}: a copy with {flip[0]!r} made to fail does not block")
    for tool in sorted(files):
        print(f"{tool} read_right={right[tool]}/{files[tool]} ({right[tool] / files[tool]:.1%})")
    total = sum(files.values())
    print(f"all read_right={sum(right.values())}/{total} ({sum(right.values()) / total:.1%})")
    for line in silent:
        print(f"  silent: {line}")
    print(f"silent_wrong_decisions={len(silent)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
