"""Strict JSON and YAML for evalkit's inputs: what the parsers would silently accept is refused in one line.

Python's json keeps the last of two equal keys, reads `NaN` and `Infinity` (which JSON does not have), and
raises ValueError on an integer over 4,300 digits or RecursionError on deep nesting; PyYAML keeps the last
duplicate key too. `parse_json` and `parse_yaml` refuse all of these with an InputError naming the file, and
refuse values nested deeper than MAX_DEPTH, so nothing downstream can recurse out of its stack.
"""

from __future__ import annotations

import functools
import json
import math
import os
import re
import sys
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any, NoReturn

import yaml

from evalkit.core.errors import InputError, brief
from evalkit.core.files import decode

__all__ = ["MAX_ALIAS_VALUES", "MAX_DEPTH", "AliasBoundedLoader", "TooManyAliases", "UniqueKeyLoader", "check_json",
           "check_json_aside", "json_object", "json_type", "lone_surrogate", "parse_json", "parse_yaml",
           "refuse_lone_surrogates", "unique_object"]

MAX_DEPTH = 100
"""How deeply objects and lists may nest in an input file (evalkit's own files nest fewer than ten levels)."""

MAX_ALIAS_VALUES = 100_000
"""How many values a YAML file's aliases (`*name`) may stand for, counted as if each alias were written out.
A policy that reuses a block of thresholds through an alias adds tens; nine nested lists of nine aliases (a
"billion laughs" file of 400 bytes) stand for 387 million, which any walk of the value (a validation message, a
fingerprint, a report) would spend minutes and gigabytes on."""


class _Refusal(ValueError):
    """Raised from inside a parser's hook; turned into an InputError naming the file."""


