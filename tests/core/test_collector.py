"""evalkit.core.collector: the cyclic garbage collector paused while a run builds its data, on while live calls
(which leave cycles when retried) are in flight; each restores what it found."""

from __future__ import annotations

import gc
from collections.abc import Iterator

import pytest
from test_execute import StandIn, run

from evalkit.core import collector
from evalkit.records.call import Reply, Request


@pytest.fixture(autouse=True)
def collector_as_found() -> Iterator[None]:
    enabled = gc.isenabled()
    yield
    (gc.enable if enabled else gc.disable)()


def test_paused_and_running_restore_what_they_found_and_nest() -> None:
    gc.enable()
    with collector.paused():
        assert not gc.isenabled()
        with collector.running():
            assert gc.isenabled()
            with collector.paused():
                assert not gc.isenabled()
            assert gc.isenabled()
        assert not gc.isenabled()
    assert gc.isenabled()
    gc.disable()
    with collector.paused():
        assert not gc.isenabled()
    assert not gc.isenabled()  # it was off before: it stays off


def test_the_collector_is_restored_when_the_block_raises() -> None:
    gc.enable()
    with pytest.raises(RuntimeError), collector.paused():
        raise RuntimeError("a refusal mid-run")
    assert gc.isenabled()


class Watching(StandIn):
    """Notes whether the collector runs during each call."""

    def __init__(self) -> None:
        super().__init__()
        self.collecting: list[bool] = []

    def complete(self, request: Request) -> Reply:
        self.collecting.append(gc.isenabled())
        return super().complete(request)


def test_live_calls_run_with_the_collector_on_inside_a_paused_run() -> None:
    provider = Watching()
    with collector.paused():
        run(provider, concurrency=4)
        assert not gc.isenabled()  # paused again once the calls are done
    assert provider.collecting and all(provider.collecting)


def test_what_was_built_before_the_calls_is_set_apart_during_them_and_returned_after() -> None:
    before = gc.get_freeze_count()
    seen: list[int] = []

    class Counting(StandIn):
        def complete(self, request: Request) -> Reply:
            seen.append(gc.get_freeze_count())
            return super().complete(request)

    with collector.paused():
        run(Counting(), concurrency=2)
    assert seen and min(seen) > before  # the run's earlier objects were frozen while the calls ran
    assert gc.get_freeze_count() == before  # and given back to the collector after
