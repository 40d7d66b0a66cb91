"""`run.repeats=auto`: sequential repeats in the runner and the gate (evalkit.run.rounds, evalkit.gate.sequential_rule).

The end-to-end test runs `python -m evalkit` against a loopback OpenAI-compatible server whose replies are decided
by the seed each request carries (tests/fakes/flaky.py), so the samples every case should take are computed here,
round by round, from the known replies and the sequential test's verdicts, never hard-coded.
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

from evalkit.core.config import BudgetConfig, Mode, ModelConfig, RunSettings, validate_config
from evalkit.core.dataset import Case
from evalkit.core.errors import ConfigError, InputError, OutageError
from evalkit.core.key import EvalKey
from evalkit.gate.detectable import sequential_test_drop
from evalkit.gate.sequential import Counts2, Verdict, settle
from evalkit.gate.sequential_rule import compare_sequential, decided_block, open_cases, pool, unpaired, verdicts
from evalkit.live.budget import Budget
from evalkit.live.providers.base import CallFailure
from evalkit.records.call import Message, Reply, Request, Usage
from evalkit.records.report_reader import Counts, report_from_mapping
from evalkit.run.execute import LiveSetup, Source, Workload, execute
from evalkit.run.journal import Journal, read_journal
from evalkit.run.recording import Provenance, Recording
from evalkit.run.rounds import sample_in_rounds
from evalkit.run.run_plan import CallSettings
from evalkit.run.suite import SuiteTask

PROJECT_ROOT = Path(__file__).resolve().parents[2]

# -- configuration -----------------------------------------------------------------------------




def test_auto_with_max_repeats_is_sequential(hydra_conf: None) -> None:
    run = validate_config(composed("run.repeats=auto", "run.max_repeats=20"), {}).run
    assert run.sequential and run.max_repeats == 20 and run.repeat_batch == 2 and run.repeat_delta == 0.6
    assert run.pool_samples == 40 and run.most_samples == 40  # a run without a baseline: twice max_repeats
    small = validate_config(composed("run.repeats=auto", "run.max_repeats=20", "run.pool_repeats=12"), {}).run
    assert small.pool_samples == 12 and small.most_samples == 20
    capped = validate_config(composed("run.repeats=auto", "run.max_repeats=900"), {}).run
    assert capped.pool_samples == 1000
    fixed = validate_config(composed("run.repeats=7"), {}).run
    assert not fixed.sequential and fixed.most_samples == 7


@pytest.mark.parametrize(("overrides", "message"), [
    (("run.repeats=auto",), r"^run\.repeats=auto needs run\.max_repeats=N, the most samples of a case"),
    (("run.repeats=auto", "run.max_repeats=1"), r"^run\.max_repeats=1 leaves run\.repeats=auto nothing to decide"),
    (("run.repeats=auto", "run.max_repeats=0"), r"run\.max_repeats.*greater than or equal to 1"),
    (("run.max_repeats=5",), r"^run\.max_repeats=5 is for run\.repeats=auto \(sequential\); with run\.repeats=1 "),
    (("run.repeats=auto", "run.max_repeats=4", "run.repeat_batch=5"),
     r"^run\.repeat_batch=5 is more than run\.max_repeats=4"),
    (("run.pool_repeats=40",), r"^run\.pool_repeats=40 is for run\.repeats=auto \(sequential\); with run\.repeats=1 "),
    (("run.repeats=sometimes",), r"run\.repeats is a whole number of samples from 1 to 1000, or auto"),
    (("run.repeats=auto", "run.max_repeats=9", "run.repeat_delta=1.2"), r"run\.repeat_delta.*less than 1"),
])
def test_sequential_settings_that_do_not_fit_are_refused_in_one_line(hydra_conf: None, overrides: tuple[str, ...],
                                                                     message: str) -> None:
    with pytest.raises(ConfigError, match=message) as refused:
        validate_config(composed(*overrides), {}, overrides)
    assert "\n" not in str(refused.value)


def test_a_program_suite_refuses_auto(hydra_conf: None) -> None:
    with pytest.raises(ConfigError, match=r"run\.repeats=auto: suite quality_lab runs a candidate program once"):
        validate_config(composed("suite=quality_lab", "run.repeats=auto", "run.max_repeats=5"),
                        {"suite": "quality_lab"})


# -- the rule, on hand-built counts ------------------------------------------------------------


def counts(passes: list[bool], case: str) -> Counts:
    return Counts(sum(passes), len(passes), case, not_passed=tuple(i for i, p in enumerate(passes) if not p))


def test_the_sequential_rule_blocks_a_broken_test_and_pairs_samples_by_round() -> None:
    pool_ = {f"t[{c}]": counts([True] * 10, c) for c in "abcd"}
    same = {f"t[{c}]": counts([True] * 4, c) for c in "abcd"}
    outcome = compare_sequential(pool_, same, alpha=0.05, max_repeats=10)
    assert outcome.method == "sequential" and outcome.regressed == {} and not outcome.suite_drop
    assert outcome.suite_p == 1.0  # every pair equal: no bettor won anything
    broken = same | {"t[a]": counts([False] * 10, "a")}
    outcome = compare_sequential(pool_, broken, alpha=0.05, max_repeats=10)
    assert list(outcome.regressed) == ["t[a]"] and outcome.regressed["t[a]"] <= 0.025 / 4
    # too small a pool for any outcome to count: said, with what would
    tiny = compare_sequential({"t[a]": counts([True], "a")}, {"t[a]": counts([False] * 2, "a")}, alpha=0.05,
                              max_repeats=2)
    assert tiny.insufficient_data is not None and "record a baseline with more samples" in tiny.insufficient_data


def test_a_sequential_decision_lists_improved_tests_and_states_the_rounds_figures() -> None:
    pool_ = {f"t[{c}]": counts([True] * 40, c) for c in "abcd"} | {"t[e]": counts([False] * 40, "e")}
    candidate = {f"t[{c}]": counts([True] * 2, c) for c in "abcd"} | {"t[e]": counts([True] * 20, "e")}
    outcome = compare_sequential(pool_, candidate, alpha=0.05, max_repeats=20)
    assert outcome.regressed == {} and list(outcome.improved) == ["t[e]"]  # rose from 0/40 to 20/20
    flat = compare_sequential(pool_, {f"t[{c}]": counts([True] * 2, c) for c in "abcde"}, alpha=0.05,
                              max_repeats=20)
    assert flat.improved == {}


def test_the_suite_guard_needs_each_sides_failed_samples() -> None:
    unlisted = {"t[a]": Counts(3, 4, "a")}  # an older report: k of n without which samples failed
    outcome = compare_sequential({"t[a]": counts([True] * 12, "a")}, unlisted, alpha=0.05, max_repeats=12)
    assert outcome.suite_p is None and outcome.insufficient_data == (
        "a report does not list which samples failed (repeats.not_passed), so no sample can be paired")


def test_the_rounds_choose_cases_by_the_pool_samples_the_suite_guard_never_pairs() -> None:
    pool_ = {"t[a]": counts([False, True, True, False, True, True], "a"), "t[b]": counts([True] * 3, "b"),
             "t[c]": Counts(2, 6, "c")}  # c does not list its failed samples
    found = unpaired(pool_, 2)
    assert found["t[a]"] == Counts(3, 4, "a", not_passed=(1,))  # samples 2..5, renumbered from 0
    assert found["t[b]"] == Counts(1, 1, "b")
    assert found["t[c]"] == pool_["t[c]"] and unpaired(pool_, 6) == pool_  # nothing apart: the whole pool


def test_verdicts_and_open_cases_follow_the_sequential_test() -> None:
    pool_ = {"t[a]": counts([True] * 8, "a"), "t[b]": counts([True] * 8, "b")}
    candidate = {"t[a]": counts([True] * 2, "a"), "t[b]": counts([True] * 8, "b"), "t[new]": counts([True], "n")}
    found = verdicts(pool_, candidate, alpha=0.05, delta=0.6, futility=0.2)
    assert found == {"t[a]": Verdict.OPEN, "t[b]": Verdict.NO_WORSE, "t[new]": Verdict.NEW}
    assert open_cases(candidate, found) == {"a"}


def test_a_report_of_single_runs_is_a_pool_of_one_sample_per_test() -> None:
    report = report_from_mapping({"eval": {}, "tests": [{"nodeid": "t[a]", "outcome": "passed"},
                                                         {"nodeid": "t[b]", "outcome": "failed"},
                                                         {"nodeid": "t[c]", "outcome": "skipped"}]}, "r")
    assert pool(report) == {"t[a]": Counts(1, 1), "t[b]": Counts(0, 1, not_passed=(0,))}


def test_a_not_passed_list_that_contradicts_the_counts_is_refused() -> None:
    test = {"nodeid": "t[a]", "outcome": "failed", "repeats": {"passed": 2, "runs": 4, "not_passed": [1, 1]}}
    with pytest.raises(InputError, match=r"'repeats\.not_passed' \(1, 1\) must name the 2 distinct samples"):
        report_from_mapping({"eval": {}, "tests": [test]}, "r")


# -- end to end: the rounds through the runner, the gate, a replay ---------------------------------

CASES = {"steady": 1.0, "coin": 0.5, "broken": 0.0, "often": 0.8}
BASE_SEED, CAND_SEED, TEMPERATURE = 4, 100, 0.8
MOST, BATCH = 8, 2
POOL = 2 * MOST  # run.pool_repeats' default: what a run without a baseline takes
CHECKS = ("test_label", "test_judged_right", "test_reply_is_json")


def outcomes(system: dict[str, float], case: str, seed: int, samples: int) -> dict[str, list[bool]]:
    """Each check's outcome per sample, from the model's draws: the label and the judge's verdict follow the
    reply, the JSON check always passes."""
    right = [is_right(system[case], case, seed + i, TEMPERATURE) for i in range(samples)]
    return {"test_label": right, "test_judged_right": right, "test_reply_is_json": [True] * samples}


def as_counts(by_case: dict[str, dict[str, list[bool]]]) -> dict[str, Counts]:
    return {f"test_flaky.py::{check}[{case}]": counts(passes, case)
            for case, checks in by_case.items() for check, passes in checks.items()}


def expected_samples(system: dict[str, float], seed: int) -> dict[str, int]:
    """The samples each case should take: the rounds replayed here against the baseline's known samples (a case
    stops when its tests are settled; every case, once the samples taken already block)."""
    base = {case: outcomes(CASES, case, BASE_SEED, POOL) for case in CASES}
    chosen_by = {case: {check: passes[MOST:] for check, passes in checks.items()}  # the samples the guard never
                 for case, checks in base.items()}                                # pairs (unpaired)
    level = 0.05 / 2 / (len(CASES) * len(CHECKS))
    samples = dict.fromkeys(CASES, BATCH)
    while True:
        still = []
        for case, taken in samples.items():
            now = outcomes(system, case, seed, taken)
            verdicts = [settle(Counts2(sum(base[case][check]), POOL, sum(now[check]), taken), level=level,
                               futility=0.3, delta=0.6,
                               choosing=Counts2(sum(chosen_by[case][check]), POOL - MOST, sum(now[check]), taken))
                        for check in CHECKS]
            if Verdict.OPEN in verdicts and taken < MOST:
                still.append(case)
        taken_now = {case: outcomes(system, case, seed, n) for case, n in samples.items()}
        if not still or decided_block(as_counts(base), as_counts(taken_now), alpha=0.05):
            return samples
        for case in still:
            samples[case] = min(MOST, samples[case] + BATCH)


class Suite:
    def __init__(self, root: Path, url: str) -> None:
        self.root = root
        self.conf = write_suite(root, name="flaky_seq", cases=list(CASES), url=url, systems=["sys-a", "sys-b"],
                                temperature=TEMPERATURE, seed=BASE_SEED, judged=True)

    def run(self, job: str, *overrides: str, auto: bool = True) -> tuple[subprocess.CompletedProcess[str], Path]:
        sequential = ["run.repeats=auto", f"run.max_repeats={MOST}", f"run.repeat_batch={BATCH}"] if auto else []
        command = [sys.executable, "-m", "evalkit", f"hydra.searchpath=[file://{self.conf}]", "suite=flaky_seq",
                   f"run.recordings={self.root / 'rec'}", "run.progress=off", f"hydra.run.dir={self.root / job}",
                   *sequential, *overrides]
        env = {k: v for k, v in os.environ.items() if k not in ("PYTEST_ADDOPTS", "HYDRA_FULL_ERROR")}
        done = subprocess.run(command, cwd=PROJECT_ROOT, env=env, capture_output=True, text=True, timeout=300,
                              check=False)
        return done, self.root / job / "report.json"


def task_seeds(server: FakeOpenAI, since: int) -> dict[str, list[int]]:
    out: dict[str, list[int]] = {}
    for request in server.chat_requests[since:]:
        if request.body["model"] != JUDGE_MODEL:
            out.setdefault(request.body["messages"][-1]["content"].removeprefix("case "), []).append(
                request.body["seed"])
    return {case: sorted(seeds) for case, seeds in sorted(out.items())}


def decision_of(job: Path) -> dict[str, Any]:
    """decision.json without the candidate report's own identity (its path and digest differ between runs)."""
    data: dict[str, Any] = json.loads((job / "decision.json").read_text(encoding="utf-8"))
    data["evidence"].pop("candidate")
    return data


