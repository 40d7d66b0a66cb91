"""A reply check on a conversation's turns (evalkit.judging.turns): the chosen turn only, every turn naming the first
that fails, the last; a turn the conversation never reached, or no conversation, fails saying so."""

from __future__ import annotations

from typing import Any

from evalkit.core.dataset import Case
from evalkit.judging.check_spec import parse_checks
from evalkit.judging.checks import judge
from evalkit.judging.turns import judge_turns


def _trajectory(*turns: str) -> dict[str, Any]:
    steps: list[dict[str, Any]] = []
    for n, text in enumerate(turns, 1):
        steps += [{"kind": "user_turn", "turn": n, "text": f"user {n}"}, {"kind": "assistant_turn", "turn": n,
                                                                           "text": text}]
    return {"steps": steps}


def _check(entry: str) -> Any:
    return parse_checks(f"checks:\n  - {entry}\n", "checks.yaml").checks[0]


def test_a_check_on_turn_2_reads_turn_2_only() -> None:
    spec = _check("{name: keeps, contains: '1007', turn: 2}")
    case = Case("c", {})
    run = lambda trajectory: judge_turns(spec.turn, trajectory, lambda text: judge(spec, text, case))  # noqa: E731
    assert run(_trajectory("How can I help?", "Order 1007 is shipped.", "Bye")).passed
    dropped = run(_trajectory("Order 1007, noted.", "Which order do you mean?", "Order 1007 is shipped."))
    assert not dropped.passed and dropped.message.startswith("turn 2 of 3: ")
    short = run(_trajectory("Order 1007 is shipped."))
    assert not short.passed and "turn 2: the conversation ended after 1 assistant turn(s)" in short.message


def test_a_check_on_every_turn_names_the_first_failing_turn() -> None:
    spec = _check("{name: short, length: {max: 10}, turn: every}")
    case = Case("c", {})
    run = lambda trajectory: judge_turns(spec.turn, trajectory, lambda text: judge(spec, text, case))  # noqa: E731
    assert run(_trajectory("ok", "fine", "bye")).passed
    failed = run(_trajectory("ok", "a reply far too long", "another reply far too long"))
    assert not failed.passed and failed.message.startswith("turn 2 of 3: ")
    last = _check("{name: last, contains: bye, turn: last}")
    assert judge_turns(last.turn, _trajectory("bye", "no"), lambda text: judge(last, text, case)).passed is False
    assert not judge_turns("every", None, lambda text: judge(spec, text, case)).passed  # no conversation: fails
