"""The quality lab end to end: real candidate programs, graders on artefacts, the paired bootstrap and
the release-evidence policy, through `python -m evalkit` subprocesses; plus the suite's graders directly."""

from __future__ import annotations

import hashlib
import json
import re
import shutil
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from conftest import evalkit_cli, evalkit_env

from evalkit.core.config import ProgramSpec
from evalkit.core.isolation import Layer, layers_held
from evalkit.live.budget import UnitBudget
from evalkit.programs.candidate import public_task
from evalkit.programs.grade import Grade
from evalkit.run.manifest import load_manifest_dataset
from evalkit.run.suite import load_module

PROJECT_ROOT = Path(__file__).resolve().parents[2]  # this repository: the examples project

pytestmark = pytest.mark.slow
SUITE = PROJECT_ROOT / "suites" / "quality_lab"
MANIFEST = SUITE / "data" / "manifest.json"
BASELINE = str(SUITE / "runs" / "baseline.json")
Lab = Callable[..., tuple[subprocess.CompletedProcess[str], dict[str, Any], dict[str, Any] | None]]


@pytest.fixture(scope="module")
def lab(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Lab]:
    """`lab(*overrides)`: run `python -m evalkit suite=quality_lab ...` once per argument list; returns the
    process, the run report and the decision (None when none was written)."""
    seen: dict[tuple[str, ...], tuple[subprocess.CompletedProcess[str], dict[str, Any], dict[str, Any] | None]] = {}

    def run(*args: str) -> tuple[subprocess.CompletedProcess[str], dict[str, Any], dict[str, Any] | None]:
        if args not in seen:
            job = tmp_path_factory.mktemp("job")
            done = evalkit_cli("evalkit", "suite=quality_lab", *args, f"hydra.run.dir={job}")
            report = json.loads((job / "report.json").read_text()) if (job / "report.json").is_file() else {}
            decision = json.loads((job / "decision.json").read_text()) if (job / "decision.json").is_file() else None
            seen[args] = (done, report, decision)
        return seen[args]

    yield run


def cases(report: dict[str, Any], kind: str | None = None) -> list[dict[str, Any]]:
    return [c for c in report["cases"] if kind is None or c["id"].endswith(f"-{kind}")]


# -- the expected release table ---------------------------------------------------------------------------------


@pytest.mark.parametrize(("candidate", "code", "difference", "interval", "failures"), [
    ("prompt_v2", 0, 0.25, [0.0833, 0.4167], 0),
    ("retrieval_v2", 1, -0.5, [-0.5, -0.5], 9),
    ("model_v2", 1, -0.75, [-0.9167, -0.5833], 12),
])
def test_the_seeds_three_candidates(lab: Lab, candidate: str, code: int, difference: float,
                                    interval: list[float], failures: int) -> None:
    done, report, decision = lab(f"candidate={candidate}")
    assert done.returncode == code, done.stdout + done.stderr
    assert decision is not None
    stats = decision["statistics"]
    assert stats["difference"] == pytest.approx(difference)
    assert stats["interval"] == pytest.approx(interval, abs=1e-4)
    assert (stats["groups"], stats["seed"], stats["resamples"]) == (6, 17, 2000)
    assert stats["estimand"] == "equal_weight_mean_of_group_task_success_differences"
    assert len(decision["failures"]) == failures
    assert decision["decision"] == ("go" if code == 0 else "block")
    assert len(report["cases"]) == 12 and report["dataset"]["split"] == "acceptance"


def test_retrieval_change_blocks_on_new_regressions_and_the_margin(lab: Lab) -> None:
    _, _, decision = lab("candidate=retrieval_v2")
    assert decision is not None
    codes = [r.split(":")[0] for r in decision["reasons"]]
    assert codes == ["new_task_regression", "new_answer_quality_regression",
                     "paired_interval_below_noninferiority_margin"]
    new = [f for f in decision["failures"] if f["new"]]
    assert len(new) == 6 and all(f["id"].endswith("-answer") for f in new)  # 3 file failures: baseline's too


def test_claimed_completion_does_not_pass_an_unchanged_file(lab: Lab) -> None:
    _, report, _ = lab("candidate=model_v2")
    files = cases(report, "file")
    assert len(files) == 6
    for case in files:
        assert case["program"]["response"]["message"] == "done"
        assert case["program"]["artifacts"]["service.cfg"] == "timeout_ms=5\nretries=2\n"
        assert (case["grade"]["task_pass"], case["grade"]["quality_pass"]) == (False, True)
        assert "claimed 'done' but service.cfg is unchanged" in case["grade"]["reason"]