def unique_object(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    """json's object_pairs_hook: an object, refusing a key given twice (json alone keeps the last)."""
    data = dict(pairs)
    if len(data) != len(pairs):
        seen: set[str] = set()
        twice = next(name for name, _ in pairs if name in seen or seen.add(name))  # type: ignore[func-returns-value]
        raise _Refusal(f"key {_short(twice)} appears twice in one JSON object; each key may appear once")
    return data


def _constant(name: str) -> NoReturn:
    raise _Refusal(f"{name} is not a JSON number; write a finite number, or null for a value that is missing")


def parse_json(text: str | bytes, where: str, what: str = "file", *, constants_as_null: bool = False) -> Any:
    """Parse JSON strictly; every refusal names `where` (the file) and says what to fix.

    `constants_as_null` reads the bare `NaN`, `Infinity` and `-Infinity` a tool writes on purpose (Inspect's
    logs) as null, a value that is missing; a number too large for a float is refused all the same."""
    with _nesting_bounded() as bounded:
        data = _strict_loads(text, where, what, unique_object, _null if constants_as_null else _constant)
    if not bounded:  # the parser could not bound the nesting: walk the value (numbers were checked as parsed)
        check_values(data, where, what)
    return data


def check_json(text: str, where: str, what: str = "file") -> bool:
    """Refuse what parse_json refuses, in the same words, without keeping the value: each object is dropped as
    soon as it is checked, so a file of millions of objects is checked in the memory of its text.

    Returns False, having read nothing, where json's scanner cannot bound the nesting (another thread runs):
    only a walk of the parsed value can, so the caller must parse_json instead. For a reader that takes the
    value from a faster parser that checks less (evalkit.records.report_reader's reader of large reports)."""
    with _nesting_bounded() as bounded:
        if bounded:
            _strict_loads(text, where, what, _unique_dropped)
    return bounded


def check_json_aside(data: bytes, where: str, what: str = "file") -> Callable[[], bool]:
    """Start check_json of a file's bytes (as UTF-8 text, evalkit.core.files.decode) in a child process, so that
    the caller can read the same bytes meanwhile on another core; returns the function that waits for the check and
    gives check_json's answer (or raises its InputError, or decode's). A file of a million tests takes as long to
    check strictly as to read: on two cores the check then costs no wall time.

    Where a child cannot be forked (no os.fork, or another thread runs: forking a threaded process is unsafe)
    the check runs here and now, before this returns. A child that dies without an answer (killed for memory)
    is replaced by the check run here."""
    if not hasattr(os, "fork") or threading.active_count() != 1:
        done = check_json(decode(data, where, what), where, what)
        return lambda: done
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: answer through the pipe and leave without running any of the parent's exit code
        answer = b"!"
        try:
            os.close(read_end)
            answer = b"1" if check_json(decode(data, where, what), where, what) else b"0"
        except InputError as refusal:
            answer = b"E" + str(refusal).encode("utf-8", "replace")
        finally:
            try:
                os.write(write_end, answer)  # short (one line): the pipe's buffer holds it without a reader
            finally:
                os._exit(0)
    os.close(write_end)

    def wait() -> bool:
        with os.fdopen(read_end, "rb") as pipe:
            answer = pipe.read()
        os.waitpid(pid, 0)
        if answer[:1] == b"E":
            raise InputError(answer[1:].decode("utf-8"))
        if answer[:1] in (b"0", b"1"):
            return answer[:1] == b"1"
        return check_json(decode(data, where, what), where, what)  # the child gave no answer

    return functools.cache(wait)


def _unique_dropped(pairs: list[tuple[str, Any]]) -> None:
    """check_json's object_pairs_hook: unique_object's check, keeping nothing."""
    if len(dict(pairs)) != len(pairs):
        unique_object(pairs)  # names the key given twice


def _null(_name: str) -> None:
    return None


def _strict_loads(text: str | bytes, where: str, what: str, hook: Callable[[list[tuple[str, Any]]], Any],
                  constant: Callable[[str], Any] = _constant) -> Any:
    try:
        return json.loads(text, object_pairs_hook=hook, parse_constant=constant, parse_float=_finite)
    except _Refusal as refusal:
        raise InputError(f"{where}: {refusal}") from None
    except json.JSONDecodeError as error:
        raise InputError(f"{where}: not valid JSON (line {error.lineno}, column {error.colno}: {error.msg}); "
                         "is the file truncated?") from None
    except UnicodeDecodeError as error:
        raise InputError(f"{where}: the {what} is not UTF-8 text ({error.reason}); save it as UTF-8") from None
    except RecursionError:
        raise InputError(_too_deep(where, what)) from None
    except ValueError as error:  # an integer of more digits than Python converts
        raise InputError(_too_long(where, what, error)) from None


def _finite(text: str) -> float:
    """json's parse_float: a number too large for a float (`1e999`) would silently become infinity."""
    value = float(text)
    if math.isinf(value):
        raise _Refusal(f"{_short(text, 40, quote=False)} is too large for a number; write a finite number")
    return value


@contextmanager
def _nesting_bounded() -> Iterator[bool]:
    """Let json's C scanner refuse nesting deeper than about MAX_DEPTH, at C speed.

    The scanner counts its nesting against the interpreter's recursion limit (CPython 3.11), so a limit just above
    the current stack plus MAX_DEPTH makes a deeper file raise RecursionError while it is parsed, instead of a
    Python walk over millions of values afterwards (half of the gate's time on a million-test report). The limit
    is process-wide, so this is done only while no other thread runs, and only where a probe shows the scanner
    honours it; otherwise it yields False and the caller walks the parsed value.
    """
    if threading.active_count() != 1 or not _scanner_honours_limit():
        yield False
        return
    old = sys.getrecursionlimit()
    sys.setrecursionlimit(_stack_depth() + MAX_DEPTH + _HOOK_FRAMES)
    try:
        yield True
    finally:
        sys.setrecursionlimit(old)


_HOOK_FRAMES = 8  # frames json's hooks and this module's calls add above the scanner's own nesting


@functools.cache
def _scanner_honours_limit() -> bool:
    old = sys.getrecursionlimit()
    sys.setrecursionlimit(_stack_depth() + MAX_DEPTH + _HOOK_FRAMES)
    try:
        json.loads("[" * (MAX_DEPTH * 2) + "]" * (MAX_DEPTH * 2))
    except RecursionError:
        return True
    finally:
        sys.setrecursionlimit(old)
    return False


def _stack_depth() -> int:
    frame, depth = sys._getframe(), 0
    while frame is not None:
        frame, depth = frame.f_back, depth + 1  # type: ignore[assignment]
    return depth


class TooManyAliases(yaml.YAMLError):
    """A YAML file whose aliases stand for more than MAX_ALIAS_VALUES values: valid YAML, refused (a YAMLError, so
    a reader with its own loader that catches YAMLError refuses it too)."""


class AliasBoundedLoader(yaml.SafeLoader):
    """YAML's safe loader, refusing a file whose aliases stand for more than MAX_ALIAS_VALUES values.

    PyYAML shares the aliased object, so parsing stays cheap; the cost comes later, in whatever walks the value
    as a tree. The count is taken while the document is composed, before anything is constructed."""

    def __init__(self, stream: Any) -> None:
        super().__init__(stream)
        self._sizes: dict[int, int] = {}
        self._aliased = 0

    def compose_node(self, parent: yaml.Node | None, index: Any) -> yaml.Node | None:
        if self.check_event(yaml.AliasEvent):
            event = self.peek_event()  # type: ignore[no-untyped-call]
            node = self.anchors.get(event.anchor)
            if node is not None:
                self._aliased += self._size(node)
                if self._aliased > MAX_ALIAS_VALUES:
                    raise TooManyAliases(f"its aliases (*name) stand for more than {MAX_ALIAS_VALUES:,} values (line "
                                   f"{event.start_mark.line + 1}); write the values out, or use fewer aliases")
        return super().compose_node(parent, index)

    def _size(self, node: yaml.Node) -> int:
        """How many values `node` holds, itself included, with its aliases written out (memoised: composed
        nodes do not change, and a node that holds itself counts once)."""
        known = self._sizes.get(id(node))
        if known is not None:
            return known
        self._sizes[id(node)] = 1  # a node reached again while it is being counted (`&a [*a]`)
        if isinstance(node, yaml.SequenceNode):
            size = 1 + sum(self._size(child) for child in node.value)
        elif isinstance(node, yaml.MappingNode):
            size = 1 + sum(self._size(key) + self._size(value) for key, value in node.value)
        else:
            size = 1
        self._sizes[id(node)] = size = min(size, MAX_ALIAS_VALUES + 1)
        return size


class UniqueKeyLoader(AliasBoundedLoader):
    """YAML's safe loader, refusing a mapping that gives a key twice (PyYAML keeps the last silently) and a file
    whose aliases stand for too many values (AliasBoundedLoader)."""


def _construct_mapping(loader: UniqueKeyLoader, node: yaml.MappingNode) -> dict[Any, Any]:
    loader.flatten_mapping(node)
    data: dict[Any, Any] = {}
    for key_node, value_node in node.value:
        key = loader.construct_object(key_node, deep=True)
        try:
            if key in data:
                raise _Refusal(f"key {_short(key)} appears twice in one mapping (line {key_node.start_mark.line + 1});"
                               " each key may appear once")
        except TypeError:  # an unhashable key (a list as a key): let the safe loader word it
            raise yaml.constructor.ConstructorError(None, None, "found an unhashable key",
                                                    key_node.start_mark) from None
        data[key] = loader.construct_object(value_node, deep=True)
    return data


def _construct_timestamp(loader: UniqueKeyLoader, node: yaml.ScalarNode) -> Any:
    """YAML reads `2026-13-45` as a date and Python refuses the month with a ValueError, which would otherwise
    read as a number too long: name the value and its line instead."""
    try:
        return loader.construct_yaml_timestamp(node)
    except ValueError as error:
        raise _Refusal(f"{_short(node.value, 40)} (line {node.start_mark.line + 1}) is not a real date ({error}); "
                       "write a day that exists, as YYYY-MM-DD") from None


UniqueKeyLoader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _construct_mapping)
UniqueKeyLoader.add_constructor("tag:yaml.org,2002:timestamp", _construct_timestamp)


