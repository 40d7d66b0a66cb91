"""Crash safety, locking and secrets of live runs, through real `python -m evalkit` subprocesses."""

from __future__ import annotations

import fcntl
import json
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from fakes import FakeOpenAI
from fakes.flaky import flaky_model, write_suite
from helpers.live import TOTAL_TESTS, Evalkit, FakeOllama, read_json, replies, task_calls

PROJECT_ROOT = Path(__file__).resolve().parents[2]  # this repository: the examples project


pytestmark = pytest.mark.slow


def journal_of(evalkit: Evalkit) -> Path:
    return evalkit.recording.with_name(evalkit.recording.name + ".journal.jsonl")


def test_kill_9_loses_at_most_the_calls_in_flight_and_resume_continues(evalkit: Evalkit) -> None:
    with FakeOllama(replies(), latency_ms=150) as server:
        evalkit.judge_at(server.url)
        command, env, _ = evalkit.command("live", "run.concurrency=2", url=server.url)
        process = subprocess.Popen(command, cwd=PROJECT_ROOT, env=env, stdout=subprocess.DEVNULL,
                                   stderr=subprocess.DEVNULL)
        journal = journal_of(evalkit)
        deadline = time.monotonic() + 60
        while not (journal.exists() and len(journal.read_text().splitlines()) >= 4):
            assert time.monotonic() < deadline and process.poll() is None, "the live run never journaled 4 calls"
            time.sleep(0.02)
        process.send_signal(signal.SIGKILL)
        process.wait()
        sent_before = len(task_calls(server))
        url = server.url

    lines = journal.read_text().splitlines()
    kept = [json.loads(line)["call_id"] for line in lines if line.endswith("}")]
    assert len(kept) >= 4 and sent_before - len(kept) <= 2  # at most the 2 calls in flight are lost
    assert not evalkit.recording.exists()  # nothing half-written: the recording appears only when complete

    refused = evalkit("live", url=url)  # a fresh run must not silently drop the journal
    assert refused.code == 3 and "+run.resume=true" in refused.done.stderr
    assert refused.done.stderr.count("\n") == 1

    with FakeOllama(replies()) as server:
        evalkit.judge_at(server.url)
        resumed = evalkit("live", "+run.resume=true", url=server.url)
        again = task_calls(server)
    assert resumed.code == 0, resumed.explain()
    assert len(again) == 12 - len([c for c in kept if c.startswith("task/")])
    assert f"{TOTAL_TESTS} of {TOTAL_TESTS} tests passed" in resumed.done.stdout
    assert resumed.report["execution"]["calls"]["resumed"] == len(kept)
    recording = read_json(evalkit.recording)
    assert len(recording["calls"]) == 15 and recording["provenance"]["kind"] == "recorded"
    assert not journal.exists()  # compacted into the recording


def test_a_second_writer_waits_for_the_lock(evalkit: Evalkit) -> None:
    evalkit.recording.parent.mkdir(parents=True)
    lock = evalkit.recording.with_name(evalkit.recording.name + ".lock")
    with FakeOllama(replies()) as server, lock.open("a") as held:
        evalkit.judge_at(server.url)
        fcntl.flock(held.fileno(), fcntl.LOCK_EX)  # another job is writing this recording
        timed_out = evalkit("live", "run.lock_timeout_s=0.5", url=server.url)
        assert timed_out.code == 3 and "another run is writing this recording" in timed_out.done.stderr
        assert server.requests == []

        command, env, _ = evalkit.command("live", url=server.url)
        waiting = subprocess.Popen(command, cwd=PROJECT_ROOT, env=env, stdout=subprocess.PIPE,
                                   stderr=subprocess.PIPE, text=True)
        assert waiting.stderr is not None
        # wait until the second run says it waits (a fixed sleep is too short on a loaded machine)
        said = waiting.stderr.readline()
        assert "waiting for another run that is writing" in said, said
        assert waiting.poll() is None and server.requests == []  # still waiting, nothing sent
        fcntl.flock(held.fileno(), fcntl.LOCK_UN)
        out, err = waiting.communicate(timeout=120)
    assert waiting.returncode == 0, out + said + err
    assert len(read_json(evalkit.recording)["calls"]) == 15


FAKE_KEY = "evalkit-test-secret-0123456789abcdef"


