"""Refuse to decide on candidate-program runs whose isolation fell short of what the policy requires.

Checked before `decide()`: a run in which a candidate program could have read its references or reached the
network is not evidence a decision can rest on, so it is an input error (exit code 3), not a block.
"""

from __future__ import annotations

from evalkit.core.errors import InputError
from evalkit.core.isolation import layers_held
from evalkit.core.policy import Policy
from evalkit.records.report_reader import RunReport

__all__ = ["refuse_short_isolation"]


def refuse_short_isolation(policy: Policy, reports: dict[str, RunReport]) -> None:
    """Raise InputError naming the first report (by its name in `reports`: baseline, candidate) that ran candidate
    programs without every layer in `policy.require_isolation` held. Reports that ran no program are not
    concerned."""
    if not policy.require_isolation:
        return
    required = ", ".join(policy.require_isolation)
    for name, report in reports.items():
        if not report.candidate:  # no candidate program ran: nothing to isolate
            continue
        held = layers_held(report.provenance)
        if held is None:
            raise InputError(f"{name} run report: its provenance.isolation names no layers, and the policy requires "
                             f"{required}; run it again with this evalkit")
        short = [layer.value for layer in policy.require_isolation if not held[layer]]
        if short:
            raise InputError(f"{name} run report: isolation {', '.join(short)} not held, and the policy requires "
                             f"{required} (provenance.isolation says why); run it where bubblewrap works "
                             "(apt-get install bubblewrap), or use a policy that does not require it")