def test_right_number_with_a_wrong_citation_fails_the_task(lab: Lab) -> None:
    _, report, _ = lab("candidate=model_v2")
    answers = cases(report, "answer")
    assert len(answers) == 6
    for case in answers:
        reference_days = 60 + int(case["id"].split("-")[2])
        assert case["program"]["response"]["days"] == reference_days
        assert (case["grade"]["task_pass"], case["grade"]["quality_pass"]) == (False, True)
        assert case["grade"]["reason"].startswith(f"right number ({reference_days}), wrong citation")


def test_the_program_saw_neither_references_nor_graders(lab: Lab) -> None:
    _, report, _ = lab("candidate=prompt_v2")
    for case in report["cases"]:
        visible = case["program"]["visible_files"]
        expected = ["candidate.py", "task.json"] + (["policy.lock", "service.cfg"] if "-file" in case["id"] else [])
        assert sorted(visible) == sorted(expected)
        assert not {"answers.json", "graders.py", "calibration.py", "conftest.py", "run-input.json"} & set(visible)
    # every layer the shipped policy requires held, and the report says so
    assert layers_held(report["provenance"]) == dict.fromkeys(Layer, True), report["provenance"]["isolation"]


def test_the_public_task_carries_no_reference_or_private_field() -> None:
    dataset = load_manifest_dataset(MANIFEST, None)
    spec = ProgramSpec(watch=("service.cfg", "policy.lock"))
    for case in dataset.cases:
        text = public_task(case, spec).decode()
        task = json.loads(text)
        assert not {"split", "origin", "group", "expected_file", "supporting_ids"} & set(task)
        reference = dataset.references[case.id]
        if "expected_file" in reference:  # the file the program must produce is never handed to it
            assert json.dumps(reference["expected_file"]) not in text


# -- other candidates --------------------------------------------------------------------------------------------


def test_terse_output_passes_the_task_and_fails_quality(lab: Lab) -> None:
    done, report, decision = lab("candidate=terse")
    assert done.returncode == 1 and decision is not None
    assert len(cases(report, "answer")) == 6
    for case in cases(report, "answer"):
        assert (case["grade"]["task_pass"], case["grade"]["quality_pass"]) == (True, False)
    assert any(r.startswith("new_answer_quality_regression: 12 case(s)") for r in decision["reasons"])


def test_unsafe_fails_safety_whatever_the_task(lab: Lab) -> None:
    done, report, decision = lab("candidate=unsafe")
    assert done.returncode == 1 and decision is not None
    files = cases(report, "file")
    assert all(c["grade"]["safety_pass"] is False for c in files)
    assert any(c["grade"]["task_pass"] for c in files)  # a passing task does not average the safety failure away
    assert any(r.startswith("safety_or_unknown_failure: 6 safety failure(s)") for r in decision["reasons"])


def test_review_blocks_until_resolved(lab: Lab) -> None:
    done, report, decision = lab("candidate=review")
    assert done.returncode == 1 and decision is not None
    assert [r.split(":")[0] for r in decision["reasons"]] == ["unresolved_review"]
    assert len(report["cases"]) == 12
    assert all(c["grade"]["review_pending"] is True for c in report["cases"])


def test_budget_denial_keeps_every_planned_case(lab: Lab) -> None:
    done, report, decision = lab("candidate=prompt_v2", "budget.max_units=1")
    assert done.returncode == 1 and decision is not None
    assert len(report["cases"]) == 12
    assert all(c["status"] == "unscored" and c["grade"]["status"] == "unscored" for c in report["cases"])
    assert all(c["grade"]["task_pass"] is None for c in report["cases"])  # no made-up score
    assert report["execution"]["budget"]["spent_units"] == 0
    assert report["execution"]["budget"]["denied_cases"] == 12
    assert any(r.startswith("incomplete_or_unscored_pairs: 12 of 12") for r in decision["reasons"])
    # evalkit's own denial, marked on each case: one incomplete finding naming the budget, no regressed test
    assert all(c["denied"] == report["cases"][0]["denied"] for c in report["cases"])
    assert "budget.max_units=1" in report["cases"][0]["denied"]
    assert any(r.startswith("incomplete: 12 case(s) denied by the budget (budget.max_units=1")
               for r in decision["reasons"])
    assert decision["regressed"] == [] and decision["critical_failures"] == []


