"""The submitit launchers (Slurm, local) that account for every job of a sweep (see evalkit/sweeps/launchers.py)."""

from __future__ import annotations

from collections.abc import Sequence

try:
    from hydra_plugins.hydra_submitit_launcher.submitit_launcher import LocalLauncher, SlurmLauncher
except ImportError:  # the `launchers` extra is not installed: no submitit launcher to extend
    __all__: list[str] = []
else:
    from hydra.core.utils import JobReturn

    from evalkit.sweeps.launchers import Accounted

    __all__ = ["EvalkitSlurmLauncher", "EvalkitLocalLauncher"]

    class EvalkitSlurmLauncher(Accounted, SlurmLauncher):  # type: ignore[misc]
        """`hydra/launcher=submitit_slurm`: one Slurm array job per sweep batch; every job accounted for."""

        def launch(self, job_overrides: Sequence[Sequence[str]], initial_job_idx: int) -> Sequence[JobReturn]:
            return self.launch_accounted(job_overrides, initial_job_idx)

    class EvalkitLocalLauncher(Accounted, LocalLauncher):  # type: ignore[misc]
        """`hydra/launcher=submitit_local`: one local process per job; every job accounted for."""

        def launch(self, job_overrides: Sequence[Sequence[str]], initial_job_idx: int) -> Sequence[JobReturn]:
            return self.launch_accounted(job_overrides, initial_job_idx)
