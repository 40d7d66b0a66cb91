"""The examples project's config composed in process, as `evalkit run` composes it: the `hydra_conf` fixture
(registered in conftest) opens Hydra on the project's conf/ for a test module, and `composed` gives the composed
config as plain data for evalkit.core.config.validate_config."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hydra import compose, initialize_config_dir
from omegaconf import OmegaConf

CONF = Path(__file__).resolve().parents[2] / "conf"


@pytest.fixture(scope="module")
def hydra_conf() -> Iterator[None]:
    with initialize_config_dir(config_dir=str(CONF), version_base="1.3"):
        yield


def composed(*overrides: str) -> dict[str, Any]:
    """The composed config with `overrides`; `run.out` set, as Hydra's job folder would set it."""
    data = OmegaConf.to_container(compose("config", overrides=["run.out=/tmp/evalkit-test-out", *overrides]),
                                  resolve=True)
    assert isinstance(data, dict)
    return {str(k): v for k, v in data.items()}