def test_api_keys_never_reach_any_written_file(evalkit: Evalkit, monkeypatch: pytest.MonkeyPatch) -> None:
    # The model echoes the key in one reply (as a leaky model or proxy might).
    leaks = replies({"token-leak": f'{{"label": "bug", "priority": "p0", "summary": "key {FAKE_KEY}"}}'})
    with FakeOllama(leaks) as server:
        evalkit.judge_at(server.url)
        command, env, job = evalkit.command("live", "model.api_key_env=EVALKIT_TEST_KEY", "run.retries=0",
                                            url=server.url)
        env["EVALKIT_TEST_KEY"] = FAKE_KEY
        done = subprocess.run(command, cwd=PROJECT_ROOT, env=env, capture_output=True, text=True, timeout=300)
        sent = [r.headers.get("authorization") for r in server.requests if "gemma4" in json.dumps(r.body)]
    assert done.returncode == 0, done.stdout + done.stderr
    assert sent and all(h == f"Bearer {FAKE_KEY}" for h in sent)  # the key was really used
    written = [p for p in evalkit.tmp.rglob("*") if p.is_file()]
    assert any(p.name == "report.json" for p in written) and evalkit.recording in written
    for path in written:
        assert FAKE_KEY not in path.read_text(errors="replace"), f"the key leaked into {path}"
    assert FAKE_KEY not in done.stdout + done.stderr
    assert "[REDACTED]" in evalkit.recording.read_text()  # the echoed key was masked, not dropped
    report = read_json(next(p for p in written if p.name == "report.json"))
    assert "[REDACTED]" in {c["id"]: c for c in report["cases"]}["token-leak"]["output"]  # the answer kept, masked


def test_budget_denied_cases_stay_in_the_report_and_the_gate_blocks_the_incomplete_run(evalkit: Evalkit,
                                                                                       tmp_path: Path) -> None:
    base = tmp_path / "base.json"
    with FakeOllama(replies()) as server:
        evalkit.judge_at(server.url)
        assert evalkit("live", f"run.save_report={base}", url=server.url).code == 0
        evalkit.recordings = tmp_path / "rec-budget"
        run = evalkit("live", "budget.max_calls=10", f"baseline={base}", url=server.url)
        assert len(server.requests) == 15 + 10  # the budget stopped the second run at 10 calls
        evalkit.recordings = tmp_path / "rec-review"
        review = evalkit("live", "budget.max_calls=10", f"baseline={base}", "+policy.on_budget_denied=review",
                         "policy.min_pass_rate=0", url=server.url)
    # a policy may make the incomplete run a review: exit 0 unless it says review fails the job
    assert review.code == 0, review.explain()
    assert read_json(review.job / "decision.json")["decision"] == "review"
    assert "incomplete: " in review.done.stdout and "denied by the budget" in review.done.stdout
    assert run.code == 1, run.explain()
    cases = {c["id"]: c for c in run.report["cases"]}
    unscored = [c for c in cases.values() if c["status"] == "unscored"]
    assert len(cases) == 12 and len(unscored) >= 2  # denied cases are kept, never dropped
    assert all(any("budget_denied" in p for p in c["problems"]) for c in unscored)
    # evalkit's own mark: the case was not run, never a failure of its own
    assert all(c["denied"] == "budget_denied: budget.max_calls=10 would be exceeded" for c in unscored)
    denied = {k: v for k, v in run.call_status.items() if v == "budget_denied"}
    # 5 calls unmade: the task calls the budget denied and the judge calls of their replies, never sent either
    assert len(denied) == 5 and "blocked" not in run.call_status.values()
    recorded = read_json(evalkit.recording)["calls"]
    assert all(recorded[k]["failure"]["kind"] == "budget_denied" for k in denied if k.startswith("task/"))
    # the gate: an incomplete run naming the denied cases and the budget, no regression and no critical failure
    decision = read_json(run.job / "decision.json")
    assert decision["decision"] == "block" and decision["regressed"] == [] and decision["critical_failures"] == []
    ids = sorted(c["id"] for c in unscored)
    [finding] = [f for f in decision["findings"] if f["rule"] == "budget_denied"]
    assert sorted(finding["figures"]["cases"]) == ids and finding["effect"] == "block"
    assert (f"incomplete: {len(ids)} case(s) denied by the budget (budget.max_calls=10 would be exceeded): "
            in run.done.stdout)
    assert "regression" not in run.done.stdout and "critical test(s) fail" not in run.done.stdout


