"""Hypothesis profiles of the fuzz harness: `quick` by default (CI, under a minute on two cores), `long` on demand
(`python -m pytest tests/fuzz -p hypothesis --hypothesis-profile=long`)."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, settings

# Each example is a file sent to a child process: Hypothesis's per-example deadline would measure that round trip,
# so the harness bounds each read itself (READ_TIMEOUT_S in test_readers.py).
settings.register_profile("quick", max_examples=25, deadline=None, derandomize=True, database=None,
                          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
settings.register_profile("long", max_examples=1500, deadline=None,
                          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])


@pytest.fixture
def fuzz_settings(request: pytest.FixtureRequest) -> settings:
    """The profile the harness runs under: `--hypothesis-profile=NAME` if given, else `quick`. Applied to the
    harness's tests only, so the rest of the suite keeps its own Hypothesis settings."""
    chosen = request.config.getoption("hypothesis_profile", None)
    return settings.get_profile(chosen or "quick")
