"""`evalkit policy-diff`'s Markdown: what the rules change, then each decision that changes and why (for the
reviewer of a policy pull request; evalkit.gate.policy_change decides the pairs again)."""

from __future__ import annotations

from typing import Any

from evalkit.core.policy import Policy, policy_sha256
from evalkit.core.untrusted import markdown, terminal
from evalkit.gate.policy_change import PolicyChange

__all__ = ["render_policy_diff"]


def render_policy_diff(old_spec: str, old: Policy, new_spec: str, new: Policy, change: PolicyChange, scope: str,
                       skipped: list[str]) -> str:
    """The Markdown a reviewer reads: what the rules change, then each decision that changes and why."""
    lines = [f"### Policy change: `{_cell(old_spec)}` → `{_cell(new_spec)}`", ""]
    lines += [f"- old: sha256 `{policy_sha256(old)[:12]}`; new: sha256 `{policy_sha256(new)[:12]}`"]
    keys = change.changed_keys
    lines += ["- rules changed: " + (", ".join(f"`{k}` {_value(a)} → {_value(b)}" for k, (a, b) in keys.items())
                                     if keys else "none (the two policies are the same rules)")]
    lines += [f"- decided again: {markdown(scope)}", ""]
    flips, changed = change.flips, change.changed
    lines.append(f"**{flips} decision(s) change**, {len(changed) - flips} keep their decision with other reasons, "
                 f"{change.same} unchanged, of {change.pairs} pair(s).")
    lines.append("")
    if changed:
        lines += ["| suite | baseline | candidate | decision | exit code | reasons that disappear | reasons that "
                  "appear |", "|---|---|---|---|---|---|---|"]
        for row in changed:
            before, after = row.before.decision, row.after.decision
            verdict = (f"**{str(before).upper()} → {str(after).upper()}**" if before != after
                       else f"{str(after).upper()} (same)")
            pair = row.pair
            lines.append(f"| {markdown(pair.suite)} | `{_cell(pair.baseline)}` | `{_cell(pair.candidate)}` | "
                         f"{verdict} | {row.codes[0]} → {row.codes[1]} | {_list(row.gone)} | {_list(row.came)} |")
        lines.append("")
    if skipped:
        lines += [f"<details><summary>Not decided ({len(skipped)})</summary>", ""]
        lines += [f"- {markdown(line)}" for line in skipped] + ["", "</details>", ""]
    return "\n".join(lines).rstrip() + "\n"


def _value(value: Any) -> str:
    return f"`{_cell(str(value))}`"


def _list(reasons: list[str]) -> str:
    return "<br>".join(markdown(r) for r in reasons) or "-"


def _cell(text: str) -> str:
    """Report data inside a code span in a Markdown table cell: no line breaks or control characters, no column
    separators, no backtick to close the span (markup inside a code span is shown, never read)."""
    return terminal(text).replace("|", "\\|").replace("`", "'")
