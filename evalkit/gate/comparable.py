"""Whether two eval keys measured the same thing, and which components differ between them. Pure."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

__all__ = ["incomparability", "changed_components", "undeclared_tool_changes"]

# Key fields that say what was measured and how, rather than which change is under test.
_NOT_COMPONENTS = frozenset({"key_version", "suite", "dataset", "dataset_sha", "judge_model", "judge_sha"})


def incomparability(baseline: Mapping[str, Any], candidate: Mapping[str, Any]) -> list[str]:
    """Why two eval keys cannot be compared (empty when they can), each reason naming what to rerun."""
    b, c = baseline, candidate
    reasons = []
    if "suite" in b and "suite" in c and b["suite"] != c["suite"]:
        reasons.append(f"baseline is a run of suite {b['suite']}, candidate of suite {c['suite']}; "
                       "gate a candidate against a baseline of the same suite")
    if b.get("dataset_sha") != c.get("dataset_sha"):
        reasons.append(f"baseline ran {b.get('dataset')} ({b.get('dataset_sha')}), candidate ran "
                       f"{c.get('dataset')} ({c.get('dataset_sha')}); rerun the baseline on the candidate's dataset")
    if b.get("judge_model") != c.get("judge_model") and str(c.get("judge_model")).startswith("checks@"):
        reasons.append(f"the suite's graders and checks changed ({b.get('judge_model')} -> {c.get('judge_model')}); "
                       "grades are not comparable: rerun the baseline under the candidate's checks")
    elif b.get("judge_model") != c.get("judge_model"):
        reasons.append(f"judge changed from {b.get('judge_model')} to {c.get('judge_model')}; judged scores are "
                       "not comparable: rerun the baseline with the candidate's judge (or keep the judge pinned)")
    elif None not in (b.get("judge_sha"), c.get("judge_sha")) and b.get("judge_sha") != c.get("judge_sha"):
        # a baseline from before the key held the judge's options has no judge_sha: nothing to compare
        reasons.append(f"the judge's options changed (judge settings {b.get('judge_sha')} -> {c.get('judge_sha')}); "
                       "judged scores are not comparable: rerun the baseline with the candidate's judge settings")
    return reasons


def undeclared_tool_changes(baseline: Mapping[str, Any], candidate: Mapping[str, Any],
                            declared: tuple[str, ...]) -> list[str]:
    """Why an agent's tools make two runs incomparable: each tool added, removed or changed (its implementation or
    schema: the key's `tools`) that the policy's `tool_changes` does not declare; empty when there is none."""
    given_before, given_after = baseline.get("tools"), candidate.get("tools")
    before: Mapping[str, Any] = given_before if isinstance(given_before, Mapping) else {}
    after: Mapping[str, Any] = given_after if isinstance(given_after, Mapping) else {}
    if "*" in declared:
        return []
    changed = [name for name in sorted({*before, *after}) if before.get(name) != after.get(name)
               and name not in declared]
    if not changed:
        return []
    shown = ", ".join(f"tools.{name} ({before.get(name, 'absent')} -> {after.get(name, 'absent')})"
                      for name in changed[:5])
    return [f"the agent's tools changed since the baseline: {shown}; their results are not those the baseline's "
            "model read: rerun the baseline with the candidate's tools, or declare the change in the policy's "
            f"tool_changes ([{', '.join(changed)}])"]


def changed_components(baseline: Mapping[str, Any], candidate: Mapping[str, Any]) -> dict[str, tuple[Any, Any]]:
    """Components whose name or fingerprint differs, in the baseline key's order."""
    b, c = _flatten(baseline), _flatten(candidate)
    names = [k for k in b if k not in _NOT_COMPONENTS] + [k for k in c if k not in b and k not in _NOT_COMPONENTS]
    return {k: (b.get(k), c.get(k)) for k in names if b.get(k) != c.get(k)}


def _flatten(key: Mapping[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for name, value in key.items():
        if name == "settings":  # beside the key (evalkit.core.key.with_settings): what its fingerprints cover
            continue
        if isinstance(value, Mapping):
            out.update({f"{name}.{k}": v for k, v in value.items()})
        else:
            out[name] = value
    return out
