"""A loopback model with known per-case pass probabilities, and a small suite that asks it: the proving ground
of `run.repeats` (tests/run/test_run_repeats.py, benchmarks/repeats.py).

The model (served by FakeOpenAI, OpenAI's chat completions) answers each request from the seed it is sent:
`u = sha256("<case>:<seed>")` read as a number in [0, 1), and the reply is right when `u < p`, where p is the
case's pass probability under the system the request names (`model`). So a run is reproducible (the same seeds
give the same replies), samples with other seeds are independent draws, and every pass probability is known. At
temperature 0 the model is greedy: right when p >= 0.5, whatever the seed.

The suite (written by `write_suite` into a folder with its own conf/): each case asks `case <id>`; the reply is
`{"label": "right"}` or `{"label": "wrong"}`. Two checks per case: the label (fails on a wrong reply) and that
the reply is a JSON object (always passes). With `judged=True` a judge (the same server, model `flaky-judge`)
reads each reply and says whether its label is right, and a third check asserts the verdict.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

__all__ = ["JUDGE_MODEL", "draw", "is_right", "flaky_model", "write_suite"]

JUDGE_MODEL = "flaky-judge"
JUDGE_PREFIX = "You judge"

TASK = '''
from evalkit import Message, Request


def build_task(case, prompt, model):
    return Request(model=model.name, options=model.options,
                   messages=(Message(role="system", content=prompt), Message(role="user", content=f"case {case.id}")))
'''
JUDGE = '''

def build_judge(case, output, judge):
    return {"label": Request(model=judge.name, options=judge.options,
                             messages=(Message(role="system", content="You judge the label."),
                                       Message(role="user", content=output)))}
'''
TESTS = '''import json


def test_label(case, task_reply):
    assert json.loads(task_reply)["label"] == "right"


def test_reply_is_json(case, task_reply):
    assert isinstance(json.loads(task_reply), dict)
'''
JUDGED_TEST = '''

def test_judged_right(case, judge_reply):
    assert json.loads(judge_reply("label"))["right"] is True
'''
SUITE_OPTION = """# @package _global_
defaults:
  - /model: flaky
  - /prompt: v1
  - /dataset: v1
  - /policy: flaky{judge}
suite:
  name: {name}
  path: {path}
  baseline: null
"""
MODEL_OPTION = """name: {name}
provider: openai
base_url: {url}
api_key_env: null
timeout_s: 30
options:
  temperature: {temperature}
  seed: {seed}
"""
POLICY = "# authored for the flaky test suite: the default policy (repeats.alpha 0.05)\nname: flaky\n"


def draw(case: str, seed: int) -> float:
    """The model's uniform draw for a case under a seed, in [0, 1)."""
    digest = hashlib.sha256(f"{case}:{seed}".encode()).digest()
    return int.from_bytes(digest[:8], "big") / 2**64


def is_right(p: float, case: str, seed: int, temperature: float) -> bool:
    """Whether the model answers a case right: greedy (p >= 0.5) at temperature 0, else drawn from the seed."""
    return p >= 0.5 if temperature == 0 else draw(case, seed) < p


def flaky_model(systems: Mapping[str, Mapping[str, float]]) -> Callable[[dict[str, Any]], str]:
    """The reply function of a FakeOpenAI server: `systems` maps a model name to each case's pass probability."""

    def reply(body: dict[str, Any]) -> str:
        messages = body["messages"]
        if body["model"] == JUDGE_MODEL and messages[0]["content"].startswith(JUDGE_PREFIX):
            return json.dumps({"right": json.loads(messages[-1]["content"]).get("label") == "right"})
        rates = systems[body["model"]]
        case = messages[-1]["content"].removeprefix("case ")
        right = is_right(rates[case], case, int(body.get("seed", 0)), float(body.get("temperature", 1.0)))
        return json.dumps({"label": "right" if right else "wrong"})

    return reply


def write_suite(root: Path, *, name: str, cases: list[str], url: str, systems: list[str], temperature: float = 0.8,
                seed: int = 0, judged: bool = False) -> Path:
    """Write the suite `name` (folder `root/<name>`) and a conf folder with its options; returns the conf folder.
    Each of `systems` is a model option of that name (`model=<system>`)."""
    suite, conf = root / name, root / "conf"
    for folder in (suite / "prompts", suite / "datasets", conf / "suite", conf / "model", conf / "policy",
                   conf / "judge"):
        folder.mkdir(parents=True, exist_ok=True)
    (suite / "prompts" / "v1.txt").write_text("Answer with the label of the case, in JSON.\n", encoding="utf-8")
    dataset = {"name": name.replace("_", "-"), "version": 1, "cases": [{"id": case} for case in cases]}
    (suite / "datasets" / "v1.json").write_text(json.dumps(dataset, indent=1) + "\n", encoding="utf-8")
    (suite / "task.py").write_text(TASK + (JUDGE if judged else ""), encoding="utf-8")
    (suite / "test_flaky.py").write_text(TESTS + (JUDGED_TEST if judged else ""), encoding="utf-8")
    judge_default = "\n  - /judge: flaky_judge" if judged else ""
    (conf / "suite" / f"{name}.yaml").write_text(
        SUITE_OPTION.format(name=name, path=suite, judge=judge_default), encoding="utf-8")
    (conf / "policy" / "flaky.yaml").write_text(POLICY, encoding="utf-8")
    for system in systems:
        (conf / "model" / f"{system}.yaml").write_text(
            MODEL_OPTION.format(name=system, url=url, temperature=temperature, seed=seed), encoding="utf-8")
    (conf / "model" / "flaky.yaml").write_text(
        MODEL_OPTION.format(name=systems[0], url=url, temperature=temperature, seed=seed), encoding="utf-8")
    (conf / "judge" / "flaky_judge.yaml").write_text(
        MODEL_OPTION.format(name=JUDGE_MODEL, url=url, temperature=0, seed=1), encoding="utf-8")
    return conf