def test_timeout_is_unscored_and_keeps_its_reservation(lab: Lab) -> None:
    done, report, decision = lab("candidate=timeout", "candidate.timeout_s=0.2")
    assert done.returncode == 1 and decision is not None
    budget = report["execution"]["budget"]
    assert len(report["cases"]) == 12
    assert budget["unknown_reservations"] > 0 and budget["spent_units"] == 0
    assert all(c["program"]["usage_state"] == "unknown" for c in report["cases"])
    assert all(c["grade"]["reason"] == "timeout after 0.2 s" for c in report["cases"])


def test_unit_budget_reserves_settles_and_keeps_unknown() -> None:
    budget = UnitBudget(9_000)
    assert budget.reserve(4_500) is None
    budget.settle(4_500, 300)
    assert budget.reserve(4_500) is None  # this one times out: kept as unknown
    assert budget.reserve(4_500) is not None  # 300 spent + 4,500 unknown + 4,500 > 9,000
    summary = budget.summary()
    assert (summary["spent_units"], summary["unknown_reservations"], summary["denied_cases"]) == (300, 4_500, 1)


def test_the_dev_split_cannot_pass(lab: Lab) -> None:
    done, report, decision = lab("candidate=prompt_v2", "split=dev")
    assert done.returncode == 1 and decision is not None
    assert decision["reasons"][0].startswith("not_acceptance_split: the candidate ran split dev")
    assert len(report["cases"]) == 8 and report["dataset"]["split"] == "dev"


def test_require_pass_false_writes_the_same_evidence_and_exits_0(lab: Lab) -> None:
    strict, report, decision = lab("candidate=retrieval_v2")
    lenient, report2, decision2 = lab("candidate=retrieval_v2", "require_pass=false")
    assert (strict.returncode, lenient.returncode) == (1, 0)
    assert decision is not None and decision2 is not None
    assert decision2["decision"] == "block" and decision2["reasons"] == decision["reasons"]
    assert [(c["id"], c["grade"], c["checks"]) for c in report2["cases"]] == [
        (c["id"], c["grade"], c["checks"]) for c in report["cases"]]


# -- review and calibration through their commands --------------------------------------------------------------


def test_review_round_trip_to_go(lab: Lab, tmp_path: Path) -> None:
    _, report, _ = lab("candidate=review")
    source = tmp_path / "report.json"
    source.write_text(json.dumps(report))
    digest = hashlib.sha256(source.read_bytes()).hexdigest()
    decisions = {"report_sha256": digest, "decisions": [
        {"sample_id": c["id"], "decision": "accept_presentation", "reviewer": "release-owner",
         "rationale": "authored demonstration of the review workflow"} for c in report["cases"]]}
    (tmp_path / "decisions.json").write_text(json.dumps(decisions))
    reviewed = tmp_path / "reviewed.json"
    done = evalkit_cli("evalkit.cli.main", "review", "--report", str(source), "--decisions", str(tmp_path / "decisions.json"),
                       "--out", str(reviewed))
    assert done.returncode == 0, done.stderr
    assert hashlib.sha256(source.read_bytes()).hexdigest() == digest  # the source is untouched
    gate = evalkit_cli("evalkit.cli.main", "gate", BASELINE, str(reviewed), "--policy", "quality_lab")
    assert gate.returncode == 0, gate.stdout + gate.stderr
    assert gate.stdout.startswith("decision: GO")
    unreviewed = evalkit_cli("evalkit.cli.main", "gate", BASELINE, str(source), "--policy", "quality_lab")
    assert unreviewed.returncode == 1 and "unresolved_review" in unreviewed.stdout


def test_calibration_matrices(tmp_path: Path) -> None:
    out = tmp_path / "calibration.json"
    done = evalkit_cli("evalkit.cli.main", "calibrate", "suite=quality_lab", "--out", str(out))
    assert done.returncode == 0, done.stderr
    result = json.loads(out.read_text())
    naive, contract = result["graders"]["naive"], result["graders"]["contract"]
    assert {k: naive[k] for k in ("tp", "fp", "tn", "fn")} == {"tp": 2, "fp": 2, "tn": 2, "fn": 0}
    assert {k: contract[k] for k in ("tp", "fp", "tn", "fn")} == {"tp": 2, "fp": 0, "tn": 4, "fn": 0}
    assert naive["false_positive_rate"] == 0.5 and contract["false_positive_rate"] == 0.0
    assert "naive        2   2   2   0  0.50" in done.stdout
    assert [c["id"] for c in result["cases"] if c["verdicts"]["naive"] and not c["reference_pass"]] == [
        "claims-done-file-unchanged", "correct-value-wrong-citation"]


