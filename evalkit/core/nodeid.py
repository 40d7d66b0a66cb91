"""pytest node ids read as a pytest user reads them: `path::Class::test[parameters]`.

The test's name is what precedes the parameter bracket; `::`, `[`, spaces and unicode inside the brackets belong
to the parameters (python-dateutil has parametrize ids with `::` in them), never to the name.
"""

from __future__ import annotations

import functools

__all__ = ["qualified_name", "name_parts", "matches_critical"]


def qualified_name(nodeid: str) -> str:
    """`Class::test` (or `test`) of `path::Class::test[params]`: the node id without its path and parameters."""
    _, sep, rest = nodeid.partition("::")
    if not sep:  # not a test function id (a doctest file, a collector): the whole id is its name
        rest = nodeid
    bracket = rest.find("[")
    return rest if bracket < 0 else rest[:bracket]


def name_parts(nodeid: str) -> list[str]:
    """The classes and the test of a node id, outermost first: `path::A::B::test_x[p]` -> [A, B, test_x]."""
    return qualified_name(nodeid).split("::")


def matches_critical(nodeid: str, prefixes: tuple[str, ...]) -> bool:
    """Whether a policy's `critical` entries name this test.

    An entry without `::` matches by prefix the test's name or the name of a class it is in (`WindowedTests`
    names every test of that unittest class); an entry with `::` matches by prefix the qualified name
    `Class::test`. Parameters take no part in a prefix: `test_x` does not match `test_y[test_x]`. An entry with
    parameters names one test exactly, as its id shows it: the whole node id or its end after a `::`
    (`has_key_facts[refund-window]` is `checks.yaml::has_key_facts[refund-window]`, one check on one case).
    """
    if not prefixes:
        return False
    plain, qualified_prefixes, whole, ends = _kinds(prefixes)
    if ends and (nodeid in whole or nodeid.endswith(ends)):
        return True
    qualified = qualified_name(nodeid)
    if qualified_prefixes and qualified.startswith(qualified_prefixes):
        return True
    return bool(plain) and any(part.startswith(plain) for part in qualified.split("::"))


@functools.lru_cache(maxsize=16)
def _kinds(prefixes: tuple[str, ...]) -> tuple[tuple[str, ...], tuple[str, ...], frozenset[str], tuple[str, ...]]:
    """A policy's critical entries sorted once by how they match, so that one str.startswith or str.endswith call
    tries them all: name prefixes, qualified-name prefixes, and exact ids (as whole node ids, and as the ends
    `::ID` of longer ones)."""
    exact = [entry for entry in prefixes if "[" in entry]
    return (tuple(p for p in prefixes if "::" not in p and "[" not in p),
            tuple(p for p in prefixes if "::" in p and "[" not in p),
            frozenset(exact), tuple(f"::{entry}" for entry in exact))
