"""`python -m evalkit` and `evalkit gate` through real subprocesses: decisions, exit codes,
bad input. The recorded decisions of the issue-triage suite must reproduce exactly."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest
from conftest import evalkit_cli, report, write_json
from helpers.docs_text import docs_text

PROJECT_ROOT = Path(__file__).resolve().parents[2]  # this repository: the examples project


pytestmark = pytest.mark.slow

RUNS = PROJECT_ROOT / "suites/issue_triage/runs"
PROMPT_CHANGE = {"prompt_version": ["v1", "v2"], "prompt_sha": ["01859a9d3df1", "573cd471224c"]}


@pytest.mark.parametrize("overrides, code, expected", [
    ([], 0, {"decision": "go", "changed": {}, "regressed": [], "critical_failures": [], "pass_rate": 1.0}),
    (["model=gemma4"], 1, {
        "decision": "block",
        "reasons": ["2 regression(s); policy allows 0", "1 critical test(s) fail"],
        "changed": {"model": ["gemini-3.8-flash", "gemma4:e2b"],  # and the options it is sent, with its name
                    "components.model": ["gemini-3.8-flash@8eb3e7a90396", "gemma4:e2b@133bba7edbbb"]},
        "regressed": ["test_triage.py::test_priority[import-drops-tasks]",
                      "test_triage.py::test_summary_is_short_and_specific[where-is-data]"],
        "critical_failures": ["test_triage.py::test_priority[import-drops-tasks]"],
        "missing_critical": [], "fixed": []}),
    (["prompt=v2"], 0, {"decision": "go", "reasons": [], "changed": PROMPT_CHANGE, "regressed": []}),
    (["prompt=v2", "dataset=v2"], 2, {"decision": "incomparable", "reasons": [
        "baseline ran issue-triage@1 (20f31472b984), candidate ran issue-triage@2 (f2a7f06596aa); "
        "rerun the baseline on the candidate's dataset"]}),
    (["prompt=v2", "dataset=v2", f"baseline={RUNS / 'baseline-dataset-v2.json'}"], 0,
     {"decision": "go", "changed": PROMPT_CHANGE, "regressed": [], "pass_rate": 1.0, "tests": 59}),
])
def test_recorded_decisions_reproduce(run_evalkit, tmp_path, overrides, code, expected):
    done = run_evalkit(*overrides)
    assert done.returncode == code, done.stdout + done.stderr
    assert done.stdout.splitlines()[0] == f"decision: {expected['decision'].upper()}"
    decision = json.loads((tmp_path / "job" / "decision.json").read_text())
    assert {k: decision[k] for k in expected} == expected
    assert (tmp_path / "job" / "report.json").is_file()


def test_report_carries_key_cases_and_provenance_but_not_the_machine(run_evalkit, tmp_path):
    assert run_evalkit("model=gemma4", "baseline=none").returncode == 0
    data = json.loads((tmp_path / "job" / "report.json").read_text())
    assert "environment" not in data and "root" not in data
    assert data["eval"]["model"] == "gemma4:e2b" and data["eval"]["prompt_sha"] == "01859a9d3df1"
    assert data["provenance"]["recording_provenance"] == "authored"
    assert data["provenance"]["recording"] == "recordings/issue_triage/gemma4-e2b-v1-issue-triage@1-703b2054.json"
    assert {"evalkit_version", "git_commit", "python", "mode"} <= data["provenance"].keys()
    cases = {c["id"]: c for c in data["cases"]}
    assert len(cases) == 12
    assert cases["import-drops-tasks"]["checks"]["test_priority"] == "failed"
    assert cases["import-drops-tasks"]["passed"] is False and cases["sync-keyerror"]["passed"] is True
    assert cases["import-drops-tasks"]["calls"] == {"task/import-drops-tasks": "replayed",
                                                    "judge/faithfulness/import-drops-tasks": "replayed"}


def test_decision_says_why_the_regressed_tests_failed_and_shows_both_answers(run_evalkit, tmp_path):
    assert run_evalkit("model=gemma4").returncode == 1
    why = "AssertionError: assert 'p1' == 'p0'"
    decision = json.loads((tmp_path / "job" / "decision.json").read_text())
    assert decision["messages"]["test_triage.py::test_priority[import-drops-tasks]"] == why
    markdown = (tmp_path / "job" / "decision.md").read_text()
    assert f"- `test_triage.py::test_priority[import-drops-tasks]` (critical): `{why}`" in markdown
    block = markdown.split("<summary>Answers of regressed case <code>import-drops-tasks</code>", 1)[1]
    block = block.split("</details>", 1)[0]
    output_row = next(line for line in block.splitlines() if line.startswith("<tr><th>task output"))
    baseline_cell, candidate_cell = output_row.split("<td>")[1:]
    assert '"priority": "p0"' in baseline_cell and '"priority": "p1"' in candidate_cell
    assert "<tr><th>judge: faithfulness</th>" in block


def test_the_shipped_baseline_regenerates_with_the_same_outcomes(run_evalkit, tmp_path):
    out = tmp_path / "baseline.json"
    assert run_evalkit("baseline=none", f"run.save_report={out}").returncode == 0
    outcomes = lambda p: {t["nodeid"]: t["outcome"] for t in json.loads(p.read_text())["tests"]}  # noqa: E731
    assert outcomes(out) == outcomes(RUNS / "baseline.json")
    assert json.loads(out.read_text())["eval"] == json.loads((RUNS / "baseline.json").read_text())["eval"]


def test_baseline_from_git(run_evalkit, tmp_path):
    # the committed baseline of HEAD, read as CI reads origin/main's
    done = run_evalkit("baseline=git:HEAD:suites/issue_triage/runs/baseline.json")
    if "not a git repository" in done.stderr or "does not exist in 'HEAD'" in done.stderr:
        pytest.skip("the project is not a git checkout with a committed baseline")
    assert done.returncode == 0, done.stderr
    assert "baseline: git:HEAD:suites/issue_triage/runs/baseline.json" in done.stdout


def test_bad_git_baseline_is_an_input_error(run_evalkit):
    done = run_evalkit("baseline=git:no-such-ref-xyz:suites/issue_triage/runs/baseline.json")
    assert done.returncode == 3
    assert done.stderr.startswith("error: baseline=git:no-such-ref-xyz:") and "no-such-ref-xyz is not in this clone" in done.stderr


# --- bad input: one line on stderr, exit code 3, nothing half-written ---

@pytest.mark.parametrize("args, message", [
    (["model=nope"], "Could not find 'model/nope' (available: azure-gpt4o, bedrock-claude, claude, deepseek, fireworks, gemini-flash, gemma4, gpt-local, groq, mistral, openrouter, shop-agent, smollm2, tgi, together, vllm)"),
    (["policy.max_regresions=0"], "unknown key 'policy.max_regresions' (allowed: block_below, block_on_drop, block_on_quality_regression, block_on_review, block_on_safety, block_on_task_regression, critical, critical_cases, judge_flips, max_detectable_drop, max_regressions, min_judge_kappa, min_pass_rate, min_ran_pass_rate, name, new_failing, on_budget_denied, on_incomparable, paired, power, regressions, repeats, require_complete_pairs, require_isolation, require_split, review_below, review_fails, review_on_drop, rules, tool_changes, version)"),
    (["+policy.max_regresions=0"], "unknown key 'policy.max_regresions' (allowed: block_below, block_on_drop, block_on_quality_regression, block_on_review, block_on_safety, block_on_task_regression, critical, critical_cases, judge_flips, max_detectable_drop, max_regressions, min_judge_kappa, min_pass_rate, min_ran_pass_rate, name, new_failing, on_budget_denied, on_incomparable, paired, power, regressions, repeats, require_complete_pairs, require_isolation, require_split, review_below, review_fails, review_on_drop, rules, tool_changes, version)"),
    (["policy.min_pass_rate=1.5"], "'policy.min_pass_rate': Input should be less than or equal to 1"),
    (["model.max_reply_bytes=2048"], "command line: 'model.max_reply_bytes' is not given in the chosen model option's "
                                     "file, so Hydra cannot override it; add it with +model.max_reply_bytes=VALUE"),
    (["mode=fast"], "'mode': Input should be 'replay', 'live' or 'record-missing'"),
    (["baseline=/nonexistent/baseline.json"], "/nonexistent/baseline.json: report file not found"),
])
def test_bad_command_lines(run_evalkit, tmp_path, args, message):
    done = run_evalkit(*args)
    assert done.returncode == 3, done.stdout + done.stderr
    assert message in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1, done.stderr
    assert not (tmp_path / "job" / "decision.json").exists()


@pytest.fixture
def recordings_copy(tmp_path: Path) -> Path:
    root = tmp_path / "rec"
    shutil.copytree(PROJECT_ROOT / "recordings", root)
    return root


def test_missing_recording_file_in_replay_mode(run_evalkit, tmp_path, recordings_copy):
    (recordings_copy / "issue_triage/gemma4-e2b-v1-issue-triage@1-703b2054.json").unlink()
    done = run_evalkit("model=gemma4", f"run.recordings={recordings_copy}")
    assert done.returncode == 3
    assert "gemma4-e2b-v1-issue-triage@1-703b2054.json: no recording of this identity; the closest, " in done.stderr
    assert "mode=record-missing`" in done.stderr and len(done.stderr.strip().splitlines()) == 1
    assert not (tmp_path / "job" / "report.json").exists()


def test_recording_of_another_key_at_the_expected_path(run_evalkit, tmp_path, recordings_copy):
    folder = recordings_copy / "issue_triage"
    shutil.copy(folder / "gemini-3.8-flash-v2-issue-triage@1-5b5d8044.json",
                folder / "gemini-3.8-flash-v1-issue-triage@1-85d32d9a.json")
    done = run_evalkit(f"run.recordings={recordings_copy}")
    assert done.returncode == 3
    assert 'belongs to another eval key (prompt_version: recorded "v2", asked "v1" (and ' in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1


def test_replay_miss_and_stale_entry_are_a_refusal_never_case_failures(run_evalkit, tmp_path, recordings_copy):
    path = recordings_copy / "issue_triage/gemini-3.8-flash-v1-issue-triage@1-85d32d9a.json"
    data = json.loads(path.read_text())
    data["calls"]["task/sync-keyerror"]["request"]["messages"][0]["content"] = "an older prompt"
    data["calls"]["task/sync-keyerror"]["request_sha"] = "000000000000"
    del data["calls"]["task/slow-list"]
    path.write_text(json.dumps(data))
    done = run_evalkit(f"run.recordings={recordings_copy}")
    assert done.returncode == 3, done.stdout + done.stderr  # measured nothing: no decision, no report
    assert len(done.stderr.strip().splitlines()) == 1 and "decision" not in done.stdout
    # the first call in the run's order that cannot be served, the field that differs, and how many there are
    assert 'task/sync-keyerror was recorded for another request: messages[0].content: recorded "an older prompt"' \
        in done.stderr
    assert "(2 of 12 calls cannot be served)" in done.stderr and "mode=record-missing`" in done.stderr
    assert not (tmp_path / "job" / "report.json").exists()


# --- evalkit gate ---

def test_gate_cli_on_the_shipped_baseline_and_a_run(run_evalkit, tmp_path):
    assert run_evalkit("model=gemma4", "baseline=none").returncode == 0
    out = tmp_path / "decision.json"
    done = run_evalkit(str(RUNS / "baseline.json"), str(tmp_path / "job/report.json"), "--policy", "triage",
                       "--out", str(out), command="gate")
    assert done.returncode == 1
    assert done.stdout.splitlines()[0] == "decision: BLOCK"
    assert json.loads(out.read_text())["critical_failures"] == ["test_triage.py::test_priority[import-drops-tasks]"]


BASE = {f"test_label[c{i}]": "passed" for i in range(20)} | {"test_priority[c0]": "passed"}


@pytest.mark.parametrize("candidate, code", [(report(BASE), 0), (report(BASE | {"test_label[c3]": "failed"}), 1),
                                             (report(BASE, dataset_sha="bbb"), 2)])
def test_gate_cli_exit_code_is_the_decision(run_evalkit, tmp_path, candidate, code):
    b = write_json(tmp_path / "b.json", report(BASE))
    c = write_json(tmp_path / "c.json", candidate)
    policy = write_json(tmp_path / "policy.json", {"max_regressions": 0, "min_pass_rate": 0.9, "critical": ["test_priority"]})
    done = run_evalkit(str(b), str(c), "--policy", str(policy), command="gate")
    assert done.returncode == code, done.stdout + done.stderr


@pytest.mark.parametrize("write, args, message", [
    (lambda p: p.write_text('{"eval": {}, "tests": [{"nodeid"'), [], "c.json: not valid JSON"),
    (lambda p: write_json(p, {"tests": [{"nodeid": "a", "outcome": "passed"}]}), [], "c.json: not a run report: no 'eval' block"),
    (lambda p: write_json(p, report({"t[a]": "passed"}) | {"tests": [{"nodeid": "a", "outcome": "passed"}] * 2}), [],
     "c.json: duplicate test id 'a'"),
    (lambda p: write_json(p, report({})), [], "c.json: the run has no tests"),
    (lambda p: write_json(p, report(BASE)), ["--policy", "nosuchpolicy"], "policy 'nosuchpolicy': no such policy"),
])
def test_gate_cli_bad_input(run_evalkit, tmp_path, write, args, message):
    b = write_json(tmp_path / "b.json", report(BASE))
    write(tmp_path / "c.json")
    out = tmp_path / "d.json"
    done = run_evalkit(str(b), str(tmp_path / "c.json"), *args, "--out", str(out), command="gate")
    assert done.returncode == 3
    assert message in done.stderr and len(done.stderr.strip().splitlines()) == 1
    assert not out.exists()


@pytest.mark.parametrize("outputs, message", [
    (["--out", "{tmp}/no-such-folder/d.json"], "the folder {tmp}/no-such-folder does not exist"),
    (["--out", "{tmp}/d.json", "--markdown", "{tmp}/d.json"], "--out and --markdown name the same file"),
    (["--out", "{tmp}/d.json", "--html", "{tmp}/d.xml"], "--html names a file another output of this command writes"),
    (["--markdown", "{tmp}/b.json"], "an input of this command, and evalkit never overwrites its inputs"),
])
def test_gate_cli_refuses_its_outputs_before_reading_any_report(run_evalkit, tmp_path, outputs, message):
    # the reports do not exist: a refusal that names the output, not them, was made before reading them
    write_json(tmp_path / "b.json", report(BASE))
    args = [a.replace("{tmp}", str(tmp_path)) for a in outputs]
    done = run_evalkit(str(tmp_path / "b.json"), str(tmp_path / "missing.json"), *args, command="gate")
    assert done.returncode == 3 and len(done.stderr.strip().splitlines()) == 1
    assert message.replace("{tmp}", str(tmp_path)) in done.stderr and "missing.json" not in done.stderr


def test_gate_cli_usage_error_is_not_incomparable(run_evalkit):
    done = run_evalkit("only-one-argument.json", command="gate")
    assert done.returncode == 3 and "usage:" in done.stderr


def test_readme_output_example_is_what_the_program_prints(run_evalkit):
    readme = docs_text()  # the README and the docs site
    shown = readme.split("What `evalkit run model=gemma4` prints", 1)[1].split("```", 2)[1].strip()
    done = run_evalkit("model=gemma4")
    printed = re.sub(r"report \S+report\.json", "report outputs/.../report.json", done.stdout.strip())
    assert printed == shown


@pytest.mark.parametrize("flag", ["hydra.run.dir", "hydra.sweep.dir"])
def test_an_output_folder_that_is_a_file_is_one_line(tmp_path, flag):
    taken = tmp_path / "a-file"
    taken.write_text("mine\n")
    sweep = ["-m", "prompt=v1,v2"] if flag == "hydra.sweep.dir" else []
    done = evalkit_cli("evalkit", *sweep, f"{flag}={taken}")
    assert done.returncode == 3, done.stdout + done.stderr
    assert done.stderr.strip().splitlines() == [
        f"error: cannot create the run folder {taken} (File exists); hydra.run.dir and hydra.sweep.dir must name "
        "folders that can be created (not files)"]
    assert taken.read_text() == "mine\n"
