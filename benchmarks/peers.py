"""Benchmark: evalkit beside its peers (bare pytest, DeepEval, promptfoo, Inspect) on the same work.

The work, for every tool: N offline cases, case i asks `Q{i}: say ok` with the target `ok`, a fake model answers
`ok`, and one exact-match check per case passes. Each tool does it the way its own documentation says:

  pytest     bare pytest + pytest-json-report (plugin autoload off, so no other plugin runs): one parametrized
             test over the cases (read from a JSON file) calling a function that returns "ok", `==` the target;
  evalkit    `python -m evalkit` replaying an authored recording of the N calls (every reply "ok") and gating the
             run against a baseline report (written once, untimed): compose, replay, the pytest check, the report,
             the decision; `workers` is the same command with `run.workers=auto` (one pytest shard per CPU). The
             suite says `pytest_plugins: []` (its checks need no installed pytest plugin), so its checks' process
             loads none besides evalkit's and pytest-json-report, as bare pytest runs here;
  deepeval   a script calling `deepeval.evaluate()` on N `LLMTestCase`s whose `actual_output` comes from a function
             answering "ok", with DeepEval's `ExactMatchMetric` (no LLM), results written to a results folder, and
             `CacheConfig(write_cache=False)`: with its default, DeepEval re-reads and re-writes its whole test-run
             file after every case, so its time grows with the square of N (at 10,000 cases, measured once: about
             2,000 cases done after 7 minutes); its cache only serves a re-run, which a wiped run never is;
  promptfoo  `promptfoo eval` with the `echo` provider and one `equals: ok` assertion per test. echo returns the
             prompt it is sent, so the prompt template renders the answer the question asks for
             (`{{ question.split(": say ")[1] }}`, i.e. "ok"): each test still carries its own question as a
             variable that promptfoo renders, and the check is promptfoo's exact match;
  inspect    a script calling `inspect_ai.eval()` on a Task of N samples (`json_dataset`), `generate()`, the
             `exact()` scorer and `mockllm/model` with custom outputs answering "ok" (usage given, so mockllm does
             not count tokens with tiktoken, which would download its encoding).

evalkit's bytecode caches are written once before the runs (compileall, as `pip install` writes them for an
installed package; this checkout is an editable install, so under PYTHONDONTWRITEBYTECODE every run would
otherwise compile evalkit from source).

Every run is a fresh subprocess in a fresh temporary folder that is its HOME, TMPDIR, XDG folders, working folder
and output folder, so no tool's state survives from one run to the next (Inspect's log dir and data dir,
promptfoo's config dir, database and cache — PROMPTFOO_CACHE_ENABLED=false too —, DeepEval's .deepeval folder,
pytest's cache, evalkit's outputs). Telemetry and update checks are off (DEEPEVAL_TELEMETRY_OPT_OUT=YES,
PROMPTFOO_DISABLE_TELEMETRY=1, ...); nothing needs the network (the whole benchmark ran under `unshare -n`, with
none). Each tool's defaults are kept otherwise (Inspect's sample concurrency, DeepEval's async evaluation,
promptfoo's concurrency of 4 and its results database): what a user running the tool as documented would get.

Runs are interleaved in rounds: each round runs every tool once, in an order rotated by one per round, so a change
in the machine's load falls on every tool alike. After each run the tool's own output is read (pytest-json-report's
JSON, evalkit's report.json and decision.json, DeepEval's test_run JSON, promptfoo's JSON output, Inspect's log;
the last three through evalkit's own adapters) and every one of the N cases must have passed; if not, the script
stops with one line saying which tool and what it found, and exits 1.

The time of a run is the wall time of the whole command, start-up included. The last line is

  vs_pytest=<r> vs_deepeval=<r> vs_promptfoo=<r> vs_inspect=<r> workers_vs_pytest=<r>

each the ratio of medians (evalkit over the peer; `workers_vs_pytest` is evalkit with run.workers=auto over bare
pytest): below 1.0, evalkit is faster. A peer left out with --skip shows `skipped`.

Run from the project root:  .venv/bin/python benchmarks/peers.py [--cases N] [--rounds R] [--skip inspect,...]
The peers are found as scripts/test.sh installs them: EVALKIT_INSPECT_PYTHON, EVALKIT_DEEPEVAL_PYTHON and
EVALKIT_PROMPTFOO, else .venv-inspect/bin/python, .venv-deepeval/bin/python and
.tools/promptfoo/node_modules/.bin/promptfoo under the project root.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import yaml  # evalkit's own dependency; reads conf/model and conf/judge as Hydra would

from evalkit.adapt.deepeval import read_deepeval
from evalkit.adapt.inspect import read_inspect_log
from evalkit.adapt.neutral import NeutralRun
from evalkit.adapt.promptfoo import read_promptfoo
from evalkit.core.config import JudgeConfig, ModelConfig
from evalkit.core.dataset import load_dataset
from evalkit.core.errors import EvalkitError
from evalkit.core.key import build_key, recording_path, reply_settings
from evalkit.project.paths import PACKAGE_CONF
from evalkit.records.call import Message, Reply, Request
from evalkit.run.recording import Entry, Provenance, Recording, request_fingerprint, save_recording
from evalkit.run.workers import worker_count

PROJECT_ROOT = Path(__file__).resolve().parents[1]  # this repository: the examples project

PEERS = ("deepeval", "promptfoo", "inspect")
TOOLS = ("pytest", *PEERS, "evalkit", "workers")  # round 1's order; each round starts one later
DEFAULT_CASES = 10_000
DEFAULT_ROUNDS = 3  # at 10,000 cases one round takes about 11 minutes on 2 shared CPUs, Inspect 6 of them
RUN_TIMEOUT_S = 3600
SUITE = "peers"
MODEL_OPTION = JUDGE_OPTION = "gemini-flash"  # any option: the recording is keyed on it and nothing is called
NOTE = "authored fixture: every reply 'ok', written by benchmarks/peers.py, not produced by any model"


class Failed(Exception):
    """A tool did not run, or did not pass every case: the message is the one line the script ends with."""


# --- the work, in each tool's terms -----------------------------------------------------------------------------

def make_cases(n: int) -> list[dict[str, str]]:
    width = len(str(n))
    return [{"id": f"q{i:0{width}d}", "input": f"Q{i}: say ok", "target": "ok"} for i in range(1, n + 1)]


PYTEST_TEST = '''"""Bare pytest: the fake model answers "ok"; one exact-match check per case."""

import json
from pathlib import Path

import pytest

CASES = json.loads(Path(__import__("os").environ["PEERS_CASES"]).read_text(encoding="utf-8"))


def model(question):
    return "ok"


@pytest.mark.parametrize("case", CASES, ids=[case["id"] for case in CASES])
def test_says_ok(case):
    assert model(case["input"]) == case["target"]
'''

EVALKIT_TASK = '''"""The task of benchmarks/peers.py's suite: send the case's question to the model."""

from evalkit import Message, Request


def build_task(case, prompt, model):
    return Request(model=model.name, messages=(Message(role="user", content=case.input),))
'''

EVALKIT_TEST = '''"""The check of benchmarks/peers.py's suite: the reply is exactly the target."""


