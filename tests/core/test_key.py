"""The eval key: pinned per key version, and blind to transport settings."""

from __future__ import annotations

from pathlib import Path

import pytest

from evalkit.core.dataset import load_dataset
from evalkit.core.fingerprint import fingerprint
from evalkit.core.key import (
    KEY_VERSION,
    EvalKey,
    build_key,
    identity_digest,
    recording_path,
    reply_settings,
    safe_name,
)

PROJECT_ROOT = Path(__file__).resolve().parents[2]  # this repository: the examples project

SUITE = PROJECT_ROOT / "suites/issue_triage"


def key_for(prompt: str = "v1", dataset: str = "v1", model: str = "gemini-3.8-flash", options: dict | None = None,
            dialect: str | None = None, judge_options: dict | None = None, **components) -> EvalKey:
    """The key of the shipped default run (gemini-flash's options, the pinned judge's), changed as asked."""
    sent = {"temperature": 0, "thinking_level": "low", **(options or {})}
    return build_key(suite="issue_triage", dataset=load_dataset(SUITE / f"datasets/{dataset}.json"), model=model,
                     prompt_version=prompt, prompt_text=(SUITE / f"prompts/{prompt}.txt").read_text(),
                     judge_model="gemini-3.8-flash", components=components,
                     model_settings=reply_settings(sent, dialect),
                     judge_settings=reply_settings({"temperature": 0, **(judge_options or {})}, None))


def test_key_version_2_is_pinned():
    assert KEY_VERSION == 2
    assert key_for().model_dump() == {
        "key_version": 2, "suite": "issue_triage", "dataset": "issue-triage@1",
        "dataset_sha": fingerprint((SUITE / "datasets/v1.json").read_bytes()),
        "model": "gemini-3.8-flash", "prompt_version": "v1", "prompt_sha": "01859a9d3df1",
        "judge_model": "gemini-3.8-flash", "judge_sha": "08f78ee2aec8",
        "components": {"model": "gemini-3.8-flash@8eb3e7a90396"}}


def test_every_option_sent_and_the_dialect_change_the_key_and_load_options_do_not():
    base = key_for()
    for changed in ({"temperature": 0.8}, {"max_tokens": 96}, {"seed": 7}, {"top_p": 0.9}):
        assert key_for(options=changed) != base, changed
    assert key_for(dialect="json_object") != base
    assert key_for(judge_options={"temperature": 0.5}).judge_sha != base.judge_sha
    # llama.cpp's load options say how the runtime computes, not what it is asked
    assert key_for(options={"n_ctx": 512, "n_batch": 8, "n_ubatch": 1, "n_threads": 2}) == base
    paths = {recording_path(key_for(options={"temperature": t}), Path("r")) for t in (0, 0.8)}
    assert len(paths) == 2


def test_prompt_shas_match_the_seed():
    # sha256 of the prompt text, as the shipped recorded runs give them
    assert key_for("v1").prompt_sha == "01859a9d3df1"
    assert key_for("v2").prompt_sha == "573cd471224c"


def test_dataset_sha_follows_the_file_bytes(tmp_path):
    data = (SUITE / "datasets/v1.json").read_bytes()
    (tmp_path / "d.json").write_bytes(data.replace(b"412 of the 500", b"411 of the 500"))
    assert load_dataset(tmp_path / "d.json").sha != load_dataset(SUITE / "datasets/v1.json").sha


def test_components_fingerprint_their_settings():
    a = key_for(retriever=("default", {"k": 3}))
    b = key_for(retriever=("default", {"k": 1}))
    assert a.components["retriever"].startswith("default@") and a.components != b.components
    assert recording_path(a, Path("r")) != recording_path(b, Path("r"))


def test_the_key_has_no_transport_fields():
    # base_url, timeouts, credentials and output paths must never orphan a recording
    assert set(EvalKey.model_fields) == {"key_version", "suite", "dataset", "dataset_sha", "model", "deployment",
                                         "api_version", "prompt_version", "prompt_sha", "judge_model", "judge_sha",
                                         "components", "tools"}


def test_an_azure_deployment_and_api_version_join_the_key_and_name_the_recording():
    plain = key_for(model="gpt-4o")
    azure = build_key(suite="issue_triage", dataset=load_dataset(SUITE / "datasets/v1.json"), model="gpt-4o",
                      deployment="triage-prod", api_version="2024-10-21", prompt_version="v1",
                      prompt_text=(SUITE / "prompts/v1.txt").read_text(), judge_model="gemini-3.8-flash",
                      components={}, model_settings=reply_settings({"temperature": 0, "thinking_level": "low"}, None),
                      judge_settings=reply_settings({"temperature": 0}, None))
    assert azure.model_dump() == plain.model_dump() | {"deployment": "triage-prod", "api_version": "2024-10-21"}
    newer = azure.model_copy(update={"api_version": "2025-04-01-preview"})
    assert newer != azure
    # the recording's name is the readable part and a digest of the whole key, which covers both settings
    assert recording_path(azure, Path("r")).name.startswith("gpt-4o-v1-issue-triage@1-")
    assert len({recording_path(k, Path("r")) for k in (plain, azure, newer)}) == 3


def test_providers_without_deployments_leave_the_key_as_it_was():
    # absent, not null: the keys and recordings of every other provider are byte for byte what they were
    assert "deployment" not in key_for().model_dump(mode="json")
    assert "api_version" not in key_for().model_dump_json()


@pytest.mark.parametrize("text, safe", [("gemma4:e2b", "gemma4-e2b"), ("a/b\\c", "a-b-c"),
                                         ("issue-triage@1", "issue-triage@1"), ("..", "_"), ("x y?*", "x-y")])
def test_safe_names(text, safe):
    assert safe_name(text) == safe


def test_recording_path_is_a_readable_name_and_a_digest_of_the_whole_key():
    key = key_for(model="gemma4:e2b")
    assert recording_path(key, Path("recordings")) == Path(
        f"recordings/issue_triage/gemma4-e2b-v1-issue-triage@1-{identity_digest(key)}.json")
    # the shipped default run's recording, pinned: a change here orphans every committed recording
    assert recording_path(key_for(), Path("r")).name == "gemini-3.8-flash-v1-issue-triage@1-85d32d9a.json"
    paths = {recording_path(key_for(p, d, m), Path("r")) for p in ("v1", "v2") for d in ("v1", "v2")
             for m in ("gemma4:e2b", "gemini-3.8-flash")}
    assert len(paths) == 8


def test_a_number_is_one_setting_however_it_is_spelled():
    assert key_for(retriever=("default", {"min_margin": 0})) == key_for(retriever=("default", {"min_margin": 0.0}))
    assert key_for(retriever=("default", {"k": [1, 2.0]})) == key_for(retriever=("default", {"k": [1, 2]}))
    assert key_for(retriever=("default", {"min_margin": 0})) != key_for(retriever=("default", {"min_margin": 0.5}))
