"""`policy_from=git:REF`: gate a run under its policy option as that option is at REF, not as the checkout has it.

A pull request can edit `conf/policy/` in the same change it is gated on; deciding it under the base branch's
file means a PR that lowers a floor to let its own candidate through is still decided under main's floor. The
new policy applies once it is merged (the CI workflow posts `evalkit policy-diff` for a PR that changes one).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from evalkit.cli.policy_diff import read_policy
from evalkit.core.errors import InputError
from evalkit.core.policy import Policy
from evalkit.project.options import find_option
from evalkit.project.paths import find_project

__all__ = ["GIT", "policy_at_ref"]

GIT = "git:"


def policy_at_ref(spec: str, option: str, overrides: Sequence[str]) -> tuple[Policy, dict[str, Any]]:
    """The policy option `option` as it is at the ref of `spec` (`git:REF`), and where it was read from.

    `policy.*` overrides on the command line are refused with it: they would change the base branch's policy from
    the pull request's side, which is what reading it from REF rules out."""
    ref = spec[len(GIT):] if spec.startswith(GIT) else ""
    if not ref or ":" in ref:
        raise InputError(f"policy_from={spec[:200]!r}: expected git:REF, e.g. policy_from=git:origin/main (the "
                         "policy option this run composed, read as it is at REF)")
    changed = [o for o in overrides if o.lstrip("+~").split("=", 1)[0].startswith("policy.")]
    if changed:
        raise InputError(f"{changed[0][:200]}: policy.* overrides cannot be combined with policy_from={spec} (the "
                         "policy is read as it is at that ref); change the policy file in its own pull request")
    path = find_option("policy", option).resolve()
    root = (find_project() or Path.cwd()).resolve()
    if not path.is_relative_to(root):
        # an option evalkit ships (evalkit/conf/policy/): the installed evalkit's, not something the PR edits
        return read_policy(str(path)), {"source": str(path), "at": None}
    relative = "./" + path.relative_to(root).as_posix()
    git_spec = f"{GIT}{ref}:{relative}"
    try:
        policy = read_policy(git_spec)
    except InputError as error:
        raise InputError(f"policy_from={spec}: policy {option!r} ({relative}) cannot be read at {ref}: {error}. A "
                         "policy that this change adds is used once it is merged; until then gate with its base "
                         "branch's policy option (policy=NAME) or without policy_from") from None
    return policy, {"source": git_spec, "at": ref}