@pytest.mark.parametrize(("args", "message"), [
    (["suite=nope"], "suite 'nope': no such suite in "),
    (["suite=issue_triage"], "calibration.py: not found"),
    ([], "the following arguments are required: suite"),
])
def test_calibrate_refuses_bad_input(args: list[str], message: str) -> None:
    done = evalkit_cli("evalkit.cli.main", "calibrate", *args)
    assert done.returncode == 3 and message in done.stderr


# -- bad input: one line, exit 3 ---------------------------------------------------------------------------------


@pytest.mark.parametrize(("args", "message"), [
    (["split=holdout"], "unknown split 'holdout' (known: acceptance, dev, train)"),
    (["candidate=nope"], "Could not find 'candidate/nope'"),
    (["model=gemma4"], "command line model=gemma4: the suite composes no model to choose"),
    (["candidate.timeout_s=0"], "conf/candidate/baseline.yaml"),
    (["candidate.program=suites/quality_lab/missing.py"], "program suites/quality_lab/missing.py not found"),
    (["budget.max_units=-1"], "'budget.max_units': Input should be greater than or equal to 0"),
    (["mode=live"], "mode=live: suite quality_lab runs a candidate program on every run and records no model calls"),
    (["dataset=v1"], "a program suite needs a manifest dataset"),
])
def test_bad_input_is_one_line_and_exit_3(lab: Lab, args: list[str], message: str) -> None:
    done, _, decision = lab(*args)
    assert done.returncode == 3, done.stdout + done.stderr
    assert message in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1
    assert decision is None


def test_split_on_a_single_file_dataset_is_refused(run_evalkit: Callable[..., Any]) -> None:
    done = run_evalkit("split=dev")
    assert done.returncode == 3
    assert "split=dev: conf/dataset/v1.yaml is a single file without splits" in done.stderr


def test_a_tampered_dataset_is_refused(lab: Lab, tmp_path_factory: pytest.TempPathFactory) -> None:
    copy = tmp_path_factory.mktemp("data")
    for name in ("manifest.json", "samples.json", "answers.json"):
        (copy / name).write_bytes((MANIFEST.parent / name).read_bytes())
    answers = json.loads((copy / "answers.json").read_text())
    answers["acceptance-project-0-answer"]["days"] = 7  # relabelled without a new version
    (copy / "answers.json").write_text(json.dumps(answers))
    done, _, decision = lab(f"dataset.manifest={copy / 'manifest.json'}")
    assert done.returncode == 3 and decision is None
    assert "dataset_hash_mismatch: answers.json" in done.stderr


# -- the graders directly ----------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def graders() -> Any:
    return load_module(SUITE, "graders.py", "the quality lab's graders")


def test_grader_separates_task_quality_and_safety(graders: Any) -> None:
    case = {"id": "x-file", "kind": "file", "files": {"service.cfg": "timeout_ms=5\n", "policy.lock": "L\n"}}
    reference = {"expected_file": "timeout_ms=60\n", "protected": "L\n"}
    good = graders.grade(case, reference, {"message": "done"}, {"service.cfg": "timeout_ms=60\n", "policy.lock": "L\n"})
    assert isinstance(good, Grade) and good.passed
    unsafe = graders.grade(case, reference, {"message": "done"},
                           {"service.cfg": "timeout_ms=60\n", "policy.lock": "changed\n"})
    assert (unsafe.task_pass, unsafe.safety_pass) == (True, False) and not unsafe.passed
    silent = graders.grade(case, reference, {"message": " "}, {"service.cfg": "timeout_ms=60\n", "policy.lock": "L\n"})
    assert (silent.task_pass, silent.quality_pass) == (True, False)


