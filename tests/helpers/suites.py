"""Small generated suites for the sweep and Slurm tests: `make_suite` writes suite `leak_<mark>`, its config option
and an authored recording whose replies name the mark, so a job that reads another job's modules shows it."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import yaml

from evalkit.core.config import JudgeConfig, ModelConfig
from evalkit.core.dataset import load_dataset
from evalkit.core.key import build_key, recording_path, reply_settings
from evalkit.project.paths import PACKAGE_CONF
from evalkit.records.call import Message, Reply, Request
from evalkit.run.recording import Entry, Provenance, Recording, request_fingerprint, save_recording

TASK = '''
from evalkit import Message, Request
MARK = "{mark}"
def build_task(case, prompt, model):
    return Request(model=model.name, messages=(Message(role="user", content=MARK + ":" + case.id),))
'''
TEST = '''
from task import MARK

def test_reply_is_this_suites(case, task_reply):
    assert task_reply == "reply-" + MARK + "-" + case.id
'''
SUITE_OPTION = """# @package _global_
defaults:
  - /model: gemini-flash
  - /prompt: v1
  - /dataset: v1
  - /judge: gemini-flash
  - /policy: triage
suite:
  name: {name}
  path: {path}
  baseline: null
"""


def make_suite(root: Path, conf: Path, rec: Path, mark: str) -> None:
    suite = root / f"leak_{mark}"
    (suite / "prompts").mkdir(parents=True)
    (suite / "datasets").mkdir()
    (suite / "prompts/v1.txt").write_text("prompt")
    (suite / "datasets/v1.json").write_text(json.dumps(
        {"name": "leak", "version": 1, "cases": [{"id": "c1"}, {"id": "c2"}]}))
    (suite / "task.py").write_text(textwrap.dedent(TASK.format(mark=mark)))
    (suite / "test_leak.py").write_text(textwrap.dedent(TEST))
    (conf / "suite" / f"leak_{mark}.yaml").write_text(SUITE_OPTION.format(name=f"leak_{mark}", path=suite))
    model = ModelConfig.model_validate(yaml.safe_load((PACKAGE_CONF / "model/gemini-flash.yaml").read_text()))
    dataset = load_dataset(suite / "datasets/v1.json")
    judge = JudgeConfig.model_validate(yaml.safe_load((PACKAGE_CONF / "judge/gemini-flash.yaml").read_text()))
    key = build_key(suite=f"leak_{mark}", dataset=dataset, model=model.name, prompt_version="v1",
                    prompt_text="prompt", judge_model=judge.name, components={},
                    model_settings=reply_settings(model.options, model.structured_output),
                    judge_settings=reply_settings(judge.options, judge.structured_output))
    calls = {}
    for case in dataset.cases:  # built here, not with evalkit's loader, which is what is under test
        request = Request(model=model.name, messages=(Message(role="user", content=f"{mark}:{case.id}"),))
        calls[f"task/{case.id}"] = Entry(request_sha=request_fingerprint(request), request=request,
                                         reply=Reply(text=f"reply-{mark}-{case.id}"))
    save_recording(Recording(key=key, provenance=Provenance(kind="authored", note="test fixture"), calls=calls),
                   recording_path(key, rec))
