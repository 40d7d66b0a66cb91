"""pytest node ids read as a pytest user reads them: `path::Class::test[parameters]`.

The test's name is what precedes the parameter bracket; `::`, `[`, spaces and unicode inside the brackets belong
to the parameters (python-dateutil has parametrize ids with `::` in them), never to the name.
"""

from __future__ import annotations

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
    `Class::test`. Parameters never take part: `test_x` does not match `test_y[test_x]`.
    """
    if not prefixes:
        return False
    qualified = qualified_name(nodeid)
    parts = qualified.split("::")
    return any(qualified.startswith(p) if "::" in p else any(part.startswith(p) for part in parts)
               for p in prefixes)
