"""A run's identity from its configuration: the eval key, the readable settings its fingerprints cover, and, when
no recording holds that identity, the closest recording that does, named by its first differing setting."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from evalkit.core.config import RunConfig
from evalkit.core.dataset import Dataset
from evalkit.core.errors import RecordingError
from evalkit.core.key import EvalKey, build_key, reply_settings, settings_as_values
from evalkit.run.mismatch import differences
from evalkit.run.recording import Entry, load_recording, recorded_identities

__all__ = ["run_key", "run_settings", "identity_view", "closest_recording", "reusable_calls"]

# Key fields a reader recognises; the fingerprints of the others (components, judge_sha) are named through the
# settings they cover.
_READABLE = ("model", "prompt_version", "prompt_sha", "dataset", "dataset_sha", "judge_model")


def agent_settings(config: RunConfig) -> dict[str, Any]:
    """The loop settings that change an agent suite's outcomes (the `agent` component of its key)."""
    return {"max_steps": config.agent.max_steps, "tool_choice": config.agent.tool_choice}


def simulator_settings(config: RunConfig) -> dict[str, Any] | None:
    """What of the simulated user changes a conversation (the `simulator` component of its key): its model, the
    options sent, its persona prompt, its stop phrase and its turn limit; None when the run simulates no user."""
    sim = config.simulator
    if sim is None:
        return None
    return {"model": sim.name, **reply_settings(sim.options, sim.structured_output), "prompt": sim.prompt,
            "stop": sim.stop, "max_turns": sim.max_turns}


def run_settings(config: RunConfig, tools: dict[str, Any] | None = None) -> dict[str, Any]:
    """What the key's fingerprints cover, by group: the suite's components as composed, and the model's and the
    judge's reply settings (the options sent, the structured-output dialect; the judge's `repeats` when above 1); for
    an agent suite its loop settings (`agent`) and each tool's fingerprint and schema (`tools`:
    evalkit.agents.tools.ToolBox.identity)."""
    settings: dict[str, Any] = dict(config.components)
    if tools is not None:
        settings["agent"] = agent_settings(config)
        settings["tools"] = tools
    if config.model is not None:
        settings["model"] = reply_settings(config.model.options, config.model.structured_output)
    if config.judge is not None:
        settings["judge"] = reply_settings(config.judge.options, config.judge.structured_output)
        if config.judge.repeats > 1:  # absent at 1, so every judge's fingerprint from before repeats stays as it was
            settings["judge"]["repeats"] = config.judge.repeats
    simulator = simulator_settings(config)
    if simulator is not None:
        settings["simulator"] = simulator
    return settings_as_values(settings)


def run_key(config: RunConfig, dataset: Dataset, prompt_text: str,
            tools: dict[str, dict[str, Any]] | None = None) -> EvalKey:
    """The eval key of a model suite's run under `config`; with `tools` (an agent suite's ToolBox.identity), its
    tools by fingerprint and its loop settings as the `agent` component."""
    assert config.model is not None and config.prompt is not None  # validate_config: a model suite has both
    settings = run_settings(config)
    components = {g: (config.choices.get(g, g), s) for g, s in config.components.items()}
    if tools is not None:
        components["agent"] = ("agent", agent_settings(config))
    simulator = simulator_settings(config)
    if simulator is not None:  # a changed persona prompt is a changed component, named as `simulator.prompt`
        components["simulator"] = (config.choices.get("simulator", simulator["model"]), simulator)
    return build_key(
        suite=config.suite.name, dataset=dataset, model=config.model.name,
        deployment=config.model.deployment, api_version=config.model.api_version,
        prompt_version=config.prompt.version, prompt_text=prompt_text,
        judge_model=config.judge.name if config.judge else None,
        components=components, model_settings=settings["model"], judge_settings=settings.get("judge"),
        tools={name: tool["fingerprint"] for name, tool in tools.items()} if tools is not None else None)


def identity_view(key: EvalKey, settings: dict[str, Any]) -> dict[str, Any]:
    """The identity as a reader names it: the readable key fields, then every setting (`model.options.seed`)."""
    fields = key.model_dump(mode="json")
    return {**{name: fields[name] for name in _READABLE}, **settings}


def closest_recording(folder: Path, key: EvalKey, settings: dict[str, Any]) -> tuple[Path, list[str]] | None:
    """The recording in `folder` whose identity differs from this one in the fewest fields, and those differences
    (`model.options.max_tokens: recorded 96, asked 17`); None when the folder holds no other recording."""
    asked = identity_view(key, settings)
    found = [(path, differences(identity_view(other, other_settings), asked))
             for path, other, other_settings in recorded_identities(folder) if other != key]
    if not found:
        return None
    path, differs = min(found, key=lambda item: len(item[1]))
    if not differs:  # equal as far as the settings show (the file kept none): name the key fields that differ
        other = next(k for p, k, _ in recorded_identities(folder) if p == path)
        differs = differences(other.model_dump(mode="json"), key.model_dump(mode="json"))
    return path, differs


def reusable_calls(folder: Path, key: EvalKey) -> dict[tuple[str, str], Entry]:
    """Replies other recordings in `folder` hold that this identity would only ask for again: the same call id and
    request, sent to a model of the same settings (task calls: the model and its `model` component; judge calls:
    the judge and its `judge_sha`). A prompt edited in place then records only the calls it changed. Only replies
    a live run recorded are taken: an authored fixture's never pass for a model's."""
    found: dict[tuple[str, str], Entry] = {}
    for path, other, _ in recorded_identities(folder):
        same_model = other.model == key.model and other.components.get("model") == key.components.get("model")
        same_judge = key.judge_model is not None and (other.judge_model, other.judge_sha) == (key.judge_model,
                                                                                             key.judge_sha)
        if other == key or not (same_model or same_judge):
            continue
        try:
            recording = load_recording(path, other)
        except RecordingError:
            continue
        if recording.provenance.kind != "recorded":
            continue
        for call_id, entry in recording.calls.items():
            if entry.failure is None and (same_model if call_id.startswith("task/") else same_judge):
                found.setdefault((call_id, entry.request_sha), entry)
    return found