@pytest.mark.slow
def test_sequential_repeats_record_stop_replay_and_gate_end_to_end(tmp_path: Path) -> None:
    broken = CASES | {"steady": 0.0}
    with FakeOpenAI(flaky_model({"sys-a": CASES, "sys-b": broken})) as server:
        suite = Suite(tmp_path, server.base_url)
        # no baseline: every case takes pool_repeats (twice max_repeats), the pool the runs below compare against
        done, base_path = suite.run("base", "mode=live", "baseline=none")
        assert done.returncode == 0, done.stderr
        base = json.loads(base_path.read_text(encoding="utf-8"))
        assert base["sequential"]["baseline"] is None and base["sequential"]["samples"] == dict.fromkeys(CASES, POOL)
        assert task_seeds(server, 0) == {c: list(range(BASE_SEED, BASE_SEED + POOL)) for c in sorted(CASES)}
        assert "sequential repeats: 64 samples over 4 cases (16 each, 8 round(s) of 2); no baseline" in done.stdout

        # an unchanged system with other seeds: each case stops as the rounds computed here say
        sent = len(server.chat_requests)
        done, cand_path = suite.run("cand", "mode=live", f"baseline={base_path}",
                                    f"model.options.seed={CAND_SEED}")
        assert done.returncode == 0, done.stdout + done.stderr
        expected = expected_samples(CASES, CAND_SEED)
        assert any(n < MOST for n in expected.values())  # the point: fewer samples than max_repeats
        assert task_seeds(server, sent) == {c: list(range(CAND_SEED, CAND_SEED + expected[c]))
                                            for c in sorted(CASES)}
        judge_calls = [r for r in server.chat_requests[sent:] if r.body["model"] == JUDGE_MODEL]
        assert len(judge_calls) == sum(expected.values())  # each sample judged once, over all rounds
        cand = json.loads(cand_path.read_text(encoding="utf-8"))
        block = cand["sequential"]
        assert block["samples"] == expected and block["baseline"] == str(base_path)
        assert (block["max_repeats"], block["batch"], block["delta"], block["alpha"]) == (MOST, BATCH, 0.6, 0.05)
        assert block["rounds"] == max(expected.values()) // BATCH
        for test in cand["tests"]:
            case = test["case"]
            assert test["repeats"]["runs"] == expected[case]
            assert test["repeats"]["passed"] == sum(outcomes(CASES, case, CAND_SEED, expected[case])[
                test["nodeid"].split("::")[-1].split("[")[0]])
        cases = {c["id"]: c for c in cand["cases"]}
        assert all(len(cases[c]["outputs"]) == expected[c] for c in CASES)  # every sample's reply kept
        assert cases["coin"]["outputs"][0] == cases["coin"]["output"]
        recorded = [json.loads(p.read_text(encoding="utf-8"))["provenance"]
                    for p in (tmp_path / "rec" / "flaky_seq").glob("sys-a-*.json")]
        assert sorted(json.dumps(r["rounds"], sort_keys=True) for r in recorded) == sorted(  # what a replay takes
            json.dumps(rounds, sort_keys=True) for rounds in (dict.fromkeys(CASES, POOL), expected))
        decision = json.loads((tmp_path / "cand" / "decision.json").read_text(encoding="utf-8"))
        assert decision["decision"] != "block" and decision["repeats"]["method"] == "sequential"
        tests = decision["detectable"]["tests"]  # what the rounds could have caught, up to max_repeats samples
        assert (tests["method"], tests["most"]) == ("sequential", MOST)
        assert tests["drops"]["test_flaky.py::test_label[steady]"] == sequential_test_drop(
            POOL, POOL, MOST, BATCH, level=tests["level"], power=0.8, delta=0.6, futility=0.3,
            choosing=(POOL - MOST, POOL - MOST))  # steady passed every pool sample
        assert f"(the sequential test in rounds of up to {MOST} samples, at " in done.stdout
        markdown = (tmp_path / "cand" / "decision.md").read_text(encoding="utf-8")
        assert "**Sampled in rounds:** sequential repeats: " in markdown  # decided by the sequential rule
        page = (tmp_path / "cand" / "report.html").read_text(encoding="utf-8")
        assert '<p class="detectable">sequential repeats: ' in page

        # `evalkit gate` on the two reports, away from the run, decides as the run's own gate did
        gated = tmp_path / "gated"
        gated.mkdir()
        alone = subprocess.run([sys.executable, "-m", "evalkit.cli.main", "gate", str(base_path), str(cand_path), "--out",
                                str(gated / "decision.json"), "--policy", str(suite.conf / "policy" / "flaky.yaml")], cwd=PROJECT_ROOT, capture_output=True, text=True,
                               timeout=120, check=False)
        assert alone.returncode == done.returncode, alone.stdout + alone.stderr
        again = json.loads((gated / "decision.json").read_text(encoding="utf-8"))
        assert again["repeats"] == decision["repeats"] and again["detectable"] == decision["detectable"]

        # blessing it says that it makes a small pool (each case stopped as soon as it was settled)
        blessed = subprocess.run([sys.executable, "-m", "evalkit.cli.main", "bless", str(cand_path), "--to",
                                  str(tmp_path / "blessed.json"), "--dry-run"], cwd=PROJECT_ROOT,
                                 capture_output=True, text=True, timeout=120, check=False)
        assert blessed.returncode == 0, blessed.stderr
        low, high = min(expected.values()), max(expected.values())
        assert (f"note: this run was sampled in rounds ({low} to {high} samples per case), so as a baseline it is "
                "a small pool") in blessed.stdout

        # the replay takes exactly those samples, calls nothing, and decides byte for byte as the live run did
        # (its checks on two processes: each shard runs each case's own number of samples)
        sent = len(server.chat_requests)
        done, replay_path = suite.run("replay", "mode=replay", f"baseline={base_path}",
                                      f"model.options.seed={CAND_SEED}", "run.workers=2")
        assert done.returncode == 0, done.stdout + done.stderr
        assert len(server.chat_requests) == sent
        replayed = json.loads(replay_path.read_text(encoding="utf-8"))
        assert replayed["sequential"] == block
        assert [(t["nodeid"], t["repeats"]) for t in replayed["tests"]] == [(t["nodeid"], t["repeats"])
                                                                           for t in cand["tests"]]
        assert decision_of(tmp_path / "replay") == decision_of(tmp_path / "cand")
        assert json.dumps(decision_of(tmp_path / "replay")) == json.dumps(decision_of(tmp_path / "cand"))

        # record-missing after a fixed run of 2 samples: the rounds record only the samples beyond them
        done, _ = suite.run("fixed", "mode=live", "baseline=none", "run.repeats=2", "model.options.seed=300",
                            auto=False)
        assert done.returncode == 0, done.stderr
        sent = len(server.chat_requests)
        done, _ = suite.run("more", "mode=record-missing", f"baseline={base_path}", "model.options.seed=300")
        assert done.returncode == 0, done.stdout + done.stderr
        wanted = expected_samples(CASES, 300)
        assert task_seeds(server, sent) == {c: list(range(302, 300 + wanted[c])) for c in sorted(CASES)
                                            if wanted[c] > 2}

        # a broken case: sampled until its drop is shown, and the gate blocks it by the sequential test
        done, broken_path = suite.run("broken", "mode=live", f"baseline={base_path}", "model=sys-b")
        assert done.returncode == 1, done.stdout + done.stderr
        gated = json.loads((tmp_path / "broken" / "decision.json").read_text(encoding="utf-8"))
        assert gated["decision"] == "block"
        assert set(gated["regressed"]) == {"test_flaky.py::test_label[steady]",
                                           "test_flaky.py::test_judged_right[steady]"}
        assert "sequential (always-valid) p=" in done.stdout
        report = json.loads(broken_path.read_text(encoding="utf-8"))
        assert report["sequential"]["samples"] == expected_samples(broken, BASE_SEED)
        assert report["sequential"]["verdicts"]["test_flaky.py::test_label[steady]"] == "regressed"
        html = (tmp_path / "broken" / "report.html").read_text(encoding="utf-8")
        steady = report["sequential"]["samples"]["steady"]
        assert f"{steady - 1} more samples (sample 0 above)" in html and f"sample {steady - 1}</h6>" in html


