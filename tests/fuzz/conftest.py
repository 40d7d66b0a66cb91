"""Hypothesis profiles of the fuzz harness: `quick` by default (CI, under a minute on two cores), `long` on demand
(`python -m pytest tests/fuzz -p hypothesis --hypothesis-profile=long`)."""

from __future__ import annotations

from hypothesis import HealthCheck, settings

# Each example is a file sent to a child process: Hypothesis's per-example deadline would measure that round trip,
# so the harness bounds each read itself (READ_TIMEOUT_S in test_readers.py).
settings.register_profile("quick", max_examples=12, deadline=None, derandomize=True, database=None,
                          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
settings.register_profile("long", max_examples=1500, deadline=None,
                          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
settings.load_profile("quick")  # `--hypothesis-profile=long` loads another after this