def parse_yaml(text: str, where: str, what: str = "file") -> Any:
    """Parse YAML strictly (the safe loader, unique keys, finite numbers, bounded nesting)."""
    try:
        data = yaml.load(text, Loader=UniqueKeyLoader)  # noqa: S506 - a subclass of SafeLoader
    except (_Refusal, TooManyAliases) as refusal:
        raise InputError(f"{where}: {refusal}") from None
    except yaml.YAMLError as error:
        first = _short(" ".join(str(error).split()), quote=False)
        if isinstance(error, yaml.MarkedYAMLError) and error.problem_mark is not None:  # PyYAML's words, our lines
            first = f"{_short(error.problem or error.context, quote=False)} ({_lines(error)})"
        raise InputError(f"{where}: not valid YAML: {first}") from None
    except RecursionError:
        raise InputError(_too_deep(where, what)) from None
    except ValueError as error:  # an integer of more digits than Python converts
        raise InputError(_too_long(where, what, error)) from None
    check_values(data, where, what)
    return data


def _lines(error: yaml.MarkedYAMLError) -> str:
    """Where a YAML error is, 1-based: PyYAML's marks count from 0, and the line it names is where it noticed, often
    the line after the mistake (an unclosed bracket or quote is found where the next key begins), so the line of
    what it was reading then is named too."""
    assert error.problem_mark is not None
    where = f"line {error.problem_mark.line + 1}"
    context = error.context_mark
    if error.problem and error.context and context is not None and context.line != error.problem_mark.line:
        where += f"; {error.context} that starts on line {context.line + 1}"
    return where


