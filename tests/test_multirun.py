"""Sweeps: `python -m evalkit -m ...` runs every combination, writes one summary, leaks nothing."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import pytest
import yaml
from docs_text import docs_text

from evalkit.core.config import ModelConfig
from evalkit.core.dataset import load_dataset
from evalkit.core.key import build_key, recording_path, reply_settings
from evalkit.live.providers.base import Message, Reply, Request
from evalkit.project.paths import PACKAGE_CONF
from evalkit.run.recording import Entry, Provenance, Recording, request_fingerprint, save_recording

PROJECT_ROOT = Path(__file__).resolve().parents[1]  # this repository: the examples project

pytestmark = pytest.mark.slow


def test_sweep_runs_four_jobs_and_writes_one_summary(run_evalkit, tmp_path):
    done = run_evalkit("-m", "model=gemini-flash,gemma4", "prompt=v1,v2")
    assert done.returncode == 1, done.stdout + done.stderr  # the most severe job blocks
    sweep = tmp_path / "sweep"
    rows = json.loads((sweep / "summary.json").read_text())
    assert [(r["overrides"], r["decision"], r["regressed"]) for r in rows] == [
        (["model=gemini-flash", "prompt=v1"], "go", 0),
        (["model=gemini-flash", "prompt=v2"], "go", 0),
        (["model=gemma4", "prompt=v1"], "block", 2),
        (["model=gemma4", "prompt=v2"], "go", 0),
    ]
    table = (sweep / "summary.md").read_text().splitlines()
    assert table[0] == ("| job | overrides | changed | decision | pass rate | case pass rate | regressed | input tokens | "
                        "cost USD |")
    assert any(line.startswith("| 2 | model=gemma4 prompt=v1 | model gemini-3.8-flash -> gemma4:e2b, components.model "
                               "gemini-3.8-flash@8eb3e7a90396 -> gemma4:e2b@133bba7edbbb (model.options.thinking_level "
                               "low -> (absent); model.options.seed (absent) -> 7; model.options.think (absent) -> false) "
                               "| BLOCK | 0.961 | 0.833 | 2 |") for line in table)
    assert "sweep summary (4 jobs" in done.stdout
    readme = docs_text().split("### Sweeps", 1)[1].split("```", 2)[1]
    shown = [line for line in readme.splitlines() if line.startswith("|")]
    assert shown == table  # the README's table is this sweep's table
    assert all((sweep / str(n) / "report.json").is_file() for n in range(4))


def test_a_failing_job_does_not_stop_the_sweep(run_evalkit, tmp_path):
    done = run_evalkit("-m", "prompt=v1,v2", "baseline=/nonexistent.json")
    assert done.returncode == 3
    rows = json.loads((tmp_path / "sweep" / "summary.json").read_text())
    assert len(rows) == 2 and all("report file not found" in r["error"] for r in rows)


# Two suites whose modules have the same names (task.py, conftest.py, test_leak.py) but different
# behaviour. If job 1's modules were still loaded in job 2, job 2's requests would be built by
# suite A's task and miss suite B's recording, and its checks would expect A's replies.
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
    judge = ModelConfig.model_validate(yaml.safe_load((PACKAGE_CONF / "judge/gemini-flash.yaml").read_text()))
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


def test_jobs_do_not_leak_suite_modules_into_each_other(run_evalkit, tmp_path):
    conf, rec = tmp_path / "conf", tmp_path / "rec"
    (conf / "suite").mkdir(parents=True)
    for mark in ("a", "b"):
        make_suite(tmp_path, conf, rec, mark)
    done = run_evalkit("-m", "suite=leak_a,leak_b", f"hydra.searchpath=[file://{conf}]",
                       f"run.recordings={rec}", "baseline=none")
    assert done.returncode == 0, done.stdout + done.stderr
    for job, mark in ((0, "a"), (1, "b")):
        data = json.loads((tmp_path / "sweep" / str(job) / "report.json").read_text())
        assert data["eval"]["suite"] == f"leak_{mark}"
        assert {t["outcome"] for t in data["tests"]} == {"passed"} and len(data["tests"]) == 2
