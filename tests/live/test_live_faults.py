"""Live fault injection: every provider against a server that misbehaves on the wire (tests/fakes/hostile.py).

Issue 35's findings, each held here. With `model.timeout_s` as the call's deadline and `run.retries=0`:

- a reply dripped a byte at a time (its head, or its body), or `100 Continue` without end, held the OpenAI, Ollama
  and Anthropic providers past 60 s: every call now ends at its deadline, as a retryable failure naming
  `model.timeout_s`;
- a 1.5 GiB body (chunked, or with its length) took 4 to 9 GB of memory, and an absurd Content-Length (10**30) was
  an OverflowError in Ollama's exchange: a reply over `model.max_reply_bytes` is refused, before its body is read
  where it declares its length, as a retryable failure naming the setting;
- a redirect to another host was followed by the OpenAI, Azure, Anthropic and Gemini providers, and the other
  host's reply recorded: no provider follows a redirect, and the refusal names where it pointed;
- a connection reset mid-body, an HTML page with status 200, and JSON of the wrong shape are each one classified
  failure, never a crash (a 200 of the wrong shape was an AttributeError or TypeError out of four providers).

Each call runs in a child process (tests/helpers/one_call.py) under an address-space limit and a wall-clock limit
(tests/helpers/bounded.py), so a hang or a blowup fails its test instead of the machine; the end-to-end tests run
`python -m evalkit mode=live` the same way and find the outage (exit 5) and its one line.
"""

from __future__ import annotations

import json
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pytest
from fakes import FakeServer
from fakes.hostile import Hostile, HostileServer
from helpers.bounded import run_bounded
from helpers.live import Evalkit
from helpers.one_call import PROVIDERS, child_env

from evalkit.core.config import DEFAULT_MAX_REPLY_BYTES

pytestmark = pytest.mark.slow

DEADLINE_S = 1.5
"""`model.timeout_s` in these calls: the deadline of the whole call."""
DRIP_S = 0.25
"""The hostile server's pace: a byte (or a `100 Continue`) every DRIP_S, far inside any per-read timeout."""
SLACK_S = 2.0
"""What a call may take past its deadline on a loaded machine (the last read's wait is already bounded by it)."""
MEMORY_MB = 512
"""The child's address space: a provider with its client library and one call in flight fits in a few hundred MB;
a 1.5 GiB body read whole does not."""
CONTENT = '{"label": "bug", "summary": "the right server answered"}'


@dataclass(frozen=True)
class Expected:
    retryable: bool
    status: int | None
    says: str


EXPECTED = {
    Hostile.DRIP_HEAD: Expected(True, None, f"no reply within {DEADLINE_S:g} s (model.timeout_s"),
    Hostile.DRIP_BODY: Expected(True, None, f"no reply within {DEADLINE_S:g} s (model.timeout_s"),
    Hostile.INTERIM: Expected(True, None, f"no reply within {DEADLINE_S:g} s (model.timeout_s"),
    Hostile.GIANT_CHUNKED: Expected(True, None, "the reply is over 32 MiB (model.max_reply_bytes"),
    Hostile.GIANT_LENGTH: Expected(True, None, "the reply is over 32 MiB (model.max_reply_bytes"),
    Hostile.ABSURD_LENGTH: Expected(True, None, "it declares a length of 31 digits"),
    Hostile.REDIRECT: Expected(False, 307, "the server redirects to http://localhost:"),
    Hostile.RESET_MID_BODY: Expected(True, None, "failed"),
    Hostile.HTML: Expected(True, 200, "answered 200"),
    Hostile.WRONG_SHAPE: Expected(True, 200, "answered 200 with a body that is not"),
}


def test_every_hostile_behaviour_and_provider_is_held() -> None:
    from evalkit.core.provider_specs import provider_specs

    assert set(EXPECTED) == set(Hostile)
    assert set(PROVIDERS) == set(provider_specs()) - {"llamacpp"}  # in-process: no wire to misbehave on


@pytest.fixture
def elsewhere(request: pytest.FixtureRequest) -> Iterator[FakeServer]:
    """The server a redirect points at: a well-behaved one of the provider's protocol, which must see nothing."""
    with FakeServer(request.node.callspec.params["provider"], lambda body: CONTENT) as fake:
        yield fake


def call_once(provider: str, url: str, *, timeout_s: float = DEADLINE_S, **settings: Any) -> dict[str, Any]:
    """One call through `provider` to `url`, in a bounded child; its one JSON line."""
    spec = {"provider": provider, "url": url, "timeout_s": timeout_s, "settings": settings}
    done = run_bounded([sys.executable, "-m", "tests.helpers.one_call", json.dumps(spec)], env=child_env(),
                       memory_mb=MEMORY_MB, timeout_s=90)
    lines = done.stdout.strip().splitlines()
    assert done.returncode == 0 and lines, f"the child ended with {done.returncode}: {done.stderr[-2000:]}"
    answer: dict[str, Any] = json.loads(lines[-1])
    return answer


