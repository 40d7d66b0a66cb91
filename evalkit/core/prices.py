"""The price table: what a model's tokens cost in US dollars, with the date and the page each figure was read from.

The table is the `prices` config group (`conf/prices/NAME.yaml`; evalkit ships `default`, and a project adds its own
files or replaces `default` with one of the same name). Its keys are model names; a model (and the judge) is priced
by the entry whose key is exactly its `name`, so `gpt-4o` prices `gpt-4o` and nothing else: no prefix, no alias, no
guess. Every entry states all six fields, `null` where the service publishes no such price, so an entry in a later
file replaces an earlier one whole and never inherits a figure with another entry's date.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from evalkit.core.errors import ConfigError, describe_validation

__all__ = ["PriceEntry", "GROUP", "check_price_file", "price_of", "prices_where"]

GROUP = "prices"
"""The config group of price files (`conf/prices/*.yaml`)."""


class PriceEntry(BaseModel):
    """One model's published prices, in US dollars per million tokens."""

    model_config = ConfigDict(extra="forbid", frozen=True, use_attribute_docstrings=True)

    input: float = Field(ge=0, allow_inf_nan=False)
    """Input tokens that were not read from (or written to) a prompt cache."""
    output: float = Field(ge=0, allow_inf_nan=False)
    """Output tokens (reasoning tokens included, as the providers bill them)."""
    cached_input: float | None = Field(ge=0, allow_inf_nan=False)
    """Input tokens read from the provider's prompt cache; null where the service publishes no such price."""
    cache_write: float | None = Field(ge=0, allow_inf_nan=False)
    """Input tokens written to the prompt cache (Anthropic, Bedrock); null where the service publishes none."""
    as_of: dt.date
    """The day the figures were read from `source` (`YYYY-MM-DD`): prices change, so every cost says its date."""
    source: str = Field(pattern=r"^https://\S+$", max_length=500)
    """The page that published the figures (an https URL)."""

    @field_validator("as_of", mode="before")
    @classmethod
    def _iso_day(cls, value: Any) -> Any:
        # a date only: `2026-12-02`, never a time or a number of seconds pydantic would read as one
        if isinstance(value, str) and len(value) == 10:
            return value
        if isinstance(value, dt.date) and not isinstance(value, dt.datetime):
            return value
        raise ValueError("as_of is the day the figures were read, written YYYY-MM-DD (e.g. 2026-12-02)")

    def to_json(self) -> dict[str, Any]:
        """The entry as a run report records it, beside the money it priced."""
        return self.model_dump(mode="json")


def price_of(table: Mapping[str, PriceEntry], name: str) -> PriceEntry | None:
    """The entry priced for model `name`: the one whose key is exactly `name`; None when there is none."""
    return table.get(name)


def check_price_file(data: Any, where: str) -> dict[str, PriceEntry]:
    """One price file's entries, each checked on its own: a refusal names the file, the model and the field (one
    line), so a wrong figure is found where it is written, not in the merged table."""
    if data is None:
        return {}
    if not isinstance(data, Mapping):
        raise ConfigError(f"{where}: a price file maps model names to prices (`MODEL: {{input: ..., output: ..., "
                          f"cached_input: ..., cache_write: ..., as_of: YYYY-MM-DD, source: https://...}}`); "
                          f"got {type(data).__name__}")
    entries = {}
    for name, entry in data.items():
        try:
            entries[str(name)] = PriceEntry.model_validate(entry)
        except ValidationError as error:
            raise ConfigError(describe_validation(error, PriceEntry, f"{where}: {name}") + _HINT) from None
    return entries


_HINT = (" (every entry states input, output, cached_input and cache_write in USD per million tokens, null where "
         "the service publishes no such price, as_of and source)")


def prices_where(choices: Mapping[str, str]) -> str:
    """The files the composed table came from, as a refusal names them (Hydra records no choice for a group chosen
    as a list, as `prices` is: then the group's folder)."""
    chosen = choices.get(GROUP)
    names = [n.strip(" '\"") for n in (chosen or "").strip("[]").split(",") if n.strip(" '\"")]
    return ", ".join(f"conf/{GROUP}/{n}.yaml" for n in names) or f"the price table (conf/{GROUP}/*.yaml)"
