"""Benchmark: a real local model through `python -m evalkit mode=live model=smollm2`, against llama_cpp directly.

SmolLM2-135M-Instruct (`evalkit setup local`) triages 50 issues: the issue-triage suite's 12 issues, cycled, in a
generated suite whose task is the issue-triage task (same prompt, same schema, no judge). The same 50
prompts go through `llama_cpp.Llama.create_chat_completion` in this process, with the same file, settings,
schema and options, once before and once after the evalkit run (the machine is shared; the mean is used).

Two ratios over the direct time:
  - whole run: evalkit's wall time (start-up, model load, 50 calls, the pytest checks, the report) over the
    direct model load plus 50 calls; this is `ratio_to_direct`, the target is <= 1.15;
  - call phase: `execution.live.seconds` of the run report over the direct 50 calls.
It also counts the replies evalkit recorded that equal the direct ones (greedy decoding, same seed).

Last line: `ratio_to_direct=<r>`.

Run from the project root, after `evalkit setup local`:  .venv/bin/python benchmarks/local_model.py
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import yaml

PROJECT_ROOT = Path(__file__).resolve().parent.parent
SUITE = PROJECT_ROOT / "suites" / "issue_triage"
PRESET = PROJECT_ROOT / "evalkit" / "conf" / "model" / "smollm2.yaml"
CALLS = 50
TARGET = 1.15

TEST = '''
def test_reply_came_back(case, task_reply):
    assert task_reply is not None
'''
SUITE_OPTION = """# @package _global_
defaults:
  - /model: smollm2
  - /prompt: v1
  - /dataset: v1
  - /judge: smollm2
  - /policy: triage
suite:
  name: bench_local
  path: {suite}
  baseline: null
"""


def issues() -> list[dict[str, str]]:
    cases = json.loads((SUITE / "datasets" / "v1.json").read_text(encoding="utf-8"))["cases"]
    return [{"id": f"{cases[i % len(cases)]['id']}-{i:02d}", "issue": cases[i % len(cases)]["issue"]}
            for i in range(CALLS)]


def make_suite(root: Path) -> Path:
    """The bench suite (issue triage's task and prompt, 50 cases, no judged ones); returns its config dir."""
    suite, conf = root / "suite", root / "conf"
    for folder in (suite / "prompts", suite / "datasets", conf / "suite"):
        folder.mkdir(parents=True)
    (suite / "prompts" / "v1.txt").write_text((SUITE / "prompts" / "v1.txt").read_text(encoding="utf-8"))
    (suite / "datasets" / "v1.json").write_text(json.dumps({"name": "bench-local", "version": 1, "cases": issues()}))
    (suite / "task.py").write_text((SUITE / "task.py").read_text(encoding="utf-8"))
    (suite / "test_bench.py").write_text(TEST)
    (conf / "suite" / "bench_local.yaml").write_text(SUITE_OPTION.format(suite=suite))
    return conf


def direct() -> tuple[float, float, list[str]]:
    """The 50 prompts straight through llama_cpp: load seconds, call seconds, reply texts."""
    import llama_cpp

    from evalkit.live.providers.llamacpp import LOAD_OPTIONS, bundled_model_file

    sys.path.insert(0, str(SUITE))
    from task import Triage  # the issue-triage suite's reply schema

    options = dict(yaml.safe_load(PRESET.read_text(encoding="utf-8"))["options"])
    load = {name: options.pop(name, default) for name, default in LOAD_OPTIONS.items()}
    prompt = (SUITE / "prompts" / "v1.txt").read_text(encoding="utf-8")
    started = time.perf_counter()
    model = llama_cpp.Llama(model_path=str(bundled_model_file()), verbose=False, **load)
    loaded = time.perf_counter()
    texts = []
    for case in issues():
        model.reset()  # as evalkit's worker does: every prompt evaluated whole, so a reply never depends on the last
        reply: Any = model.create_chat_completion(
            messages=[{"role": "system", "content": prompt}, {"role": "user", "content": case["issue"]}],
            response_format={"type": "json_object", "schema": Triage.model_json_schema()}, **options)
        texts.append(reply["choices"][0]["message"]["content"])
    done = time.perf_counter()
    model.close()
    return loaded - started, done - loaded, texts


def through_evalkit(root: Path, conf: Path) -> tuple[float, dict[str, Any], list[str]]:
    """One `python -m evalkit mode=live model=smollm2` run: wall seconds, run report, recorded task replies."""
    job = root / "job"
    command = [sys.executable, "-m", "evalkit", f"hydra.searchpath=[file://{conf}]", "suite=bench_local",
               "model=smollm2", "mode=live", f"run.recordings={root / 'rec'}", "run.progress=off", "baseline=none",
               f"hydra.run.dir={job}"]
    env = {k: v for k, v in os.environ.items() if k != "HYDRA_FULL_ERROR"}
    started = time.perf_counter()
    done = subprocess.run(command, cwd=PROJECT_ROOT, env=env, capture_output=True, text=True, check=False)
    wall = time.perf_counter() - started
    if done.returncode != 0:
        raise SystemExit(f"the evalkit run failed (exit {done.returncode}):\n{done.stdout}{done.stderr}")
    report: dict[str, Any] = json.loads((job / "report.json").read_text())
    recording = json.loads(next((root / "rec" / "bench_local").glob("*.json")).read_text())
    texts = [recording["calls"][f"task/{case['id']}"]["reply"]["text"] for case in issues()]
    return wall, report, texts


def main() -> int:
    with tempfile.TemporaryDirectory(prefix="evalkit-bench-local-") as tmp:
        root = Path(tmp)
        conf = make_suite(root)
        load_a, calls_a, texts = direct()
        print(f"direct:  model load {load_a:.2f} s, {CALLS} calls {calls_a:.2f} s", flush=True)
        wall, report, recorded = through_evalkit(root, conf)
        live = report["execution"]["live"]
        print(f"evalkit: whole run {wall:.2f} s, call phase {live['seconds']:.2f} s, {live['sent']} calls sent, "
              f"calls {report['execution']['calls']}", flush=True)
        load_b, calls_b, _ = direct()
        print(f"direct:  model load {load_b:.2f} s, {CALLS} calls {calls_b:.2f} s", flush=True)
    direct_calls = (calls_a + calls_b) / 2
    direct_whole = direct_calls + (load_a + load_b) / 2
    same = sum(a == b for a, b in zip(texts, recorded, strict=True))
    print(f"call phase ratio {live['seconds'] / direct_calls:.3f}; {same} of {CALLS} replies equal to the direct ones; "
          f"whole-run target <= {TARGET}")
    print(f"ratio_to_direct={wall / direct_whole:.3f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