def test_says_ok(case, task_reply):
    assert task_reply == case.target
'''

EVALKIT_SUITE_OPTION = """# @package _global_
defaults:
  - /model: {model}
  - /prompt: peers
  - /dataset: peers
  - /judge: {judge}
  - /policy: peers
suite:
  name: {suite}
  path: {path}
  baseline: null
  pytest_plugins: []  # the checks need no installed plugin: none is loaded, as bare pytest runs here
"""

DEEPEVAL_SCRIPT = '''"""DeepEval: evaluate() with ExactMatchMetric (no LLM); the fake model answers "ok"."""

import json
import sys

from deepeval import evaluate
from deepeval.evaluate.configs import CacheConfig, DisplayConfig
from deepeval.metrics import ExactMatchMetric
from deepeval.test_case import LLMTestCase


def model(question):
    return "ok"


cases = json.loads(open(sys.argv[1], encoding="utf-8").read())
test_cases = [LLMTestCase(name=case["id"], input=case["input"], actual_output=model(case["input"]),
                          expected_output=case["target"]) for case in cases]
evaluate(test_cases, metrics=[ExactMatchMetric()],
         display_config=DisplayConfig(print_results=False, show_indicator=False, results_folder=sys.argv[2]),
         cache_config=CacheConfig(write_cache=False))  # else the whole run is re-read and re-written per case
