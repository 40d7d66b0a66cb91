"""Rubrics: observable criteria rated 0, 1 or 2, each level anchored by a sentence a rater can check.

A rubric is a reviewed file in conf/rubric/. Everything here is pure except `load_rubric`, which
reads that file. Each criterion becomes a metric (`rubric.<criterion>`) that a policy can floor.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from evalkit.core.errors import ConfigError, InputError
from evalkit.core.files import read_text
from evalkit.core.parsing import AliasBoundedLoader, TooManyAliases
from evalkit.project.options import find_option

__all__ = ["LEVELS", "METRIC_PREFIX", "MIN_ANCHOR_CHARS", "VAGUE_WORDS", "Criterion", "Rubric",
           "load_rubric", "metric_name", "rubric_from_mapping"]


LEVELS = (0, 1, 2)
"""The levels every criterion has: 0 is the worst observable outcome, 2 the best."""

METRIC_PREFIX = "rubric."

MIN_ANCHOR_CHARS = 25
"""An anchor shorter than this cannot say what a rater sees ("Partly on topic." says nothing checkable)."""

# Words that grade without describing: two raters reading them will not agree on what they saw.
VAGUE_WORDS = frozenset({
    "good", "nice", "great", "sounds", "better", "appropriate", "quality",
    "bad", "poor", "excellent", "fine", "adequate", "decent", "reasonable", "acceptable", "satisfactory",
})

_NAME = r"^[a-z][a-z0-9_]*$"
_WORD = re.compile(r"[a-z]+")


def metric_name(criterion: str) -> str:
    """The metric a criterion's rating is reported under, e.g. `rubric.relevance`."""
    return METRIC_PREFIX + criterion


class Criterion(BaseModel):
    """One thing a rater judges, with an observable anchor sentence for each of the levels 0, 1 and 2."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str = Field(pattern=_NAME)
    """Lower-case identifier (letters, digits, `_`); the metric is `rubric.<name>`."""

    levels: dict[int, str]
    """Level (0, 1, 2) -> the anchor: what a rater can see in an output rated at that level."""

    @model_validator(mode="after")
    def _anchored(self) -> Criterion:
        problems = []
        missing = [level for level in LEVELS if level not in self.levels]
        if missing:
            problems.append(f"criterion {self.name}: missing level {_and(missing)} "
                            "(each criterion needs levels 0, 1 and 2)")
        extra = sorted(level for level in self.levels if level not in LEVELS)
        if extra:
            problems.append(f"criterion {self.name}: level {_and(extra)} does not exist (levels are 0, 1 and 2)")
        seen: dict[str, int] = {}
        for level, anchor in sorted(self.levels.items()):
            text = anchor.strip()
            vague = sorted(VAGUE_WORDS.intersection(_WORD.findall(text.lower())))
            if vague:
                problems.append(f"criterion {self.name} level {level}: vague word {_and(vague, quote=True)} in the "
                                "anchor; describe what a rater can see in the output")
            elif len(text) < MIN_ANCHOR_CHARS:
                problems.append(f"criterion {self.name} level {level}: anchor {text!r} is {len(text)} characters; "
                                f"an observable anchor needs at least {MIN_ANCHOR_CHARS}")
            same = " ".join(text.lower().split())
            if same in seen:
                problems.append(f"criterion {self.name}: levels {seen[same]} and {level} have the same anchor; "
                                "each level needs its own")
            seen.setdefault(same, level)
        if problems:
            raise ValueError("; ".join(problems))
        return self


class Rubric(BaseModel):
    """A named, versioned set of criteria; turns a rater's ratings into metrics and explanations."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str = Field(min_length=1)
    """The rubric's name, as reports and reviews refer to it."""

    version: int = Field(ge=1)
    """Raised whenever an anchor changes: ratings under different versions are not comparable."""

    criteria: tuple[Criterion, ...] = Field(min_length=1)
    """The criteria, in the order explanations list them."""

    @model_validator(mode="after")
    def _distinct(self) -> Rubric:
        names = [c.name for c in self.criteria]
        twice = sorted({n for n in names if names.count(n) > 1})
        if twice:
            raise ValueError(f"rubric {self.name}: criterion {_and(twice)} is defined more than once")
        return self

    def metric_names(self) -> tuple[str, ...]:
        """The metrics this rubric reports, one per criterion, in rubric order."""
        return tuple(metric_name(c.name) for c in self.criteria)

    def score(self, ratings: Mapping[str, int]) -> dict[str, int]:
        """One case's ratings (criterion -> level) as metrics (`rubric.<criterion>` -> level)."""
        self._check(ratings)
        return {metric_name(c.name): ratings[c.name] for c in self.criteria}

    def explain(self, ratings: Mapping[str, int]) -> list[str]:
        """Each rating with the anchor it claims, `relevance=2: The answer states ...`, in rubric order."""
        self._check(ratings)
        return [f"{c.name}={ratings[c.name]}: {c.levels[ratings[c.name]]}" for c in self.criteria]

    def _check(self, ratings: Mapping[str, int]) -> None:
        known = [c.name for c in self.criteria]
        unknown = sorted(set(ratings) - set(known))
        if unknown:
            raise InputError(f"ratings name criterion {_and(unknown, quote=True)}, which rubric {self.name} does "
                             f"not have (criteria: {', '.join(known)})")
        missing = [name for name in known if name not in ratings]
        if missing:
            raise InputError(f"ratings miss criterion {_and(missing, quote=True)} of rubric {self.name}; "
                             f"rate every criterion ({', '.join(known)})")
        for name in known:
            level = ratings[name]
            if isinstance(level, bool) or not isinstance(level, int) or level not in LEVELS:
                raise InputError(f"rating {level!r} for criterion '{name}' is not a level (levels: 0, 1, 2)")


