"""What a decision was made from, for `decision.json` and `decision.md`: the policy's identity, the SHA-256 and
eval key of both reports, and evalkit's version. Computed at the command's edge; `decide()` never sees it.

A reader can check every part: `sha256sum` of each report file, and the policy's hash is
`evalkit.core.policy.policy_sha256` (SHA-256 of the validated policy as canonical JSON, defaults filled in), so
the same rules hash alike whether they came from a file, a composed config option or command-line overrides.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from evalkit.core.policy import Policy, policy_sha256
from evalkit.core.version import __version__
from evalkit.records.decision import Evidence, PolicyIdentity, ReportIdentity
from evalkit.records.report_reader import RunReport

__all__ = ["evidence", "policy_identity", "report_identity"]


def policy_identity(policy: Policy, *, fallback_name: str, source: str, chosen_by: str,
                    overrides: Sequence[str] = ()) -> PolicyIdentity:
    """The policy's name (its own `name`, else the option or file it came from), `version`, where it was read
    from (a file, or `conf/policy/<name>.yaml` plus command-line `policy.*` overrides), why it was the one
    used, and the SHA-256 of its content."""
    return PolicyIdentity(name=policy.name or fallback_name, version=policy.version, source=source,
                          overrides=list(overrides), chosen_by=chosen_by, sha256=policy_sha256(policy))


def report_identity(where: str, sha256: str, report: RunReport) -> ReportIdentity:
    """A compared report: where it was read or written, the SHA-256 of its bytes, its eval key."""
    return ReportIdentity(path=where, sha256=sha256, eval=dict(sorted(report.eval.items())))


def evidence(policy: PolicyIdentity, baseline: ReportIdentity, candidate: ReportIdentity,
             sources: Mapping[str, Mapping[str, object]] | None = None) -> Evidence:
    """The evidence of a decision made now, by this evalkit; `sources`: the other tool's files `evalkit adapt`
    read each side from."""
    return Evidence(policy=policy, baseline=baseline, candidate=candidate, evalkit_version=__version__,
                    sources=sources)
