"""`run.repeats=N` in the runner: every call sampled N times with seeds options.seed + i, each sample its own
recording entry, every check run on every sample, and k of N per test in the run report, which the gate reads.

The end-to-end tests run `python -m evalkit` as a subprocess against a loopback OpenAI-compatible server whose
replies are decided by the seed each request carries (tests/fakes/flaky.py), so every expected count is computed
here from the known pass probabilities, never hard-coded.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from fakes import FakeOpenAI
from fakes.flaky import JUDGE_MODEL, flaky_model, is_right, write_suite
from helpers.compose import composed

from evalkit.core.call_id import CallId
from evalkit.core.config import BudgetConfig, Mode, ModelConfig, RunSettings, validate_config
from evalkit.core.dataset import Case
from evalkit.core.errors import ConfigError, InputError, OutageError
from evalkit.core.key import EvalKey
from evalkit.core.policy import Policy
from evalkit.gate.decide import decide
from evalkit.gate.decision import Verdict
from evalkit.live.budget import Budget
from evalkit.live.providers.base import CallFailure
from evalkit.records.call import Message, Reply, Request, Usage
from evalkit.records.report_reader import load_report, report_from_mapping
from evalkit.run.execute import LiveSetup, Source, Workload, execute
from evalkit.run.journal import Journal, read_journal
from evalkit.run.recording import Provenance, Recording
from evalkit.run.run_plan import CallSettings
from evalkit.run.samples import seeded
from evalkit.run.suite import SuiteTask

PROJECT_ROOT = Path(__file__).resolve().parents[2]  # this repository: the examples project

REQUEST = Request(model="m", messages=(Message(role="user", content="hi"),), options={"temperature": 0.7, "seed": 5})


# -- call ids and seeds ------------------------------------------------------------------------


def test_sample_zero_keeps_the_plain_call_id_and_others_are_numbered() -> None:
    assert [str(CallId.task("a", i)) for i in range(3)] == ["task/a", "task/a#1", "task/a#2"]
    assert [(str(c.plain), c.sample) for c in map(CallId.parse, ("task/a", "task/a#12", "judge/m/a#3"))] == [
        ("task/a", 0), ("task/a", 12), ("judge/m/a", 3)]


def test_a_single_sample_sends_the_request_unchanged() -> None:
    assert seeded(REQUEST, 0, 1, "task/a") is REQUEST


def test_sample_i_is_sent_with_seed_plus_i() -> None:
    seeds = [seeded(REQUEST, i, 3, "task/a").options["seed"] for i in range(3)]
    assert seeds == [5, 6, 7]
    assert seeded(REQUEST, 2, 3, "task/a").options["temperature"] == 0.7  # the configured temperature stays


def test_sample_0_is_the_single_runs_call_and_without_a_seed_the_others_count_from_1() -> None:
    bare = REQUEST.model_copy(update={"options": {"temperature": 0.7}})
    assert seeded(bare, 0, 2, "task/a") is bare  # a recording made with N = 1 serves sample 0 of any N
    assert [seeded(bare, i, 3, "task/a").options["seed"] for i in (1, 2)] == [1, 2]


@pytest.mark.parametrize("seed", ["7", 1.5, True, None])
def test_a_seed_that_is_not_an_integer_is_refused(seed: Any) -> None:
    bad = REQUEST.model_copy(update={"options": {"seed": seed}})
    with pytest.raises(InputError, match=r"task/a: options.seed is .*must be an integer"):
        seeded(bad, 1, 2, "task/a")


# -- configuration -----------------------------------------------------------------------------




def test_repeats_default_to_one(hydra_conf: None) -> None:
    assert validate_config(composed(), {}).run.repeats == 1
    assert validate_config(composed("run.repeats=10"), {}).run.repeats == 10


@pytest.mark.parametrize("value", ["0", "-2", "1001"])
def test_repeats_outside_their_range_are_refused_in_one_line(hydra_conf: None, value: str) -> None:
    with pytest.raises(ConfigError, match=r"run\.repeats") as refused:
        validate_config(composed(f"run.repeats={value}"), {}, (f"run.repeats={value}",))
    assert "\n" not in str(refused.value)


def test_a_program_suite_refuses_repeats(hydra_conf: None) -> None:
    with pytest.raises(ConfigError, match=r"run\.repeats=3: suite quality_lab runs a candidate program once"):
        validate_config(composed("suite=quality_lab", "run.repeats=3"), {"suite": "quality_lab"})


# -- the call engine per sample (in process, the stand-in provider of tests/run/test_execute.py) ---------------


class SeedEcho:
    """Answers each request with its case and seed, and fails the calls named in `fail` (not retryable)."""

    def __init__(self, fail: tuple[tuple[str, int], ...] = ()) -> None:
        self.fail = set(fail)
        self.calls: list[tuple[str, int]] = []

    def complete(self, request: Request) -> Reply:
        call = (request.messages[-1].content, request.options.get("seed", -1))
        self.calls.append(call)
        if call in self.fail:
            raise CallFailure("refused", retryable=False)
        return Reply(text=f"{call[0]}@{call[1]}", stop_reason="stop", usage=Usage(input_tokens=1, output_tokens=1))


def sampled(provider: SeedEcho, repeats: int, *, mode: Mode = Mode.LIVE, recording: Recording | None = None,
            journal: Journal | None = None, resumed: dict[str, Any] | None = None) -> Any:
    live = LiveSetup(providers={"model": provider}, settings=RunSettings(out="unused", concurrency=1),
                     budget=Budget(BudgetConfig()), journal=journal, resumed=resumed or {})
    task = SuiteTask(lambda case, prompt, model: Request(model=model.name, options=model.options,
                                                         messages=(Message(role="user", content=case.id),)), None)
    return execute(CallSettings(mode, ENGINE_MODEL, repeats=repeats, version="test"),
                   Workload(task, [Case("a"), Case("b")], "p"),
                   Source(recording or Recording(key=ENGINE_KEY, provenance=Provenance(kind="recorded")), "rec.json",
                          live))


ENGINE_MODEL = ModelConfig(name="m", provider="openai", options={"temperature": 0.9, "seed": 40})
ENGINE_KEY = EvalKey(suite="s", dataset="d@1", dataset_sha="a", model="m", prompt_version="v1", prompt_sha="p")


def test_the_journal_and_resume_work_per_sample(tmp_path: Path) -> None:
    path = tmp_path / "rec.json.journal.jsonl"
    with Journal(path) as journal, pytest.raises(OutageError, match=r"task/a#2"):
        sampled(SeedEcho(fail=(("a", 42),)), 3, journal=journal)
    kept = read_journal(path)
    assert sorted(kept) == ["task/a", "task/a#1", "task/a#2"] and kept["task/a#2"].failure is not None
    provider = SeedEcho()
    execution = sampled(provider, 3, resumed=kept)
    assert provider.calls == [("a", 42), ("b", 40), ("b", 41), ("b", 42)]  # the failed sample and the rest
    assert execution.calls["task/a#1"].status == "resumed"
    assert execution.recording.provenance.samples == 3


def test_raising_n_with_record_missing_records_only_the_new_samples() -> None:
    first = sampled(SeedEcho(), 2)
    provider = SeedEcho()
    more = sampled(provider, 4, mode=Mode.RECORD_MISSING, recording=first.recording)
    assert provider.calls == [("a", 42), ("a", 43), ("b", 42), ("b", 43)]
    assert more.calls["task/b#1"].status == "replayed" and more.calls["task/b#1"].text == "b@41"
    assert more.recording.provenance.samples == 4
    replayed = sampled(SeedEcho(), 3, mode=Mode.REPLAY, recording=more.recording)  # fewer than recorded: fine
    assert {cid: r.text for cid, r in replayed.calls.items()} == {
        str(CallId.task(c, i)): f"{c}@{40 + i}" for c in "ab" for i in range(3)}


# -- end to end: record, replay, gate ----------------------------------------------------------

CASES = {"steady": 1.0, "coin": 0.5, "broken": 0.0, "often": 0.8}
SEED = 4  # the model option's options.seed: sample i is sent with SEED + i
TEMPERATURE = 0.8


class Flaky:
    """The flaky suite under tmp_path, served by a loopback server; `run(...)` is one `python -m evalkit`."""

    def __init__(self, root: Path, url: str) -> None:
        self.root = root
        self.conf = write_suite(root, name="flaky_e2e", cases=list(CASES), url=url, systems=["sys-a"],
                                temperature=TEMPERATURE, seed=SEED, judged=True)
        self.jobs = 0

    def run(self, mode: str, *overrides: str) -> tuple[subprocess.CompletedProcess[str], Path]:
        self.jobs += 1
        job = self.root / f"job{self.jobs}"
        command = [sys.executable, "-m", "evalkit", f"hydra.searchpath=[file://{self.conf}]", "suite=flaky_e2e",
                   f"mode={mode}", f"run.recordings={self.root / 'rec'}", "baseline=none", "run.progress=off",
                   f"hydra.run.dir={job}", *overrides]
        env = {k: v for k, v in os.environ.items() if k not in ("PYTEST_ADDOPTS", "HYDRA_FULL_ERROR")}
        done = subprocess.run(command, cwd=PROJECT_ROOT, env=env, capture_output=True, text=True, timeout=300,
                              check=False)
        return done, job / "report.json"


def expected_passes(case: str, runs: int) -> int:
    return sum(is_right(CASES[case], case, SEED + i, TEMPERATURE) for i in range(runs))


def counts(report: dict[str, Any]) -> dict[str, tuple[int, int]]:
    return {t["nodeid"].split("::")[-1]: (t["repeats"]["passed"], t["repeats"]["runs"]) for t in report["tests"]}


@pytest.mark.slow
def test_repeats_record_replay_and_gate_end_to_end(tmp_path: Path) -> None:
    with FakeOpenAI(flaky_model({"sys-a": CASES})) as server:
        flaky = Flaky(tmp_path, server.base_url)
        done, path = flaky.run("live", "run.repeats=3")
        assert done.returncode == 0, done.stderr
        live = json.loads(path.read_text(encoding="utf-8"))
        task_calls = [r.body for r in server.chat_requests if r.body["model"] != JUDGE_MODEL]
        judge_calls = [r.body for r in server.chat_requests if r.body["model"] == JUDGE_MODEL]
        sent = len(server.chat_requests)

        # every case sampled three times, seeds SEED, SEED+1, SEED+2 at the configured temperature; one judge
        # call per sample
        assert sorted((b["messages"][-1]["content"], b["seed"]) for b in task_calls) == sorted(
            (f"case {c}", SEED + i) for c in CASES for i in range(3))
        assert {b["temperature"] for b in task_calls} == {TEMPERATURE}
        assert len(judge_calls) == 3 * len(CASES)

        expected = {}
        for case in CASES:
            k = expected_passes(case, 3)
            expected |= {f"test_label[{case}]": (k, 3), f"test_judged_right[{case}]": (k, 3),
                         f"test_reply_is_json[{case}]": (3, 3)}
        assert counts(live) == expected
        assert 0 < expected["test_label[coin]"][0] < 3 or 0 < expected["test_label[often]"][0] < 3  # a flaky case
        for test in live["tests"]:  # the outcome is `passed` only when every sample passed
            k, n = test["repeats"]["passed"], test["repeats"]["runs"]
            assert (test["outcome"] == "passed") == (k == n)
            assert len(test["repeats"]["not_passed"]) == n - k
        assert live["provenance"]["repeats"] == 3
        assert live["execution"]["calls"] == {"recorded": 6 * len(CASES)}
        report = report_from_mapping(live, "live report")  # the gate's reader accepts the runner's counts
        assert {name.split("::")[-1]: (c.passed, c.runs) for name, c in report.repeats.items()} == expected
        cases = {c["id"]: c for c in live["cases"]}
        assert cases["steady"]["repeats"] == {"passed": 3, "runs": 3}
        assert cases["broken"]["repeats"] == {"passed": 0, "runs": 3}
        assert set(cases["coin"]["calls"]) == {"task/coin", "task/coin#1", "task/coin#2",
                                               "judge/label/coin", "judge/label/coin#1", "judge/label/coin#2"}

        recording_file, = (tmp_path / "rec" / "flaky_e2e").glob("sys-a-v1-flaky-e2e@1-*.json")
        recording = json.loads(recording_file.read_text())
        assert recording["provenance"]["samples"] == 3
        assert recording["calls"]["task/coin#2"]["request"]["options"]["seed"] == SEED + 2

        # replay: the same counts, no call to the server
        done, path = flaky.run("replay", "run.repeats=3")
        assert done.returncode == 0, done.stderr
        replayed = json.loads(path.read_text(encoding="utf-8"))
        assert counts(replayed) == expected
        assert len(server.chat_requests) == sent

        # a sample the recording lacks measured nothing: a refusal in one line naming the command that records it,
        # never a failing check, a report or a decision
        before = recording_file.read_bytes()
        done, path = flaky.run("replay", "run.repeats=4")
        assert done.returncode == 3 and not path.exists(), done.stdout + done.stderr
        assert len(done.stderr.splitlines()) == 1 and done.stdout == ""
        first = next(iter(CASES))
        assert f"task/{first}#3 is not recorded" in done.stderr
        assert "the recording holds 3 sample(s) of each call and this run asks for 4 (run.repeats)" in done.stderr
        command = done.stderr.split("`")[1]
        assert command.startswith("evalkit run ") and command.endswith(" run.repeats=4 mode=record-missing")
        assert "mode=replay" not in command and recording_file.read_bytes() == before

        # the gate reads both reports' counts: 3 samples a side is too few for any test to be significant
        decision_path = tmp_path / "decision.json"
        gate = subprocess.run([sys.executable, "-m", "evalkit.cli.main", "gate", str(tmp_path / "job1" / "report.json"),
                               str(tmp_path / "job2" / "report.json"), "--out", str(decision_path),
                               "--policy", str(flaky.conf / "policy" / "flaky.yaml")],
                              cwd=PROJECT_ROOT, capture_output=True, text=True, timeout=120, check=False)
        assert gate.returncode == 0, gate.stdout + gate.stderr
        decision = json.loads(decision_path.read_text(encoding="utf-8"))
        assert decision["decision"] == "review"
        assert decision["repeats"]["insufficient_data"] is not None
        assert decision["repeats"]["regressed"] == {}

        # critical tests and critical cases still demand every sample pass: the runner's outcome says whether
        # they all did
        baseline, candidate = (load_report(tmp_path / job / "report.json") for job in ("job1", "job2"))
        flaky_case = "coin" if expected["test_label[coin]"][0] < 3 else "often"
        for rule in ({"critical": ["test_label"]}, {"critical_cases": [flaky_case]}):
            strict = decide(Policy.model_validate({"name": "strict", **rule}), baseline, candidate)
            assert strict.decision == Verdict.BLOCK, rule
        assert decide(Policy.model_validate({"name": "steady", "critical_cases": ["steady"]}), baseline,
                      candidate).decision != Verdict.BLOCK

        # the command it named records only the fourth samples, and the replay then runs
        done, _ = flaky.run("record-missing", "run.repeats=4")
        assert done.returncode == 0, done.stderr
        fourth = [r.body for r in server.chat_requests[sent:] if r.body["model"] != JUDGE_MODEL]
        assert sorted(b["seed"] for b in fourth) == [SEED + 3] * len(CASES)
        assert f"recording: added {2 * len(CASES)} call(s) to" in done.stderr
        done, path = flaky.run("replay", "run.repeats=4")
        assert done.returncode == 0, done.stderr
        assert {runs for _, runs in counts(json.loads(path.read_text(encoding="utf-8"))).values()} == {4}


@pytest.mark.slow
def test_the_budget_counts_every_sample(tmp_path: Path) -> None:
    """Five calls allowed, eight task samples planned: five are sent, the other three task samples and every
    judge call after them are denied (a judge call of a denied sample is denied with it: it has no reply to judge)."""
    with FakeOpenAI(flaky_model({"sys-a": CASES})) as server:
        flaky = Flaky(tmp_path, server.base_url)
        done, path = flaky.run("live", "run.repeats=2", "budget.max_calls=5", "run.concurrency=1")
        sent = len(server.chat_requests)
    assert done.returncode == 0, done.stderr  # baseline=none: written, not gated
    report = json.loads(path.read_text(encoding="utf-8"))
    samples = 2 * len(CASES)
    assert sent == 5
    assert report["execution"]["calls"] == {"recorded": 5, "budget_denied": (samples - 5) + 5 + (samples - 5)}
    assert all(case["status"] == "unscored" for case in report["cases"])  # each case lost a task or judge call


REDUCED_CHECKS = """\
checks:
  - {name: label_all, field: label, equals: right}
  - {name: label_majority, field: label, equals: right, reduce: majority}
  - {name: label_two, field: label, equals: right, reduce: {at_least: 2}}
  - {name: label_share, field: label, equals: right, reduce: {mean: 0.6}}