def test_a_budget_that_pays_for_3_of_8_calls_is_an_incomplete_run_never_regressions(tmp_path: Path) -> None:
    """Eight cases, one call each, all passing on the baseline; the candidate's budget pays for three. The gate
    lists no regression and no critical failure (test_label is critical here): one finding names the five denied
    cases and the budget, and the run blocks (exit 1)."""
    cases = {f"case-{i}": 1.0 for i in range(8)}
    with FakeOpenAI(flaky_model({"sys-a": cases})) as server:
        conf = write_suite(tmp_path, name="budget_e2e", cases=list(cases), url=server.base_url, systems=["sys-a"],
                           temperature=0)

        def run(job: str, *overrides: str) -> subprocess.CompletedProcess[str]:
            command = [sys.executable, "-m", "evalkit", f"hydra.searchpath=[file://{conf}]", "suite=budget_e2e",
                       "mode=live", "run.progress=off", "run.concurrency=1", f"hydra.run.dir={tmp_path / job}",
                       "+policy.critical=[test_label]", *overrides]
            return subprocess.run(command, cwd=PROJECT_ROOT, capture_output=True, text=True, timeout=300,
                                  check=False)

        base = tmp_path / "base.json"
        first = run("job1", "baseline=none", f"run.recordings={tmp_path / 'rec1'}", f"run.save_report={base}")
        assert first.returncode == 0, first.stderr
        cut = run("job2", f"baseline={base}", f"run.recordings={tmp_path / 'rec2'}", "budget.max_calls=3")
        assert len(server.chat_requests) == 8 + 3
    assert cut.returncode == 1, cut.stdout + cut.stderr  # block: the decision the incomplete run gives
    decision = read_json(tmp_path / "job2" / "decision.json")
    assert decision["decision"] == "block"
    assert decision["regressed"] == [] and decision["critical_failures"] == []
    assert decision["reasons"] == [
        "incomplete: 5 case(s) denied by the budget (budget.max_calls=3 would be exceeded): case-3, case-4, case-5, "
        "... 2 more"]
    [finding] = [f for f in decision["findings"] if f["rule"] == "budget_denied"]
    assert finding["figures"]["cases"] == [f"case-{i}" for i in range(3, 8)]
    assert "regression" not in cut.stdout.split("QUALITY")[0]
    # the terminal lists the denied cases as not run, never among the failing ones
    assert "failing cases                   -\n" in cut.stdout
    assert ("not run (budget)                case-3, case-4, case-5, case-6, case-7: budget_denied: budget.max_calls=3 "
            "would be exceeded") in cut.stdout


# -- secrets in every form ------------------------------------------------------------------------------------------

def encoded_forms(key: str) -> list[str]:
    import base64
    import urllib.parse
    return [key.upper(), urllib.parse.quote(key, safe=""), base64.b64encode(key.encode()).decode(),
            "Basic " + base64.b64encode(f"user:{key}".encode()).decode(), json.dumps(key)[1:-1], key.encode().hex()]


def bearer_reply(case_id: str) -> str:
    """A correct triage whose summary says `Bearer <the terms it must mention>`: grading must see those words."""
    from helpers.live import CASES
    case = CASES[case_id]
    return json.dumps({"label": case.label, "priority": case.priority,
                       "summary": f"Client sends Bearer {', '.join(case.must_mention)} on a {case.label}."})


