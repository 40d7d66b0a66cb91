"""suites/sql_agent end to end: a team's own agent (the openai SDK, two tools over SQLite) gated through evalkit's
endpoint. Live against the scripted tool-calling fake model, then a replay of that recording decides the same, and an
edited program prompt is refused (exit 3) naming the field.

The live leg runs in this process through evalkit's own `openai` provider against the fake; the replays are real CLI
runs.
"""

from __future__ import annotations

import json
import stat
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from subprocess import CompletedProcess

import pytest
from fakes.server import FakeOpenAI
from fakes.tool_model import shop_model
from helpers.compose import composed

from evalkit.core.config import validate_config
from evalkit.run.runner import run_suite

pytestmark = [pytest.mark.slow, pytest.mark.usefixtures("hydra_conf")]
AGENT = Path(__file__).resolve().parents[2] / "suites" / "sql_agent" / "agent.py"
CHOICES = {"agent_code": "baseline", "model": "shop-agent", "dataset": "sql_agent"}


def _outcomes(report: dict[str, object]) -> dict[str, str]:
    tests = report["tests"]
    assert isinstance(tests, list)
    return {test["nodeid"]: test["outcome"] for test in tests}


@pytest.fixture
def reachable_venv() -> Iterator[Path]:
    """This venv, which the sandbox binds read-only as the program's environment. bubblewrap's user must be able to
    pass through every folder above it; a checkout under a private temporary folder (mktemp -d: 0700, as a fresh
    clone's) is not, so the folders above it get the search bit (only that) for the test, and lose it after."""
    changed = []
    for folder in Path(sys.prefix).resolve().parents:
        mode = folder.stat().st_mode
        if folder.owner() == Path.home().owner() and not mode & stat.S_IXOTH:
            folder.chmod(mode | stat.S_IXOTH)
            changed.append((folder, mode))
    yield Path(sys.prefix)
    for folder, mode in changed:
        folder.chmod(mode)


def test_live_then_replay_decides_the_same_and_an_edited_prompt_is_refused(
        tmp_path: Path, run_evalkit: Callable[..., CompletedProcess[str]], reachable_venv: Path) -> None:
    recordings, env = tmp_path / "recordings", f"suite.program.python_env={reachable_venv}"
    with FakeOpenAI(shop_model) as model:
        config = validate_config(composed(
            "suite=sql_agent", "mode=live", f"model.base_url={model.base_url}",
            f"run.recordings={recordings}", f"run.out={tmp_path / 'live'}", env), CHOICES)
        live = run_suite(config)
        asked = [r.body for r in model.chat_requests]
    assert len(asked) == 9  # three cases, three model calls each: list_tables, run_sql, the answer
    assert [m["role"] for m in asked[2]["messages"]] == ["system", "user", "assistant", "tool", "assistant", "tool"]
    assert [t["function"]["name"] for t in asked[0]["tools"]] == ["list_tables", "run_sql"]
    live_report = json.loads((tmp_path / "live" / "report.json").read_text(encoding="utf-8"))
    assert set(_outcomes(live_report).values()) == {"passed"} and len(_outcomes(live_report)) == 6
    assert live.recording_path is not None
    recorded = json.loads(live.recording_path.read_text(encoding="utf-8"))
    assert sorted(recorded["calls"])[:3] == ["task/alice-orders", "task/alice-orders@1", "task/alice-orders@2"]

    replay = run_evalkit("suite=sql_agent", f"run.recordings={recordings}", env,
                         f"baseline={tmp_path / 'live' / 'report.json'}", f"run.out={tmp_path / 'replay'}")
    assert replay.returncode == 0, replay.stderr[-2000:]
    assert replay.stdout.startswith("decision: GO")
    replay_report = json.loads((tmp_path / "replay" / "report.json").read_text(encoding="utf-8"))
    assert _outcomes(replay_report) == _outcomes(live_report)
    assert replay_report["provenance"]["mode"] == "replay"

    edited = tmp_path / "agent.py"
    edited.write_text(AGENT.read_text(encoding="utf-8").replace("answer with the value alone",
                                                                 "answer in one sentence"), encoding="utf-8")
    refused = run_evalkit("suite=sql_agent", f"run.recordings={recordings}", env, "baseline=none",
                          f"agent_code.program={edited}", f"run.out={tmp_path / 'edited'}")
    assert refused.returncode == 3, refused.stdout[-2000:] + refused.stderr[-2000:]
    assert "task/alice-orders was recorded for another request: messages[0].content" in refused.stderr
    assert not (tmp_path / "edited" / "report.json").exists()  # nothing was scored


def test_the_responses_api_agent_records_live_replays_the_same_and_an_unrecorded_call_is_refused(
        tmp_path: Path, run_evalkit: Callable[..., CompletedProcess[str]], reachable_venv: Path) -> None:
    """The same agent written with `client.responses.create` (suites/sql_agent/agent_responses.py): the endpoint
    reads its Responses calls into the same calls, which evalkit's `openai` provider sends to the fake as chat
    completions."""
    program = AGENT.with_name("agent_responses.py")
    recordings, env = tmp_path / "recordings", f"suite.program.python_env={reachable_venv}"
    with FakeOpenAI(shop_model) as model:
        config = validate_config(composed(
            "suite=sql_agent", "mode=live", f"model.base_url={model.base_url}", f"agent_code.program={program}",
            f"run.recordings={recordings}", f"run.out={tmp_path / 'live'}", env), CHOICES)
        live = run_suite(config)
        asked = [r.body for r in model.chat_requests]
    assert len(asked) == 9
    assert [m["role"] for m in asked[2]["messages"]] == ["system", "user", "assistant", "tool", "assistant", "tool"]
    assert asked[0]["messages"][0]["content"].startswith("You answer questions about a shop's database.")
    live_report = json.loads((tmp_path / "live" / "report.json").read_text(encoding="utf-8"))
    assert set(_outcomes(live_report).values()) == {"passed"} and len(_outcomes(live_report)) == 6
    assert live.recording_path is not None

    replay = run_evalkit("suite=sql_agent", f"run.recordings={recordings}", env, f"agent_code.program={program}",
                         f"baseline={tmp_path / 'live' / 'report.json'}", f"run.out={tmp_path / 'replay'}")
    assert replay.returncode == 0, replay.stderr[-2000:]
    assert replay.stdout.startswith("decision: GO")
    assert _outcomes(json.loads((tmp_path / "replay" / "report.json").read_text(encoding="utf-8"))) == _outcomes(
        live_report)

    edited = tmp_path / "agent_responses.py"
    edited.write_text(program.read_text(encoding="utf-8").replace("temperature=0,", "temperature=0.5,"),
                      encoding="utf-8")
    refused = run_evalkit("suite=sql_agent", f"run.recordings={recordings}", env, "baseline=none",
                          f"agent_code.program={edited}", f"run.out={tmp_path / 'edited'}")
    assert refused.returncode == 3, refused.stdout[-2000:] + refused.stderr[-2000:]
    assert "task/alice-orders was recorded for another request: options" in refused.stderr
    assert not (tmp_path / "edited" / "report.json").exists()
