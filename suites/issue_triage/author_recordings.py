"""Write the suite's shipped recordings from hand-authored replies.

No model can be reached where evalkit is developed, so these recordings are AUTHORED FIXTURES: the
replies below were written by hand to reproduce the decisions of the issue-triage gate (the seed's
step 4 table), and every file says so in its provenance. Replace them with real recordings by
running `python -m evalkit mode=live model=... prompt=... dataset=...` against a real model.

Usage (from the project root):  python suites/issue_triage/author_recordings.py
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import yaml

from evalkit.core.config import ModelConfig
from evalkit.core.dataset import load_dataset
from evalkit.core.key import build_key, recording_path, reply_settings
from evalkit.records.call import Reply
from evalkit.run.recording import Entry, Provenance, Recording, request_fingerprint, save_recording
from evalkit.run.suite import load_task

PROJECT_ROOT = Path(__file__).resolve().parents[2]  # this repository: the examples project

SUITE = Path(__file__).resolve().parent
NOTE = ("authored fixture: replies written by hand for evalkit's example suite "
        "(suites/issue_triage/author_recordings.py), not produced by any model")

# Correct summaries written for prompt v1 (keep the command or file) and v2 (also keep the goal).
SUMMARY_V1 = {
    "import-drops-tasks": "tracker import tasks.csv reports success but silently drops 88 of 500 tasks.",
    "where-is-data": "Reporter asks where tracker stores its database, to make a backup before reinstalling.",
    "token-leak": "tracker sync --debug writes the API token in plain text to debug.log.",
    "sync-keyerror": "tracker sync crashes with KeyError 'due' on tasks without a due date.",
    "sort-by-due": "Add a --sort due option to tracker list.",
    "readme-tags-flag": "README shows tracker add --tag, but the real flag is --tags.",
    "restore-archived": "How to restore a task that was archived by mistake.",
    "export-json": "Request JSON output for tracker export, which only writes CSV today.",
    "edit-due-yesterday": "tracker edit --due tomorrow sets the due date to yesterday.",
    "config-keys-undocumented": "The keys of config.toml, such as week_start, are not documented.",
    "rm-typo-deletes-all": "tracker rm with a mistyped ID deleted every task in the project without confirmation.",
    "slow-list": "tracker list takes about 8 seconds with 10,000 tasks.",
    "tags-lost-on-edit": "tracker edit --title removes the task's tags.",
    "week-start-question": "Asks whether the week in tracker cal can start on Monday.",
}
SUMMARY_V2 = SUMMARY_V1 | {
    "sort-by-due": "Add a --sort due option to tracker list, to see the tasks due first.",
    "export-json": "Request JSON output for tracker export, to feed tasks to another tool.",
    "tags-lost-on-edit": "tracker edit --title removes the task's tags; editing the title should keep them.",
    "week-start-question": "Asks whether the week in tracker cal can start on Monday, to plan Monday to Sunday.",
}
# The smaller model's two mistakes on prompt v1 (the replies the seed's live run printed).
GEMMA_V1_DIFF = {
    "import-drops-tasks": {"priority": "p1", "summary": "tracker import tasks.csv fails to import all 500 rows, "
                                                        "dropping tasks silently."},
    "where-is-data": {"summary": "Where does tracker store its database on disk?"},
}

# (model option, prompt version, dataset version, the model's deviations from the correct reply)
AUTHORED = [
    ("gemini-flash", "v1", "v1", {}),
    ("gemini-flash", "v2", "v1", {}),
    ("gemma4", "v1", "v1", GEMMA_V1_DIFF),
    ("gemma4", "v2", "v1", {}),
    ("gemini-flash", "v1", "v2", {}),
    ("gemini-flash", "v2", "v2", {}),
]


def model_config(option: str, group: str = "model") -> ModelConfig:
    data = yaml.safe_load((PROJECT_ROOT / "evalkit" / "conf" / group / f"{option}.yaml").read_text(encoding="utf-8"))
    return ModelConfig.model_validate(data)


def author(model_option: str, prompt_version: str, dataset_version: str, diff: dict[str, dict[str, str]]) -> Path:
    model, judge = model_config(model_option), model_config("gemini-flash", "judge")
    dataset = load_dataset(SUITE / "datasets" / f"{dataset_version}.json")
    prompt = (SUITE / "prompts" / f"{prompt_version}.txt").read_text(encoding="utf-8")
    task = load_task(SUITE)
    summaries = SUMMARY_V2 if prompt_version == "v2" else SUMMARY_V1
    settings = {"judge": reply_settings(judge.options, judge.structured_output),
                "model": reply_settings(model.options, model.structured_output)}
    key = build_key(suite="issue_triage", dataset=dataset, model=model.name, prompt_version=prompt_version,
                    prompt_text=prompt, judge_model=judge.name, components={}, model_settings=settings["model"],
                    judge_settings=settings["judge"])
    calls: dict[str, Entry] = {}
    assert task.build_judge is not None
    for case in dataset.cases:
        reply = {"label": case.label, "priority": case.priority, "summary": summaries[case.id]}
        reply |= diff.get(case.id, {})
        text = json.dumps(reply)
        request = task.build_task(case, prompt, model)
        calls[f"task/{case.id}"] = _entry(request, text)
        for metric, judge_request in task.build_judge(case, text, judge).items():
            verdict = {"faithful": True, "reason": "Every statement in the summary is stated in the issue."}
            calls[f"judge/{metric}/{case.id}"] = _entry(judge_request, json.dumps(verdict))
    recording = Recording(key=key, settings=settings, provenance=Provenance(kind="authored", note=NOTE), calls=calls)
    path = recording_path(key, PROJECT_ROOT / "recordings")
    save_recording(recording, path)
    return path


def _entry(request, text: str) -> Entry:  # type: ignore[no-untyped-def]
    return Entry(request_sha=request_fingerprint(request), request=request,
                 reply=Reply(text=text, stop_reason="stop"))


if __name__ == "__main__":
    for row in AUTHORED:
        print(author(*row).relative_to(PROJECT_ROOT))
    sys.exit(0)
