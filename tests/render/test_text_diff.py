"""What changed in the texts two runs measured (evalkit.render.text_diff): a diff per changed text, nothing for an
unchanged one, and a note rather than a made-up diff when the baseline kept no text."""

from __future__ import annotations

import hashlib

from evalkit.render.text_diff import MAX_LINES, text_diffs


def kept(text: str, version: str = "v1") -> dict[str, object]:
    return {"version": version, "path": f"prompts/{version}.txt", "text": text, "cut": 0,
            "sha256": hashlib.sha256(text.encode()).hexdigest()}


def test_a_changed_prompt_is_a_unified_diff_with_its_counts():
    old, new = "a\nb\nc\nd", "a\nb\nC\nd\ne"
    [diff] = text_diffs({"prompt": kept(old)}, {"prompt": kept(new, "v2")})
    assert diff.name == "prompt" and diff.before.startswith("v1 prompts/v1.txt (sha256 ")
    assert [line for kind, line in diff.lines if kind != "context"] == ["@@ -1,4 +1,5 @@", "-c", "+C", "+e"]
    assert diff.counts == {"added": 2, "removed": 1} and diff.note == ""


def test_an_unchanged_text_shows_nothing_and_a_missing_baseline_text_a_note():
    assert text_diffs({"prompt": kept("x")}, {"prompt": kept("x", "v2")}) == []  # same bytes: no diff
    [diff] = text_diffs({}, {"prompt": kept("x")})
    assert diff.lines == () and "the baseline's report keeps no prompt text" in diff.note


def test_a_long_diff_is_cut_and_the_rest_counted():
    old = "\n".join(f"line {i}" for i in range(500))
    new = "\n".join(f"LINE {i}" for i in range(500))
    [diff] = text_diffs({"prompt": kept(old)}, {"prompt": kept(new)})
    assert len(diff.lines) == MAX_LINES and diff.more == 1001 - MAX_LINES  # a hunk line, 500 removed, 500 added
