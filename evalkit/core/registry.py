"""One typed registry for every extension point, fed by entry points: evalkit's built-ins and a third party's alike.

Each kind of plugin (providers, adapter sources, check kinds, gate rules; tools next) is a `Kind`: an entry-point
group and the type its entries must be. A package registers an entry with one line of its pyproject.toml,

    [project.entry-points."evalkit.providers"]
    mine = "my_package.provider:SPEC"

and evalkit registers its own built-ins exactly so, in its own pyproject.toml: there is no second list of them in
the code. The one concession to working on evalkit itself is `_source_tree_entries`: a source tree run without an
install, or an editable install whose metadata predates a new built-in, reads the entries of evalkit's own
pyproject.toml, which is the same declaration, not a copy of it.

Why a typed registry and not pluggy hooks (simonw/llm's choice): every extension point of evalkit is a value looked
up by name (`model.provider=ollama`, `evalkit adapt junit`, a `checks.yaml` kind), never a hook that all plugins
answer together, so a name -> value table with one check of the value's type (inspect_ai's registry) says what a
plugin must be and refuses what is not, at the moment it is loaded, naming the package that registered it.
"""

from __future__ import annotations

import functools
import importlib
import tomllib
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path
from types import MappingProxyType
from typing import Generic, TypeVar

from evalkit.core.errors import ConfigError

__all__ = ["Entry", "Kind", "entries", "forget", "load", "load_all"]

T = TypeVar("T")

_OWN = "evalkit"
_PYPROJECT = Path(__file__).resolve().parents[2] / "pyproject.toml"


@dataclass(frozen=True)
class Kind(Generic[T]):
    """One extension point: its entry-point group, the type every entry must be, and how to read its name."""

    group: str
    """The entry-point group, `evalkit.<plural>`."""
    noun: str
    """What one entry is called in messages: 'provider', 'source', 'check kind', 'gate rule'."""
    type: type[T]
    name_of: Callable[[T], str]
    """The name the value declares for itself, which must equal the name it is registered under."""


@dataclass(frozen=True)
class Entry:
    """One registered name: where its value lives (`module:attribute`) and which package registered it."""

    name: str
    target: str
    owner: str


def entries(kind: Kind[T]) -> Mapping[str, Entry]:
    """Every registered entry of a kind by name, without importing any of them."""
    return _entries(kind.group, kind.noun)


@functools.cache
def _entries(group: str, noun: str) -> Mapping[str, Entry]:
    found: dict[str, Entry] = {}
    points = [(name, target, _OWN) for name, target in _source_tree_entries(group).items()]
    points += _installed(group)
    for name, target, owner in points:
        earlier = found.get(name)
        if earlier is not None and earlier.target != target:
            # which one would win depends on install order: refuse rather than guess
            raise ConfigError(f"{noun} '{name}' is registered twice, by {earlier.owner} ({earlier.target}) and by "
                              f"{owner} ({target}) in the {group!r} entry points; uninstall one of them")
        if earlier is None:
            found[name] = Entry(name, target, owner)
    return MappingProxyType(dict(sorted(found.items())))


def _installed(group: str) -> list[tuple[str, str, str]]:
    """The installed packages' entries of a group: (name, target, owning package)."""
    return [(p.name, p.value, p.dist.name if p.dist is not None else "an unknown package")
            for p in metadata.entry_points(group=group)]


def _source_tree_entries(group: str) -> dict[str, str]:
    """evalkit's own entries from the pyproject.toml beside the package, when the package runs from a source tree."""
    try:
        data = tomllib.loads(_PYPROJECT.read_text(encoding="utf-8"))
    except (OSError, tomllib.TOMLDecodeError):
        return {}  # an installed wheel: its metadata holds the same entries
    if data.get("project", {}).get("name") != _OWN:
        return {}
    table = data["project"].get("entry-points", {}).get(group, {})
    return {str(k): str(v) for k, v in table.items()}


def load(kind: Kind[T], name: str) -> T:
    """The value registered as `name`, imported now; an unknown name is refused with the registered ones listed."""
    known = entries(kind)
    if name not in known:
        raise ConfigError(f"{kind.noun} '{name}' is not installed (installed: {', '.join(known) or 'none'})")
    return _load(kind, known[name])


def load_all(kind: Kind[T]) -> Mapping[str, T]:
    """Every registered value of a kind, each imported (for listings and cross-checks)."""
    return MappingProxyType({name: _load(kind, entry) for name, entry in entries(kind).items()})


def _load(kind: Kind[T], entry: Entry) -> T:
    module_name, _, attribute = entry.target.partition(":")
    try:
        loaded = getattr(importlib.import_module(module_name), attribute)
    except (ImportError, AttributeError) as error:
        raise ConfigError(f"{kind.noun} '{entry.name}' (from {entry.owner}): {entry.target} cannot be loaded "
                          f"({type(error).__name__}: {error}); reinstall {entry.owner}") from None
    if not isinstance(loaded, kind.type) or kind.name_of(loaded) != entry.name:
        raise ConfigError(f"{kind.noun} '{entry.name}' (from {entry.owner}): {entry.target} is not a "
                          f"{kind.type.__name__} named '{entry.name}'")
    return loaded


def forget() -> None:
    """Read the entry points afresh (a test that installs a plugin into the running interpreter)."""
    _entries.cache_clear()