"""
MARKED_TEST = """
import json

import pytest


@pytest.mark.reduce(at_least=4)
def test_label_four(case, task_reply):
    assert json.loads(task_reply)["label"] == "right"
"""


@pytest.mark.slow
def test_reducers_follow_a_direct_count_of_the_flaky_models_samples_and_the_gate_reads_the_counts(
        tmp_path: Path) -> None:
    runs = 5
    with FakeOpenAI(flaky_model({"sys-a": CASES})) as server:
        flaky = Flaky(tmp_path, server.base_url)
        checks = tmp_path / "flaky_e2e" / "checks.yaml"
        checks.write_text(REDUCED_CHECKS.replace("{at_least: 2}", "{at_least: 6}"), encoding="utf-8")
        refused, _ = flaky.run("live", f"run.repeats={runs}")  # a reducer that could never pass: before any call
        assert refused.returncode == 3 and not server.requests
        assert "check label_two: reduce at_least 6 asks for more passing samples than the run takes " \
               "(run.repeats=5)" in refused.stderr
        checks.write_text(REDUCED_CHECKS, encoding="utf-8")
        (tmp_path / "flaky_e2e" / "test_marked.py").write_text(MARKED_TEST, encoding="utf-8")
        done, path = flaky.run("live", f"run.repeats={runs}")
        assert done.returncode == 0, done.stderr
        # the replay, gated against the live run: the terminal names each test whose samples disagree, with k/N
        first = path
        gated, path = flaky.run("replay", f"run.repeats={runs}", f"baseline={first}")
    assert gated.returncode == 0, gated.stdout + gated.stderr
    rules = {"label_all": ("all", lambda k: k == runs), "label_majority": ("majority", lambda k: 2 * k > runs),
             "label_two": ("at_least 2", lambda k: k >= 2), "label_share": ("mean 0.6", lambda k: k / runs >= 0.6),
             "test_label_four": ("at_least 4", lambda k: k >= 4)}
    direct = {case: expected_passes(case, runs) for case in CASES}  # counted from the model's seeds, not evalkit
    assert any(0 < k < runs for k in direct.values())  # a flaky case, so the reducers differ
    for report_path in (first, path):
        report = json.loads(report_path.read_text(encoding="utf-8"))
        tests = {t["nodeid"].split("::")[-1]: t for t in report["tests"]}
        for name, (reduce, rule) in rules.items():
            for case, k in direct.items():
                test = tests[f"{name}[{case}]"]
                assert (test["repeats"]["passed"], test["repeats"]["runs"], test["repeats"]["reduce"]) == \
                    (k, runs, reduce)
                assert test["outcome"] == ("passed" if rule(k) else "failed"), (name, case, k)
        read = report_from_mapping(report, "report")  # the gate's reader: the counts kept, the reducer named
        assert {n: (c.passed, c.runs) for n, c in read.repeats.items() if "label_majority" in n} == {
            f"checks.yaml::label_majority[{case}]": (k, runs) for case, k in direct.items()}
    split = [case for case, k in direct.items() if 0 < k < runs]
    for case in split:
        k = direct[case]
        # gated: the decision lists both sides' k/N, once (the run's rows leave out what it lists)
        line = f"checks.yaml::label_majority[{case}]: candidate {k}/{runs}, baseline {k}/{runs}"
        assert line in gated.stdout and f"label_majority[{case}] {k}/{runs} (majority" not in gated.stdout
    assert "samples disagree (k/N)" not in gated.stdout
    decision = json.loads((path.parent / "decision.json").read_text(encoding="utf-8"))
    assert decision["repeats"]["regressed"] == {}  # the same samples on both sides: no drop to find


# -- the plugin's sample loop, black-box with pytester ----------------------------------------

SAMPLED_RUN = {
    "key": {"suite": "s", "dataset": "d@1", "dataset_sha": "aaa", "model": "m", "prompt_version": "v1",
            "prompt_sha": "p", "judge_model": None, "components": {}},
    "provenance": {"recording_provenance": "authored"},
    "cases": [{"id": "a", "fields": {}}, {"id": "b", "fields": {}}],
    "calls": {cid: {"status": "replayed", "text": text, "reason": None, "stop_reason": "stop"}
              for cid, text in {"task/a": "right", "task/a#1": "wrong", "task/a#2": "right",
                                "task/b": "right", "task/b#1": "right", "task/b#2": "skip"}.items()},
    "repeats": 3,
}
SAMPLED_TESTS = """
import pytest

