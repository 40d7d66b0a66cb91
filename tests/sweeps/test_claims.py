"""A sweep's jobs may not share a saved report or a trace export: the second job to claim a path is refused, naming
the first, and `${hydra:job.num}` gives each job its own (evalkit/sweeps/claims.py)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from helpers.compose import composed

from evalkit.core.config import RunConfig, validate_config
from evalkit.core.errors import InputError
from evalkit.sweeps.claims import CLAIMS, claim_outputs, clear_claims

pytestmark = pytest.mark.usefixtures("hydra_conf")


def config_writing(save: Path | None = None, export: Path | None = None) -> RunConfig:
    writes = [f"run.save_report={save}"] * bool(save) + [f"run.otel_export={export}"] * bool(export)
    return validate_config(composed(*writes), {})


def test_the_second_job_to_claim_a_saved_report_is_refused_naming_the_first(tmp_path):
    sweep = tmp_path / "sweep"
    shared = config_writing(save=tmp_path / "base.json")
    claim_outputs(shared, sweep, 0)
    claim_outputs(shared, sweep, 0)  # the same job again (a requeued task) keeps its claim
    with pytest.raises(InputError) as refused:
        claim_outputs(shared, sweep, 1)
    message = str(refused.value)
    assert message.startswith(f"run.save_report={tmp_path / 'base.json'}: job 0 of this sweep writes this file too")
    assert "run.save_report='base-${hydra:job.num}.json'" in message
    claim_outputs(config_writing(save=tmp_path / "base-1.json"), sweep, 1)  # a file of its own
    assert len(list((sweep / CLAIMS).glob("*.json"))) == 2 and not list((sweep / CLAIMS).glob(".draft-*"))


def test_a_trace_export_is_claimed_too_and_a_new_sweep_starts_over(tmp_path):
    sweep = tmp_path / "sweep"
    traced = config_writing(export=tmp_path / "calls.otlp.json")
    claim_outputs(traced, sweep, 2)
    with pytest.raises(InputError, match=r"run\.otel_export=.*: job 2 of this sweep writes this file too"):
        claim_outputs(traced, sweep, 0)
    clear_claims(sweep)
    claim_outputs(traced, sweep, 0)
    claims = [json.loads(p.read_text()) for p in (sweep / CLAIMS).glob("*.json")]
    assert claims == [{"job": 0, "setting": "run.otel_export", "path": str(tmp_path / "calls.otlp.json")}]


def test_an_unreadable_claim_is_another_jobs(tmp_path):
    sweep = tmp_path / "sweep"
    shared = config_writing(save=tmp_path / "base.json")
    claim_outputs(shared, sweep, 0)
    (claim,) = (sweep / CLAIMS).glob("*.json")
    claim.write_text("{")
    with pytest.raises(InputError, match="another job of this sweep writes this file too"):
        claim_outputs(shared, sweep, 0)


def test_a_run_may_not_save_its_report_and_its_trace_to_one_file(run_evalkit, tmp_path):
    done = run_evalkit(f"run.save_report={tmp_path / 'x.json'}", f"run.otel_export={tmp_path / 'x.json'}")
    assert done.returncode == 3, done.stdout + done.stderr
    assert f"run.otel_export={tmp_path / 'x.json'}: is the file run.save_report names too" in done.stderr
    assert not (tmp_path / "x.json").exists()


@pytest.mark.slow
def test_a_sweep_saving_every_job_to_one_file_keeps_the_first_and_refuses_the_rest(run_evalkit, tmp_path):
    done = run_evalkit("-m", "prompt=v1,v2", f"run.save_report={tmp_path / 'base.json'}")
    assert done.returncode == 3, done.stdout + done.stderr
    rows = json.loads((tmp_path / "sweep" / "summary.json").read_text())
    assert [r["exit_code"] for r in rows] == [0, 3]
    assert "job 0 of this sweep writes this file too" in rows[1]["error"]
    saved = json.loads((tmp_path / "base.json").read_text())
    assert saved["eval"]["prompt_version"] == "v1"  # job 0's report, never replaced by job 1's
    # one file per job: both saved, the sweep decides as usual
    done = run_evalkit("-m", "prompt=v1,v2", f"run.save_report={tmp_path}/base-${{hydra:job.num}}.json")
    assert done.returncode == 0, done.stdout + done.stderr
    assert [json.loads((tmp_path / f"base-{n}.json").read_text())["eval"]["prompt_version"] for n in (0, 1)] == [
        "v1", "v2"]
