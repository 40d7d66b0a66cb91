"""Sweeps: what Hydra calls around the jobs of a multirun, apart from the commands.

summary (the sweep callback: the summary of every job's files, and the sweep's exit code) and launchers (submitit
launchers that account for every job, declared to Hydra in hydra_plugins/evalkit_launchers). Hydra finds both by
their dotted paths, so they live in a package of their own below cli/, which only starts the run.
"""