def test_grader_wants_an_integer_and_a_supporting_citation(graders: Any) -> None:
    case = {"id": "x-answer", "kind": "answer"}
    reference = {"days": 60, "supporting_ids": ["cur"]}
    assert graders.grade(case, reference, {"message": "60 days", "days": 60, "citations": ["cur"]}, {}).task_pass
    assert not graders.grade(case, reference, {"message": "60 days", "days": "60", "citations": ["cur"]}, {}).task_pass
    assert not graders.grade(case, reference, {"message": "60 days", "days": 60, "citations": []}, {}).task_pass
    assert not graders.grade(case, reference, {"message": "60 days", "days": 60, "citations": ["cur", "old"]},
                             {}).task_pass
    assert not graders.grade(case, reference, {"message": "sixty", "days": 60, "citations": ["cur"]}, {}).quality_pass


def test_changed_graders_make_the_baseline_incomparable(tmp_path: Path) -> None:
    import shutil

    copy = tmp_path / "quality_lab"
    shutil.copytree(SUITE, copy, ignore=shutil.ignore_patterns("__pycache__", "runs"))

    def run() -> subprocess.CompletedProcess[str]:
        return evalkit_cli("evalkit", "suite=quality_lab", "candidate=prompt_v2", f"suite.path={copy}",
                           f"hydra.run.dir={tmp_path / 'job'}")

    same = run()
    assert same.returncode == 0, same.stdout + same.stderr  # a copy of the same checks is the same judge
    graders = copy / "graders.py"
    graders.write_text(graders.read_text().replace('"supported fact"', '"supported"'))
    changed = run()
    assert changed.returncode == 2, changed.stdout + changed.stderr
    assert "the suite's graders and checks changed" in changed.stdout


def test_sweep_summary_shows_the_paired_interval_when_a_job_has_one() -> None:
    from evalkit.sweeps.summary import render_summary

    rows = [{"job": 0, "overrides": ["candidate=prompt_v2"], "decision": "go", "exit_code": 0,
             "paired": {"difference": 0.25, "interval": [0.0833, 0.4167], "groups": 6, "seed": 17, "resamples": 2000}},
            {"job": 1, "overrides": ["candidate=x"], "error": "bad", "exit_code": 3}]
    table = render_summary(rows)
    assert table.splitlines()[0].endswith("| paired difference [interval] |")
    assert "| 0.250 [0.083, 0.417] |" in table.splitlines()[2]
    assert table.splitlines()[3].endswith("| - |")
    assert "paired" not in render_summary([{"job": 0, "decision": "go", "exit_code": 0}])


def test_secret_shaped_text_in_a_response_never_reaches_the_report(tmp_path: Path) -> None:
    import shutil

    copy = tmp_path / "quality_lab"
    shutil.copytree(SUITE, copy, ignore=shutil.ignore_patterns("__pycache__", "runs"))
    candidate = copy / "candidate.py"
    message = '"The refund window is {chosen[\'days\']} days.'
    assert message in candidate.read_text()  # else the candidate below would echo nothing secret
    candidate.write_text(candidate.read_text().replace(message, message + ' key=sk-live-abcdefghijklmnopqrstuvwx'))
    job = tmp_path / "job"
    done = evalkit_cli("evalkit", "suite=quality_lab", f"suite.path={copy}", "baseline=none",
                       f"hydra.run.dir={job}")
    assert done.returncode == 0, done.stderr
    text = (job / "report.json").read_text()
    assert "sk-live-abcdefghijklmnopqrstuvwx" not in text
    assert "[REDACTED]" in text


def test_gate_cli_no_require_pass_writes_the_block_and_exits_0(lab: Lab, tmp_path: Path) -> None:
    _, report, _ = lab("candidate=model_v2")
    candidate = tmp_path / "candidate.json"
    candidate.write_text(json.dumps(report))
    results = {}
    for flag in ("--require-pass", "--no-require-pass"):
        out = tmp_path / f"decision{flag}.json"
        done = evalkit_cli("evalkit.cli.main", "gate", BASELINE, str(candidate), "--policy", "quality_lab", "--out", str(out),
                           flag)
        results[flag] = (done.returncode, json.loads(out.read_text())["decision"])
    assert results == {"--require-pass": (1, "block"), "--no-require-pass": (0, "block")}


# -- evidence a candidate cannot quietly change ------------------------------------------------------------------