def rubric_from_mapping(data: Any, where: str) -> Rubric:
    """Validate already-parsed rubric data (e.g. a composed `rubric` component); `where` names its source."""
    if not isinstance(data, dict):
        raise ConfigError(f"{where}: a rubric must be a mapping of keys to values, got {type(data).__name__}")
    try:
        return Rubric.model_validate(data)
    except ValidationError as error:
        raise ConfigError(f"{where}: " + "; ".join(_problems(error, data))) from None


def load_rubric(spec: str | Path) -> Rubric:
    """Load a rubric by name (an option of conf/rubric/) or by path to a YAML or JSON file."""
    path = find_option("rubric", spec)
    text = read_text(path, "rubric")
    try:
        data = json.loads(text, object_pairs_hook=_keys) if path.suffix == ".json" \
            else yaml.load(text, Loader=_KeysLoader)
    except json.JSONDecodeError as error:
        raise InputError(f"{path}: not valid JSON (line {error.lineno}, column {error.colno}: {error.msg})") from None
    except TooManyAliases as error:
        raise InputError(f"{path}: {error}") from None
    except RecursionError:  # both parsers recurse per level of nesting
        raise InputError(f"{path}: the rubric nests mappings or lists too deeply to read; a rubric nests four "
                         "levels: check that it is the right file") from None
    except yaml.YAMLError as error:
        first = str(error).replace("\n", " ")
        if isinstance(error, yaml.MarkedYAMLError) and error.problem_mark is not None:
            first = f"{error.problem or error.context} (line {error.problem_mark.line + 1})"
        raise InputError(f"{path}: not valid YAML: {first}") from None
    twice = _given_twice(data)
    if twice:
        raise ConfigError(f"{path}: " + "; ".join(twice))
    return rubric_from_mapping(data, str(path))