# -- the rounds in process: the journal and resume work round by round -----------------------------


class SeedEcho:
    """Answers each request with its seed; `right(case, seed)` says whether that reply passes; fails the calls in
    `fail` (not retryable)."""

    def __init__(self, fail: tuple[tuple[str, int], ...] = ()) -> None:
        self.fail = set(fail)
        self.calls: list[tuple[str, int]] = []

    def complete(self, request: Request) -> Reply:
        call = (request.messages[-1].content, int(request.options["seed"]))
        self.calls.append(call)
        if call in self.fail:
            raise CallFailure("refused", retryable=False)
        return Reply(text=str(call[1]), stop_reason="stop", usage=Usage(input_tokens=1, output_tokens=1))


ENGINE_MODEL = ModelConfig(name="m", provider="openai", options={"temperature": 0.9, "seed": 0})
ENGINE_KEY = EvalKey(suite="s", dataset="d@1", dataset_sha="a", model="m", prompt_version="v1", prompt_sha="p")


def in_rounds(provider: SeedEcho, journal: Journal | None = None, resumed: dict[str, Any] | None = None) -> Any:
    """Case `steady` always passes, case `broke` never; the pool: 8 passing samples of each."""
    live = LiveSetup(providers={"model": provider}, settings=RunSettings(out="unused", concurrency=1),
                     budget=Budget(BudgetConfig()), journal=journal, resumed=resumed or {})
    task = SuiteTask(lambda case, prompt, model: Request(model=model.name, options=model.options,
                                                         messages=(Message(role="user", content=case.id),)), None)
    recording = Recording(key=ENGINE_KEY, provenance=Provenance(kind="recorded"))
    cases = [Case("steady"), Case("broke")]

    def obtain(samples: Any, prior: Any) -> Any:
        return execute(CallSettings(Mode.LIVE, ENGINE_MODEL, repeats=MOST, version="test"),
                       Workload(task, cases, "p"), Source(recording, "rec.json", live), samples=samples, prior=prior)

    def check(execution: Any, samples: Any) -> dict[str, Counts]:
        return {f"t[{case}]": counts([case == "steady"] * samples[case], case) for case in samples}

    settings = RunSettings(out="unused", repeats="auto", max_repeats=MOST, repeat_batch=BATCH)
    base = {f"t[{case}]": counts([True] * MOST, case) for case in ("steady", "broke")}
    return sample_in_rounds(obtain, check, cases=["steady", "broke"], settings=settings, alpha=0.05, pool=base,
                            recorded=None, recording=recording, replay=False)


def test_an_interrupted_run_in_rounds_resumes_from_its_journal(tmp_path: Path) -> None:
    done = in_rounds(SeedEcho())
    # round 2: steady settles no worse, broke regresses (its 4 failures against 8 passes), and the run stops
    assert done.samples == {"steady": 4, "broke": 4} and done.rounds == 2
    assert done.recording.provenance.rounds == done.samples
    path = tmp_path / "rec.json.journal.jsonl"
    with Journal(path) as journal, pytest.raises(OutageError, match=r"task/broke#2"):
        in_rounds(SeedEcho(fail=(("broke", 2),)), journal=journal)  # the first call of broke's second round
    kept = read_journal(path)
    assert {cid for cid, entry in kept.items() if entry.failure is None} == {
        "task/steady", "task/steady#1", "task/steady#2", "task/steady#3", "task/broke", "task/broke#1"}
    provider = SeedEcho()
    again = in_rounds(provider, resumed=kept)
    assert provider.calls == [("broke", 2), ("broke", 3)]  # the failed call and the rest, nothing twice
    assert again.samples == done.samples and again.calls["task/steady#3"].status == "resumed"