SETUPS = []

@pytest.fixture(scope="module")
def shared():
    SETUPS.append(1)
    return len(SETUPS)

def test_right(case, task_reply, record_metric, shared):
    record_metric("length", float(len(task_reply)))
    if task_reply == "skip":
        pytest.skip("not applicable to this reply")
    assert task_reply == "right"

def test_once(eval_key):
    assert eval_key["model"] == "m"
"""


def test_every_check_over_a_case_runs_once_per_sample(pytester: pytest.Pytester) -> None:
    run = pytester.path / "run.json"
    run.write_text(json.dumps(SAMPLED_RUN))
    pytester.makepyfile(test_suite=SAMPLED_TESTS)
    out = pytester.path / "report.json"
    result = pytester.runpytest("-p", "no:cacheprovider", f"--evalkit-run={run}", "--json-report",
                                f"--json-report-file={out}")
    result.assert_outcomes(passed=1, failed=1, skipped=1)  # one entry per test, not per sample
    data = json.loads(out.read_text())
    tests = {t["nodeid"].split("::")[-1]: t for t in data["tests"]}
    assert tests["test_right[a]"]["outcome"] == "failed"  # sample 1 failed: the entry shown is that sample's
    assert tests["test_right[a]"]["repeats"] == {"passed": 2, "runs": 3, "not_passed": [1], "reduce": "all"}
    assert "'wrong'" in tests["test_right[a]"]["call"]["longrepr"]
    assert tests["test_right[b]"]["outcome"] == "skipped"  # 2 passed, 1 skipped: not passed, not failed
    assert tests["test_right[b]"]["repeats"] == {"passed": 2, "runs": 3, "not_passed": [2], "reduce": "all"}
    assert "repeats" not in tests["test_once"]  # a check over no case runs once
    assert data["summary"]["total"] == 3
    cases = {c["id"]: c for c in data["cases"]}
    assert cases["a"]["repeats"] == {"passed": 2, "runs": 3} and cases["a"]["passed"] is False
    assert cases["a"]["metrics"] == {"length": (5 + 5 + 5) / 3}
    assert cases["b"]["metrics"] == {"length": (5 + 5 + 4) / 3}  # the mean over the samples that measured it
    assert cases["a"]["output"] == "right"  # sample 0's reply
    report_from_mapping(data, "sampled report")  # the gate reads what the plugin wrote


def test_repeats_on_several_workers_report_as_one_process(tmp_path: Path) -> None:
    """Each shard's per-sample outcomes and metrics travel in its partial report: the merged report is the one a
    single process writes, repeats, sample means and case counts included."""
    from evalkit.run.runner import run_checks

    suite = tmp_path / "suite"
    suite.mkdir()
    # two modules, so the shards split a case's checks between them; both record `length`, the later one wins
    (suite / "test_suite.py").write_text(SAMPLED_TESTS)
    (suite / "test_more.py").write_text(
        "def test_length(case, task_reply, record_metric):\n    record_metric('length', 2 * len(task_reply))\n"
        "    assert task_reply != 'wrong'\n")
    run = tmp_path / "run-input.json"
    run.write_text(json.dumps(SAMPLED_RUN))
    reports = {}
    for workers in (1, 2):
        out = tmp_path / f"out-{workers}"
        out.mkdir()
        reports[workers] = run_checks(suite, run, out, workers=workers)

    def stable(report: dict[str, Any]) -> str:
        kept = {k: v for k, v in report.items() if k not in ("created", "duration")}
        kept["tests"] = [{k: v for k, v in t.items() if k in ("nodeid", "outcome", "repeats", "case")}
                         for t in report["tests"]]
        return json.dumps(kept, sort_keys=True)

    one, two = reports[1], reports[2]
    assert stable(two) == stable(one)
    cases = {c["id"]: c for c in two["cases"]}
    # test_suite.py is collected after test_more.py: its `length` is the later one, in one process and in two
    assert cases["a"]["metrics"] == {"length": (5 + 5 + 5) / 3}
    assert cases["a"]["repeats"] == {"passed": 2, "runs": 3}
    assert {t["nodeid"].split("::")[-1]: t["repeats"]["passed"] for t in two["tests"] if "repeats" in t} == {
        "test_right[a]": 2, "test_right[b]": 2, "test_length[a]": 2, "test_length[b]": 3}
    assert RunSettings(out="x", repeats=3, workers=2).workers == 2  # no longer refused