@pytest.mark.parametrize("behaviour", list(Hostile), ids=str)
@pytest.mark.parametrize("provider", sorted(PROVIDERS))
def test_a_hostile_server_ends_the_call_in_time_as_one_classified_failure(
        provider: str, behaviour: Hostile, elsewhere: FakeServer) -> None:
    with HostileServer(behaviour, interval_s=DRIP_S, redirect_to=f"http://localhost:{elsewhere.port}",
                       give_up_s=60) as server:
        answer = call_once(provider, server.url)
        sent = server.sent_bytes

    expected = EXPECTED[behaviour]
    assert answer["outcome"] == "failure", answer
    assert (answer["retryable"], answer["status"]) == (expected.retryable, expected.status), answer
    assert expected.says in answer["message"], answer
    assert answer["message"].startswith(f"{PROVIDERS[provider]['name']}: ")
    assert answer["elapsed_s"] < DEADLINE_S + SLACK_S, f"the call took {answer['elapsed_s']} s: {answer}"
    assert elsewhere.requests == [], "a redirect was followed to another server"
    if behaviour in (Hostile.GIANT_CHUNKED, Hostile.GIANT_LENGTH, Hostile.ABSURD_LENGTH):
        # what the client read is bounded by the cap, plus what the sockets' buffers held when it stopped
        assert sent < DEFAULT_MAX_REPLY_BYTES + 16 * 2**20, f"the server got {sent} bytes out before the refusal"


@pytest.mark.parametrize("provider", sorted(PROVIDERS))
def test_a_smaller_cap_refuses_what_the_default_lets_through(provider: str) -> None:
    """The cap is the setting's, not a constant: 1 KiB refuses a 1.5 GiB body as soon as 1 KiB has come."""
    with HostileServer(Hostile.GIANT_CHUNKED) as server:
        answer = call_once(provider, server.url, max_reply_bytes=1024)
    assert answer["outcome"] == "failure" and answer["retryable"] is True, answer
    assert "the reply is over 1 KiB (model.max_reply_bytes = 1024)" in answer["message"], answer


@pytest.mark.parametrize("provider", sorted(PROVIDERS))
def test_the_deadline_is_the_whole_call_s_not_each_read_s(provider: str) -> None:
    """Dripped slower than any read waits for nothing: each byte comes well inside the deadline, and the call still
    ends at the deadline (a per-read timeout, as the clients had, never fires)."""
    with HostileServer(Hostile.DRIP_BODY, interval_s=0.1) as server:
        started = time.monotonic()
        answer = call_once(provider, server.url, timeout_s=1.0)
        wall = time.monotonic() - started
    assert answer["outcome"] == "failure" and "no reply within 1 s (model.timeout_s" in answer["message"], answer
    assert 0.9 <= answer["elapsed_s"] < 1.0 + SLACK_S, answer
    assert wall < 60


# -- the same, end to end: a live run ends as an outage (exit 5) with one line -------------------------------------


RUNS = {
    Hostile.DRIP_BODY: "model.timeout_s",
    Hostile.INTERIM: "model.timeout_s",
    Hostile.GIANT_CHUNKED: "model.max_reply_bytes",
    Hostile.ABSURD_LENGTH: "model.max_reply_bytes",
    Hostile.REDIRECT: "set model.base_url to where it redirects",
}


@pytest.mark.parametrize("model", ["gemma4", "gpt-local"], ids=["ollama", "openai"])
@pytest.mark.parametrize("behaviour", list(RUNS), ids=str)
def test_a_live_run_against_a_hostile_server_is_an_outage_with_one_line(
        tmp_path: Any, behaviour: Hostile, model: str) -> None:
    protocol = "ollama" if model == "gemma4" else "openai"
    with FakeServer(protocol, lambda body: CONTENT) as other, \
            HostileServer(behaviour, interval_s=DRIP_S, redirect_to=f"http://localhost:{other.port}") as server:
        evalkit = Evalkit(tmp_path)
        evalkit.judge_at(server.url)
        command, env, _ = evalkit.command("live", f"++model.timeout_s={DEADLINE_S}", "run.retries=0",
                                          "run.concurrency=2", url=server.url + ("/v1" if protocol == "openai" else ""),
                                          model=model)
        started = time.monotonic()
        done = run_bounded(command, env=env, timeout_s=240)
        took = time.monotonic() - started
        assert other.requests == []
    assert done.returncode == 5, f"exit {done.returncode}\n{done.stdout[-2000:]}\n{done.stderr[-3000:]}"
    outage = [line for line in done.stderr.splitlines() if line.startswith("outage: ")]
    assert len(outage) == 1, done.stderr[-3000:]
    assert RUNS[behaviour] in outage[0] and "no reply after 1 attempt(s)" in outage[0], outage[0]
    assert "OverflowError" not in done.stderr and "MemoryError" not in done.stderr and "Traceback" not in done.stderr
    assert not list(evalkit.recordings.rglob("*.json")), "an outage writes no recording"
    assert took < 200