def test_encoded_keys_reach_no_file_and_a_live_run_grades_like_its_replay(evalkit: Evalkit) -> None:
    from helpers.live import CASES
    plain = next(c for c in sorted(CASES) if c != "token-leak" and CASES[c].must_mention)
    leaks = replies({"token-leak": json.dumps({"label": "bug", "priority": "p0",
                                               "summary": "keys " + " ".join(encoded_forms(FAKE_KEY))}),
                     plain: bearer_reply(plain)})
    with FakeOllama(leaks) as server:
        evalkit.judge_at(server.url)
        command, env, job = evalkit.command("live", "model.api_key_env=EVALKIT_TEST_KEY", url=server.url)
        env["EVALKIT_TEST_KEY"] = FAKE_KEY
        live = subprocess.run(command, cwd=PROJECT_ROOT, env=env, capture_output=True, text=True, timeout=300)
        assert live.returncode == 0, live.stdout + live.stderr
        command, env, replay_job = evalkit.command("replay", "model.api_key_env=EVALKIT_TEST_KEY")
        env["EVALKIT_TEST_KEY"] = FAKE_KEY
        replay = subprocess.run(command, cwd=PROJECT_ROOT, env=env, capture_output=True, text=True, timeout=300)
    assert replay.returncode == 0, replay.stdout + replay.stderr
    forms = [FAKE_KEY, *encoded_forms(FAKE_KEY)]
    written = [p for p in evalkit.tmp.rglob("*") if p.is_file()]
    assert {"report.json", "run-input.json", "pytest.log"} <= {p.name for p in written}
    for path in written:
        text = path.read_text(errors="replace")
        for form in forms:
            assert form.removeprefix("Basic ") not in text, f"{form} leaked into {path}"
    for form in forms:
        assert form.removeprefix("Basic ") not in live.stdout + live.stderr + replay.stdout + replay.stderr
    live_report, replay_report = read_json(job / "report.json"), read_json(replay_job / "report.json")
    outcomes = lambda r: {t["nodeid"]: t["outcome"] for t in r["tests"]}  # noqa: E731
    assert outcomes(live_report) == outcomes(replay_report)
    assert all(o == "passed" for n, o in outcomes(live_report).items() if f"[{plain}]" in n)  # "Bearer" kept
    cases = {c["id"]: c for c in live_report["cases"]}
    assert "Client sends Bearer " in cases[plain]["output"]  # the reply as the model wrote it
    assert cases["token-leak"]["output"] == {c["id"]: c for c in replay_report["cases"]}["token-leak"]["output"]