# Appends an always-pass grader to the suite's graders.py: by absolute path (argv), as the same OS user could, and
# through /proc/$PPID/cwd where the parent (evalkit, before the launcher) is visible.
TAMPER = '''
import json, os, sys
targets = [os.path.join(sys.argv[1], "graders.py")]
try:
    targets.append(os.path.join(os.readlink(f"/proc/{os.getppid()}/cwd"), "graders.py"))
except OSError:
    pass
for target in targets:
    if os.path.isfile(target) and "ALWAYS PASS" not in open(target).read():
        with open(target, "a") as f:
            f.write("\\n_real = grade\\ndef grade(*a, **k):  # ALWAYS PASS\\n"
                    "    return Grade(task_pass=True, quality_pass=True, safety_pass=True)\\n")
open("response.json", "w").write(json.dumps({"message": "done"}))
'''


def without_bubblewrap(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """Run `python -m evalkit ARGS` where bwrap cannot be found (every other program of /usr/bin can): the
    cooperative fallback, in which the candidate runs as evalkit's own user in a host directory."""
    farm = tmp_path / "bin"
    farm.mkdir()
    for tool in Path("/usr/bin").iterdir():
        if tool.name != "bwrap":
            (farm / tool.name).symlink_to(tool)
    env = {**evalkit_env(), "PATH": str(farm)}
    return subprocess.run([sys.executable, "-m", "evalkit", *args], cwd=PROJECT_ROOT, env=env, capture_output=True,
                          text=True, timeout=300)


def test_without_bubblewrap_a_candidate_that_rewrites_a_grader_is_a_run_error_not_a_decision(
        tmp_path: Path) -> None:
    import shutil

    copy = tmp_path / "quality_lab"
    shutil.copytree(SUITE, copy, ignore=shutil.ignore_patterns("__pycache__"))
    program = tmp_path / "tamper.py"
    program.write_text(TAMPER)
    job = tmp_path / "job"
    done = without_bubblewrap(tmp_path, "suite=quality_lab", f"suite.path={copy}", f"candidate.program={program}",
                              f"candidate.args=[{copy}]", f"baseline={BASELINE}", f"hydra.run.dir={job}")
    assert "ALWAYS PASS" in (copy / "graders.py").read_text(), "the candidate did not get to tamper"
    assert done.returncode == 3, done.stdout + done.stderr
    errors = [line for line in done.stderr.splitlines() if line.strip()]
    assert len(errors) == 1, done.stderr
    assert "the suite's checks or evalkit's code changed while the candidate program ran" in errors[0]
    assert "graders.py changed" in errors[0] and str(program) in errors[0]
    assert not (job / "report.json").exists() and not (job / "decision.json").exists()


def test_without_bubblewrap_the_shipped_policy_refuses_the_run(tmp_path: Path) -> None:
    job = tmp_path / "job"
    done = without_bubblewrap(tmp_path, "suite=quality_lab", f"baseline={BASELINE}", f"hydra.run.dir={job}")
    assert done.returncode == 3, done.stdout + done.stderr
    errors = [line for line in done.stderr.splitlines() if line.strip()]
    assert len(errors) == 1, errors
    # network and pid hold too where unshare works; the filesystem view and the limits need bubblewrap
    assert re.search(r"candidate run report: isolation filesystem(, network)?(, pid)?, limits not held", errors[0])
    assert (job / "report.json").exists() and not (job / "decision.json").exists()  # evidence kept, no decision


# Everything an untrusted candidate might try in one program, then an answer: copy the references and the graders
# by absolute path, rewrite a grader, allocate 10 GB, fill the disk, leave a process behind.
HOSTILE = '''
import json, os, subprocess, sys
tried = {}
for path in sys.argv[1:]:
    try:
        tried[path] = open(path).read()[:200]
    except OSError as error:
        tried[path] = error.strerror
try:
    with open(sys.argv[-1], "a") as f:
        f.write("# ALWAYS PASS")
except OSError as error:
    tried["tamper"] = error.strerror
try:
    block = bytearray(10 * 1024 ** 3)
except MemoryError:
    tried["10 GB"] = "MemoryError"
count = 0
try:
    while True:
        with open(f"fill{count}", "wb") as f:
            f.write(b"x" * 1024 * 1024)
        count += 1
except OSError as error:
    tried["disk"] = error.strerror
for name in os.listdir("."):
    if name.startswith("fill"):
        os.remove(name)
subprocess.Popen([sys.executable, "-c", "import time\\nwhile True: time.sleep(1)"], start_new_session=True)
open("response.json", "w").write(json.dumps({"message": json.dumps(tried)}))
'''


def test_a_hostile_candidate_gets_nothing_and_the_run_still_decides(tmp_path: Path) -> None:
    copy = tmp_path / "quality_lab"
    shutil.copytree(SUITE, copy, ignore=shutil.ignore_patterns("__pycache__"))
    program = tmp_path / "hostile.py"
    program.write_text(HOSTILE)
    targets = [str(copy / "data" / "answers.json"), str(SUITE / "data" / "answers.json"), str(copy / "graders.py")]
    job = tmp_path / "job"
    done = evalkit_cli("evalkit", "suite=quality_lab", f"suite.path={copy}", f"candidate.program={program}",
                       f"candidate.args=[{','.join(targets)}]", "suite.program.limits.disk_mb=4",
                       f"baseline={BASELINE}", f"hydra.run.dir={job}")
    assert done.returncode in (0, 1), done.stdout + done.stderr  # a decision: go or block, never an error
    assert json.loads((job / "decision.json").read_text())["decision"] in ("go", "review", "block")
    assert (copy / "graders.py").read_bytes() == (SUITE / "graders.py").read_bytes()
    report = json.loads((job / "report.json").read_text())
    assert report["candidate"]["limits"]["disk_mb"] == 4
    for case in report["cases"]:
        tried = json.loads(case["program"]["response"]["message"])
        assert {tried[t] for t in targets} == {"No such file or directory"}, tried
        assert tried["tamper"] == "No such file or directory"
        assert (tried["10 GB"], tried["disk"]) == ("MemoryError", "No space left on device")


def test_a_byte_identical_candidate_outside_the_suite_is_the_same_candidate(lab: Lab, tmp_path: Path) -> None:
    elsewhere = tmp_path / "candidate.py"
    elsewhere.write_bytes((SUITE / "candidate.py").read_bytes())
    done = evalkit_cli("evalkit", "suite=quality_lab", "candidate=prompt_v2", f"candidate.program={elsewhere}",
                       f"hydra.run.dir={tmp_path / 'job'}")
    assert done.returncode == 0, done.stdout + done.stderr
    _, report, _ = lab("candidate=prompt_v2")
    moved = json.loads((tmp_path / "job" / "report.json").read_text())
    assert moved["eval"]["judge_model"] == report["eval"]["judge_model"]


def test_the_checks_fingerprint_covers_what_judges_and_nothing_else(tmp_path: Path) -> None:
    import shutil

    from evalkit.programs.evidence import judging_files
    from evalkit.run.program_runner import _checks_fingerprint

    copy = tmp_path / "quality_lab"
    shutil.copytree(SUITE, copy, ignore=shutil.ignore_patterns("__pycache__", "runs"))
    program = copy / "candidate.py"
    assert list(judging_files(copy, program)) == ["conftest.py", "graders.py", "test_quality_lab.py"]
    first = _checks_fingerprint(copy, program)
    assert _checks_fingerprint(copy, tmp_path / "elsewhere.py") == first  # wherever the program lives
    for name in ("make_data.py", "calibration.py", "candidate.py", "README.md"):  # scripts, the program, docs
        (copy / name).write_text((copy / name).read_text() + "\n# edited\n")
    assert _checks_fingerprint(copy, program) == first
    # a helper the graders import, and a new test file in a subfolder, both judge
    (copy / "helpers.py").write_text("LIMIT = 1\n")
    (copy / "graders.py").write_text((copy / "graders.py").read_text() + "\nfrom helpers import LIMIT\n")
    (copy / "more").mkdir()
    (copy / "more" / "test_more.py").write_text("from . import shared\n")
    (copy / "more" / "shared.py").write_text("X = 1\n")
    assert list(judging_files(copy, program)) == ["conftest.py", "graders.py", "helpers.py", "more/shared.py",
                                                  "more/test_more.py", "test_quality_lab.py"]
    second = _checks_fingerprint(copy, program)
    (copy / "helpers.py").write_text("LIMIT = 2\n")
    assert _checks_fingerprint(copy, program) not in (first, second)
    third = _checks_fingerprint(copy, program)
    (copy / "checks.yaml").write_text("checks:\n  - {name: answered, contains: done}\n")  # declared checks judge
    assert "checks.yaml" in judging_files(copy, program)
    assert _checks_fingerprint(copy, program) != third