def _problems(error: ValidationError, data: Mapping[str, Any]) -> list[str]:
    """Each validation problem as a phrase naming the criterion and level (not a list index)."""
    items = error.errors()
    inside = any(len(i["loc"]) > 1 and i["loc"][0] == "criteria" for i in items)
    problems = []
    for item in items:
        loc = item["loc"]
        if item["type"] == "too_short" and loc == ("criteria",) and inside:
            continue  # pydantic also counts the refused criteria as missing; the criterion's own problem says why
        if item["type"] == "value_error":  # our own rules: the message already names criterion and level
            problems.append(str(item["ctx"]["error"]))
            continue
        where, field = _where(loc, data)
        if item["type"] == "extra_forbidden":
            model: type[BaseModel] = Criterion if len(loc) == 3 and loc[0] == "criteria" else Rubric
            problems.append(f"{where}unknown key '{loc[-1]}' (allowed: {', '.join(sorted(model.model_fields))})")
        elif item["type"] == "missing":
            problems.append(f"{where}missing key '{loc[-1]}'")
        else:
            got = repr(item.get("input"))
            got = got if len(got) <= 80 else got[:77] + "..."
            problems.append(f"{where}{field}{item['msg']} (got {got})")
    return problems


def _where(loc: tuple[int | str, ...], data: Mapping[str, Any]) -> tuple[str, str]:
    """(`criterion relevance level 1: `, `'key': `) for a location: criteria by name, levels by number."""
    if len(loc) < 3 or loc[0] != "criteria" or not isinstance(loc[1], int):
        return "", f"'{'.'.join(str(part) for part in loc)}': "
    criteria = data.get("criteria")
    raw = criteria[loc[1]] if isinstance(criteria, list) and loc[1] < len(criteria) else None
    name = raw.get("name") if isinstance(raw, dict) else None
    where = f"criterion {name}" if isinstance(name, str) else f"criteria[{loc[1]}]"
    if len(loc) >= 4 and loc[2] == "levels":
        return f"{where} level {loc[3]}: ", ""
    return f"{where}: ", f"'{'.'.join(str(part) for part in loc[2:])}': "


def _and(items: list[Any], quote: bool = False) -> str:
    """`1`, `1 and 2`, `'a', 'b' and 'c'`."""
    words = [f"'{i}'" if quote else str(i) for i in items]
    return words[0] if len(words) == 1 else ", ".join(words[:-1]) + " and " + words[-1]


class _Keys(dict[Any, Any]):
    """A parsed mapping that remembers the keys its file gave more than once (parsers keep only the last)."""

    twice: tuple[Any, ...] = ()


def _keys(pairs: list[tuple[Any, Any]]) -> _Keys:
    keys = [k for k, _ in pairs]
    mapping = _Keys(pairs)
    mapping.twice = tuple(sorted({k for k in keys if keys.count(k) > 1}, key=str))
    return mapping


class _KeysLoader(AliasBoundedLoader):
    """YAML's safe loader (aliases bounded), building mappings that remember duplicate keys."""


def _construct_keys(loader: _KeysLoader, node: yaml.MappingNode) -> _Keys:
    loader.flatten_mapping(node)
    return _keys([(loader.construct_object(k), loader.construct_object(v)) for k, v in node.value])


_KeysLoader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _construct_keys)


def _given_twice(data: Any) -> list[str]:
    """Keys and levels a rubric file gives twice, named by criterion: the parser would silently keep the last."""
    if not isinstance(data, _Keys):
        return []
    problems = [f"key {_and(list(data.twice), quote=True)} is given twice"] if data.twice else []
    criteria = data.get("criteria")
    for index, raw in enumerate(criteria if isinstance(criteria, list) else []):
        if not isinstance(raw, _Keys):
            continue
        label = f"criterion {raw['name']}" if isinstance(raw.get("name"), str) else f"criteria[{index}]"
        if raw.twice:
            problems.append(f"{label}: key {_and(list(raw.twice), quote=True)} is given twice")
        levels = raw.get("levels")
        if isinstance(levels, _Keys) and levels.twice:
            problems.append(f"{label}: level {_and(list(levels.twice))} is given twice; "
                            "each level needs exactly one anchor")
    return problems
