"""A pytest plugin: the `installed_entry_points` fixture, the installed packages' entry points as evalkit's registry
(evalkit.core.registry) reads them, replaced by a list the test fills; evalkit's own built-ins still come from its
pyproject.toml, as in a source tree."""

from __future__ import annotations

from collections.abc import Iterator
from importlib.metadata import EntryPoint

import pytest

from evalkit.core import provider_specs, registry

OWNER = "a third party"
"""The package every entry the test adds is said to come from."""


@pytest.fixture
def installed_entry_points(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[EntryPoint]]:
    found: list[EntryPoint] = []
    monkeypatch.setattr(registry, "_installed", lambda group: [
        (p.name, p.value, OWNER) for p in found if p.group == group])

    def forget() -> None:
        registry.forget()
        provider_specs.provider_specs.cache_clear()  # the providers' own cache over the registry's

    forget()
    yield found
    forget()