def check_values(data: Any, where: str, what: str = "file") -> None:
    """Refuse nesting deeper than MAX_DEPTH and non-finite numbers (YAML's `.nan`, `.inf`), without recursion."""
    level: list[Any] = [data]
    depth = 0
    seen: set[int] = set()  # YAML aliases share containers: a "billion laughs" file is visited once per object
    while level:  # breadth first, a level at a time: no recursion and no per-value bookkeeping
        if depth > MAX_DEPTH:
            raise InputError(_too_deep(where, what))
        below: list[Any] = []
        for value in level:
            kind = type(value)
            if kind is dict:
                below.extend(value.values())
            elif kind is list:
                below.extend(value)
            elif kind is float and not math.isfinite(value):
                raise InputError(f"{where}: {value} is not a finite number; "
                                 "write a finite number, or null for a value that is missing")
        level = [value for value in below if type(value) in _WALKED
                 and (type(value) is float or not (id(value) in seen or seen.add(id(value))))]  # type: ignore[func-returns-value]
        depth += 1


_WALKED = frozenset({dict, list, float})


def _too_long(where: str, what: str, error: ValueError) -> str:
    return (f"{where}: the {what} holds a number too long to read ({_short(str(error), 60, quote=False)}); "
            "no value evalkit reads is that long")


def _too_deep(where: str, what: str) -> str:
    return (f"{where}: the {what} nests objects or lists more than {MAX_DEPTH} levels deep; "
            "evalkit's files never do: check that it is the right file")


def _short(value: Any, limit: int = 80, *, quote: bool = True) -> str:
    if quote:
        return brief(value, limit)
    text = str(value)
    return text if len(text) <= limit else text[:limit - 3] + "..."


def json_type(value: Any) -> str:
    """What a parsed JSON value is, in words for an error message (`a list`, `text`, `null`)."""
    names = {dict: "an object", list: "a list", str: "text", bool: "a boolean", int: "a number", float: "a number"}
    return "null" if value is None else names.get(type(value), type(value).__name__)


def json_object(value: Any, where: str, hint: str = "") -> dict[str, Any]:
    """`value` when it is a JSON object; otherwise an InputError naming `where` and what it is instead, followed
    by `hint` (what the file probably is not)."""
    if not isinstance(value, dict):
        raise InputError(f"{where}: expected a JSON object, got {json_type(value)}{hint}")
    return value


_SURROGATE = re.compile("[\ud800-\udfff]")


def lone_surrogate(text: str) -> str | None:
    """The first lone surrogate in `text` as its escape (`\\ud800`), or None: half of a UTF-16 pair, which
    JSON's `"\\ud800"` escape reads into a string and no UTF-8 file, fingerprint or test id can hold."""
    if text.isascii():  # the common case, known without a scan
        return None
    found = _SURROGATE.search(text)
    return found.group().encode("unicode_escape").decode() if found else None


def refuse_lone_surrogates(data: Any, where: str) -> None:
    """Refuse a parsed file holding half of a UTF-16 pair (JSON's `"\\ud800"` escape): no text holds one, and
    a test id or a fingerprint made of it cannot be written as UTF-8."""
    try:
        json.dumps(data, ensure_ascii=False).encode("utf-8")
    except UnicodeEncodeError as error:
        bad = error.object[error.start:error.end]
        raise InputError(f"{where}: the file holds a lone surrogate ({bad.encode('unicode_escape').decode()}), half "
                         "of a UTF-16 pair, which is not text; write the string as UTF-8") from None