'''

INSPECT_SCRIPT = '''"""Inspect: a Task over the cases with generate() and exact(), on mockllm/model answering "ok"."""

import sys

from inspect_ai import Task, eval as inspect_eval
from inspect_ai.dataset import FieldSpec, json_dataset
from inspect_ai.model import ModelOutput, ModelUsage, get_model
from inspect_ai.scorer import exact
from inspect_ai.solver import generate


def answer(messages, tools, tool_choice, config):
    output = ModelOutput.from_content(model="mockllm/model", content="ok")
    output.usage = ModelUsage(input_tokens=4, output_tokens=1, total_tokens=5)  # so mockllm needs no tokenizer
    return output


dataset = json_dataset(sys.argv[1], FieldSpec(input="input", target="target", id="id"), name="peers")
task = Task(dataset=dataset, solver=generate(), scorer=exact(), name="peers")
inspect_eval(task, model=get_model("mockllm/model", custom_outputs=answer), log_dir=sys.argv[2], display="none")
'''


def write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")


def generate(root: Path, n: int) -> None:
    """Each tool's inputs under root/inputs (read-only to the runs): the same N cases in each tool's format."""
    inputs = root / "inputs"
    cases = make_cases(n)
    write(inputs / "cases.json", json.dumps(cases))
    write(inputs / "cases.jsonl", "".join(json.dumps(case) + "\n" for case in cases))
    write(inputs / "test_peers.py", PYTEST_TEST)
    write(inputs / "deepeval_run.py", DEEPEVAL_SCRIPT)
    write(inputs / "inspect_run.py", INSPECT_SCRIPT)
    config = {"description": "benchmarks/peers.py",
              "prompts": [{"id": "say", "label": "say", "raw": '{{ question.split(": say ")[1] }}'}],
              "providers": ["echo"],
              "defaultTest": {"assert": [{"type": "equals", "value": "ok"}]},
              "tests": [{"description": case["id"], "vars": {"question": case["input"]}} for case in cases]}
    write(inputs / "promptfooconfig.yaml", json.dumps(config))  # JSON is YAML, and quicker to parse
    generate_evalkit(inputs, cases)


def generate_evalkit(inputs: Path, cases: list[dict[str, str]]) -> None:
    """The evalkit suite, its Hydra config dir and its authored recording (as tests/helpers/suites.py makes them)."""
    suite, conf, recordings = inputs / "suite", inputs / "conf", inputs / "recordings"
    write(suite / "task.py", EVALKIT_TASK)
    write(suite / "test_peers.py", EVALKIT_TEST)
    write(suite / "prompts" / "v1.txt", "Answer the question.\n")
    dataset_cases = [{"id": case["id"], "input": case["input"], "target": case["target"]} for case in cases]
    write(suite / "datasets" / "peers.json", json.dumps({"name": SUITE, "version": str(len(cases)),
                                                         "cases": dataset_cases}) + "\n")
    write(conf / "suite" / f"{SUITE}.yaml", EVALKIT_SUITE_OPTION.format(model=MODEL_OPTION, judge=JUDGE_OPTION,
                                                                         suite=SUITE, path=suite))
    write(conf / "prompt" / "peers.yaml", "version: v1\nfile: ${suite.path}/prompts/v1.txt\n")
    write(conf / "dataset" / "peers.yaml", "file: ${suite.path}/datasets/peers.json\n")
    write(conf / "policy" / "peers.yaml", "max_regressions: 0\nmin_pass_rate: 1.0\n")

    model, judge = model_config("model", MODEL_OPTION), model_config("judge", JUDGE_OPTION)
    dataset = load_dataset(suite / "datasets" / "peers.json")
    key = build_key(suite=SUITE, dataset=dataset, model=model.name, prompt_version="v1",
                    prompt_text="Answer the question.\n", judge_model=judge.name, components={},
                    model_settings=reply_settings(model.options, model.structured_output),
                    judge_settings=reply_settings(judge.options, judge.structured_output))
    calls = {}
    for case in dataset.cases:
        request = Request(model=model.name, messages=(Message(role="user", content=case.input),))
        calls[f"task/{case.id}"] = Entry(request_sha=request_fingerprint(request), request=request,
                                         reply=Reply(text="ok"))
    save_recording(Recording(key=key, provenance=Provenance(kind="authored", note=NOTE), calls=calls),
                   recording_path(key, recordings))


def model_config(group: str, option: str) -> ModelConfig:
    """A model or judge preset as evalkit composes it (a judge's own settings, `repeats`, are a JudgeConfig's)."""
    data = yaml.safe_load((PACKAGE_CONF / group / f"{option}.yaml").read_text(encoding="utf-8"))
    return (JudgeConfig if group == "judge" else ModelConfig).model_validate(data)


# --- the tools --------------------------------------------------------------------------------------------------

def locate(tool: str) -> Path:
    """The executable a peer runs with, as scripts/test.sh installs it."""
    variable, default = {
        "inspect": ("EVALKIT_INSPECT_PYTHON", ".venv-inspect/bin/python"),
        "deepeval": ("EVALKIT_DEEPEVAL_PYTHON", ".venv-deepeval/bin/python"),
        "promptfoo": ("EVALKIT_PROMPTFOO", ".tools/promptfoo/node_modules/.bin/promptfoo"),
    }[tool]
    path = Path(os.environ.get(variable) or PROJECT_ROOT / default)
    if not path.exists():
        raise Failed(f"{tool} is not installed at {path}: run scripts/test.sh (it installs it), set {variable}, "
                     f"or leave it out with --skip {tool}")
    return path


def run_env(run_dir: Path) -> dict[str, str]:
    """The environment of one run: its folder is every tool's home, temp and state folder."""
    drop = ("PYTEST_ADDOPTS", "PYTEST_PLUGINS", "PYTEST_DISABLE_PLUGIN_AUTOLOAD", "PYTHONPATH", "INSPECT_LOG_DIR")
    env = {k: v for k, v in os.environ.items() if k not in drop and not k.startswith(("PROMPTFOO_", "DEEPEVAL_"))}
    home = run_dir / "home"
    folders = {"HOME": home, "TMPDIR": run_dir / "tmp", "XDG_CONFIG_HOME": home / ".config",
               "XDG_CACHE_HOME": home / ".cache", "XDG_DATA_HOME": home / ".local/share",
               "XDG_STATE_HOME": home / ".local/state", "PROMPTFOO_CONFIG_DIR": home / ".promptfoo"}
    for folder in folders.values():
        folder.mkdir(parents=True, exist_ok=True)
    env.update({name: str(folder) for name, folder in folders.items()})
    env.update({
        "PROMPTFOO_CACHE_ENABLED": "false", "PROMPTFOO_DISABLE_TELEMETRY": "1", "PROMPTFOO_DISABLE_UPDATE": "1",
        "PROMPTFOO_DISABLE_SHARING": "1", "PROMPTFOO_DISABLE_REMOTE_GENERATION": "true",
        "DEEPEVAL_TELEMETRY_OPT_OUT": "YES", "DEEPEVAL_UPDATE_WARNING_OPT_IN": "NO",
        "HF_HUB_OFFLINE": "1",
    })
    return env


def command(tool: str, inputs: Path, run_dir: Path) -> list[str]:
    out = run_dir / "out"
    if tool == "pytest":
        return [sys.executable, "-m", "pytest", str(run_dir / "test_peers.py"), "-q", "-p", "pytest_jsonreport.plugin",
                "--rootdir", str(run_dir), "--json-report", f"--json-report-file={out / 'report.json'}"]
    if tool in ("evalkit", "workers"):
        workers = ["run.workers=auto"] if tool == "workers" else []
        return [sys.executable, "-m", "evalkit", f"hydra.searchpath=[file://{inputs / 'conf'}]", f"suite={SUITE}",
                f"run.recordings={inputs / 'recordings'}", f"hydra.run.dir={out}",
                f"baseline={inputs / 'baseline.json'}", *workers]
    if tool == "deepeval":
        return [str(locate(tool)), str(inputs / "deepeval_run.py"), str(inputs / "cases.json"), str(out)]
    if tool == "promptfoo":
        return [str(locate(tool)), "eval", "-c", str(inputs / "promptfooconfig.yaml"), "-o", str(out / "results.json"),
                "--no-progress-bar", "--no-table"]
    if tool == "inspect":
        return [str(locate(tool)), str(inputs / "inspect_run.py"), str(inputs / "cases.jsonl"), str(out)]
    raise ValueError(tool)


def run_once(tool: str, inputs: Path, run_dir: Path, n: int) -> float:
    """One timed run of a tool in a fresh folder; checks its own output says every case passed."""
    (run_dir / "out").mkdir(parents=True)
    env = run_env(run_dir)
    if tool == "pytest":
        (run_dir / "test_peers.py").write_text((inputs / "test_peers.py").read_text(encoding="utf-8"))
        env["PYTEST_DISABLE_PLUGIN_AUTOLOAD"] = "1"
        env["PEERS_CASES"] = str(inputs / "cases.json")
    cwd = PROJECT_ROOT if tool in ("evalkit", "workers") else run_dir
    argv = command(tool, inputs, run_dir)
    start = time.perf_counter()
    done = subprocess.run(argv, cwd=cwd, env=env, capture_output=True, text=True, timeout=RUN_TIMEOUT_S, check=False)
    took = time.perf_counter() - start
    if done.returncode != 0:
        tail = " | ".join((done.stdout + done.stderr).strip().splitlines()[-3:])
        raise Failed(f"{tool} exited {done.returncode}: {tail[-400:]}")
    CHECKS[tool](run_dir / "out", n)
    return took


# --- each tool's own output -------------------------------------------------------------------------------------

def read_json(path: Path, tool: str) -> Any:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as error:
        raise Failed(f"{tool} wrote no readable {path.name} ({error})") from None


def check_pytest(out: Path, n: int) -> None:
    summary = read_json(out / "report.json", "pytest")["summary"]
    if summary.get("passed") != n or summary.get("total") != n:
        raise Failed(f"pytest passed {summary.get('passed', 0)} of {n} cases (its report: {summary})")


def check_evalkit(out: Path, n: int) -> None:
    summary = read_json(out / "report.json", "evalkit")["summary"]
    decision = read_json(out / "decision.json", "evalkit")
    if summary.get("passed") != n or summary.get("total") != n:
        raise Failed(f"evalkit passed {summary.get('passed', 0)} of {n} cases (its report: {summary})")
    if decision.get("decision") != "go" or decision.get("tests") != n:
        raise Failed(f"evalkit's gate said {decision.get('decision')} on {decision.get('tests')} tests, "
                     f"expected go on {n}")


def check_adapted(tool: str, read: Callable[[Path], NeutralRun], files: list[Path], n: int) -> None:
    if len(files) != 1:
        raise Failed(f"{tool} wrote {len(files)} result files where one was expected: {[str(f) for f in files]}")
    try:
        run = read(files[0])
    except EvalkitError as error:
        raise Failed(f"{tool}'s output could not be read: {error}") from None
    cases = {test.case for test in run.tests}
    passed = cases - {test.case for test in run.tests if test.outcome != "passed"}
    if len(passed) != n or len(run.tests) != n:
        checks = sum(test.outcome == "passed" for test in run.tests)
        raise Failed(f"{tool} passed {len(passed)} of {n} cases (its output {files[0].name}: {len(cases)} cases, "
                     f"{len(run.tests)} checks, {checks} passed)")


CHECKS: dict[str, Callable[[Path, int], None]] = {
    "pytest": check_pytest,
    "evalkit": check_evalkit,
    "workers": check_evalkit,
    "deepeval": lambda out, n: check_adapted("deepeval", read_deepeval, sorted(out.glob("test_run_*.json")), n),
    "promptfoo": lambda out, n: check_adapted("promptfoo", read_promptfoo, sorted(out.glob("results.json")), n),
    "inspect": lambda out, n: check_adapted("inspect", read_inspect_log, sorted(out.glob("*.eval")), n),
}


# --- the benchmark ----------------------------------------------------------------------------------------------

def baseline(inputs: Path, root: Path) -> None:
    """The report evalkit's timed runs gate against: the same replay, written once, untimed."""
    run_dir = root / "baseline-run"
    done = subprocess.run(
        [sys.executable, "-m", "evalkit", f"hydra.searchpath=[file://{inputs / 'conf'}]", f"suite={SUITE}",
         f"run.recordings={inputs / 'recordings'}", f"hydra.run.dir={run_dir}", "baseline=none",
         f"run.save_report={inputs / 'baseline.json'}"],
        cwd=PROJECT_ROOT, env=run_env(root / "baseline-env"), capture_output=True, text=True, check=False)
    if done.returncode != 0:
        tail = " | ".join((done.stdout + done.stderr).strip().splitlines()[-3:])
        raise Failed(f"evalkit could not write the baseline report (exit {done.returncode}): {tail[-400:]}")


def machine() -> str:
    model = platform.processor() or "unknown CPU"
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    load = " ".join(f"{x:.2f}" for x in os.getloadavg())
    return f"cpu={model!r} nproc={os.cpu_count()} workers_auto={worker_count('auto')} load_avg={load}"


def byte_compile_evalkit() -> None:
    """Write evalkit's bytecode caches, as `pip install` does for an installed package: this checkout is an
    editable install, so a run started with PYTHONDONTWRITEBYTECODE set (as in some CI and agent shells) would
    otherwise compile every evalkit module it imports from source, on every timed run, while the peers and pytest
    import theirs compiled at install time."""
    import compileall

    import evalkit
    import hydra_plugins.evalkit_launchers as launchers

    for package in (evalkit, launchers):
        compileall.compile_dir(str(Path(package.__file__).parent), quiet=1)


def ratio(times: dict[str, list[float]], top: str, bottom: str) -> str:
    if not times.get(top) or not times.get(bottom):
        return "skipped"
    return f"{statistics.median(times[top]) / statistics.median(times[bottom]):.2f}"


def bench(n: int, rounds: int, tools: list[str]) -> dict[str, list[float]]:
    times: dict[str, list[float]] = {tool: [] for tool in tools}
    with tempfile.TemporaryDirectory(prefix="evalkit-bench-peers-") as tmp:
        root = Path(tmp)
        start = time.perf_counter()
        byte_compile_evalkit()
        generate(root, n)
        baseline(root / "inputs", root)
        print(f"generated {n} cases for every tool and evalkit's baseline report in "
              f"{time.perf_counter() - start:.1f}s; {machine()}", flush=True)
        for number in range(rounds):
            order = tools[number % len(tools):] + tools[:number % len(tools)]
            for tool in order:
                run_dir = root / "runs" / f"{number}-{tool}"
                times[tool].append(run_once(tool, root / "inputs", run_dir, n))
                print(f"round {number + 1}/{rounds} {tool}: {times[tool][-1]:.2f}s, {n} of {n} passed "
                      f"(load {os.getloadavg()[0]:.2f})", flush=True)
                shutil.rmtree(run_dir)
    return times


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--cases", type=int, default=DEFAULT_CASES, help="cases per run (default 10,000)")
    parser.add_argument("--rounds", type=int, default=DEFAULT_ROUNDS, help="rounds; each runs every tool once")
    parser.add_argument("--skip", default="", help=f"peers to leave out, comma-separated ({', '.join(PEERS)})")
    args = parser.parse_args(argv)
    skipped = [name for name in args.skip.split(",") if name]
    unknown = [name for name in skipped if name not in PEERS]
    if unknown:
        parser.error(f"--skip: unknown peer {', '.join(unknown)}; the peers are {', '.join(PEERS)}")
    if args.cases < 1 or args.rounds < 1:
        parser.error("--cases and --rounds must be at least 1")
    args.skip = skipped
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    tools = [tool for tool in TOOLS if tool not in args.skip]
    try:
        for peer in PEERS:
            if peer in tools:
                locate(peer)
        times = bench(args.cases, args.rounds, tools)
    except Failed as failure:
        print(f"benchmarks/peers.py: {failure}", file=sys.stderr)
        return 1
    for tool in tools:
        runs = ", ".join(f"{t:.2f}" for t in times[tool])
        print(f"{tool}: median {statistics.median(times[tool]):.2f}s of [{runs}]", flush=True)
    print(f"cases={args.cases} rounds={args.rounds} {machine()}", flush=True)
    print(f"vs_pytest={ratio(times, 'evalkit', 'pytest')} vs_deepeval={ratio(times, 'evalkit', 'deepeval')} "
          f"vs_promptfoo={ratio(times, 'evalkit', 'promptfoo')} vs_inspect={ratio(times, 'evalkit', 'inspect')} "
          f"workers_vs_pytest={ratio(times, 'workers', 'pytest')}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