def test_a_short_key_is_refused_before_a_live_run(evalkit: Evalkit) -> None:
    evalkit.judge_at("http://127.0.0.1:9")  # never called: the refusal comes first
    command, env, job = evalkit.command("live", "model.api_key_env=EVALKIT_TEST_KEY", url="http://127.0.0.1:9")
    env["EVALKIT_TEST_KEY"] = "abc12"
    done = subprocess.run(command, cwd=PROJECT_ROOT, env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 3, done.stdout + done.stderr
    assert "EVALKIT_TEST_KEY: the key is shorter than 8 characters" in done.stderr
    assert "api_key_env=null" in done.stderr and "abc12" not in done.stderr
    assert not evalkit.recordings.exists() or not any(evalkit.recordings.rglob("*.json*"))


def plain_run(tmp: Path, *overrides: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    import os
    import sys
    full = {**{k: v for k, v in os.environ.items() if k != "HYDRA_FULL_ERROR"}, **(env or {})}
    return subprocess.run([sys.executable, "-m", "evalkit", *overrides], cwd=PROJECT_ROOT, env=full,
                          capture_output=True, text=True, timeout=300)


@pytest.mark.parametrize("sweep", [False, True])
def test_a_credential_override_is_refused_before_hydra_writes_it(tmp_path: Path, sweep: bool) -> None:
    secret = "s3cr3t-v4lue-0123456789"
    where = ["-m", f"hydra.sweep.dir={tmp_path / 'sweep'}", "prompt=v1,v2"] if sweep else \
        [f"hydra.run.dir={tmp_path / 'job'}"]
    done = plain_run(tmp_path, *where, f"model.base_url='http://h/v1?key={secret}'")
    assert done.returncode == 3, done.stdout + done.stderr
    assert done.stderr.startswith("error: command line model.base_url=...: the value holds a key, token")
    assert "model.api_key_env" in done.stderr and len(done.stderr.splitlines()) == 1
    assert secret not in done.stdout + done.stderr
    assert not any(tmp_path.iterdir())  # nothing written: no .hydra/, no multirun.yaml, no job.json


def test_a_key_value_the_config_names_reaches_no_hydra_file_job_or_summary(tmp_path: Path) -> None:
    # EVALKIT_RUNCRED is no conventional credential name, so main lets the override through; the run's redactor
    # (model.api_key_env names it) then rewrites what Hydra wrote and masks job.json and the summary.
    overrides = ["model.api_key_env=EVALKIT_RUNCRED", f"model.base_url='http://h/v1?x={FAKE_KEY}'"]
    sweep = tmp_path / "sweep"
    done = plain_run(tmp_path, "-m", f"hydra.sweep.dir={sweep}", "run.retries=0,1", *overrides,
                     env={"EVALKIT_RUNCRED": FAKE_KEY})
    assert done.returncode == 0, done.stdout + done.stderr
    written = [p for p in sweep.rglob("*") if p.is_file()]
    names = {p.relative_to(sweep).as_posix() for p in written}
    assert {"multirun.yaml", "summary.md", "summary.json", "0/job.json", "0/.hydra/overrides.yaml",
            "0/.hydra/config.yaml", "0/.hydra/hydra.yaml"} <= names
    for path in written:
        assert FAKE_KEY not in path.read_text(errors="replace"), f"the key leaked into {path}"
    assert FAKE_KEY not in done.stdout + done.stderr
    import yaml
    assert "[REDACTED]" in yaml.safe_load((sweep / "0" / ".hydra" / "config.yaml").read_text())["model"]["base_url"]


def test_broad_and_hostile_secret_patterns_change_no_decision_and_no_file_format(tmp_path: Path) -> None:
    plain = plain_run(tmp_path, f"hydra.run.dir={tmp_path / 'plain'}")
    hostile = plain_run(tmp_path, f"hydra.run.dir={tmp_path / 'hostile'}",
                        "run.secret_patterns=[passed,'\"','(a|a)*b',e,'\\\\\\\\']")
    assert plain.returncode == hostile.returncode == 0, hostile.stdout + hostile.stderr
    for name in ("report.json", "decision.json", "run-input.json"):
        json.loads((tmp_path / "hostile" / name).read_text())  # still JSON
    first, second = (read_json(tmp_path / run / "report.json") for run in ("plain", "hostile"))
    assert [(t["nodeid"], t["outcome"]) for t in first["tests"]] == [(t["nodeid"], t["outcome"]) for t in second["tests"]]
    assert read_json(tmp_path / "hostile" / "decision.json")["decision"] == \
        read_json(tmp_path / "plain" / "decision.json")["decision"]


@pytest.mark.parametrize("pattern", ["''", "'a*'"])
def test_secret_patterns_matching_the_empty_string_are_refused(tmp_path: Path, pattern: str) -> None:
    done = plain_run(tmp_path, f"hydra.run.dir={tmp_path / 'job'}", f"run.secret_patterns=[{pattern}]")
    assert done.returncode == 3, done.stdout + done.stderr
    assert "run.secret_patterns" in done.stderr and "Traceback" not in done.stderr


HF_VALUE = "hf_Zq8pLr3TnV6wXy2Bc4Dm"  # an authored token of the shape, in no real account


@pytest.mark.parametrize("override", ["model.name=${oc.env:HF_TOKEN}",
                                      "model.base_url='http://h/v1?t=${oc.env:HF_TOKEN}'"])
def test_a_credential_read_through_oc_env_is_refused_once_resolved(tmp_path: Path, override: str) -> None:
    # the override's text holds only the variable's name: the check on what was typed cannot see the key
    done = plain_run(tmp_path, f"hydra.run.dir={tmp_path / 'job'}", override, env={"HF_TOKEN": HF_VALUE})
    assert done.returncode == 3, done.stdout + done.stderr
    assert len(done.stderr.strip().splitlines()) == 1 and "the value of $HF_TOKEN" in done.stderr
    assert HF_VALUE not in done.stdout + done.stderr
    for path in tmp_path.rglob("*"):
        assert not path.is_file() or HF_VALUE not in path.read_text(errors="replace"), f"the key leaked into {path}"
        assert HF_VALUE not in path.name
    shown = plain_run(tmp_path, "--cfg", "job", "--resolve", override, env={"HF_TOKEN": HF_VALUE})
    assert shown.returncode == 0 and HF_VALUE not in shown.stdout + shown.stderr
    assert "[REDACTED]" in shown.stdout


@pytest.mark.parametrize("sweep", [False, True])
def test_secret_patterns_are_not_copied_into_what_hydra_saves(tmp_path: Path, sweep: bool) -> None:
    secret = "no-known-shape-9f3a71c2e8"  # the README's advice: a pattern that is the secret itself
    where = ["-m", f"hydra.sweep.dir={tmp_path / 'sweep'}", "prompt=v1,v2"] if sweep else \
        [f"hydra.run.dir={tmp_path / 'job'}"]
    done = plain_run(tmp_path, *where, f"run.secret_patterns=[{secret}]")
    assert done.returncode == 0, done.stdout + done.stderr
    written = [p for p in tmp_path.rglob("*") if p.is_file()]
    assert any(p.name == "overrides.yaml" for p in written) and any(p.name == "config.yaml" for p in written)
    for path in written:
        assert secret not in path.read_text(errors="replace"), f"the pattern leaked into {path}"
    assert secret not in done.stdout + done.stderr
