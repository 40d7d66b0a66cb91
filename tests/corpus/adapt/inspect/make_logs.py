"""Make evalkit's Inspect fixtures with the real tool: `python make_logs.py OUTDIR` (inspect-ai installed).

Each log is one `inspect_ai.eval()` run of arith_task.py on mockllm/model, whose answers come from a table
(custom_outputs as a callable), so the logs differ only where the table or the task's options do.
"""

from __future__ import annotations

import shutil
import sys
import tempfile
from collections import Counter
from pathlib import Path

from inspect_ai import eval as inspect_eval
from inspect_ai.model import ModelOutput, ModelUsage, get_model

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from arith_task import QUESTIONS, arith  # noqa: E402

RIGHT = {question: target for question, target in QUESTIONS.values()}
RIGHT.update({"What is 7*9?": "63", "What is 9+9?": "18"})
BASELINE = {**RIGHT, "What is 7*8?": "54"}  # q6 wrong
CANDIDATE = {**RIGHT, "What is 2+2?": "5"}  # q1 regresses, q6 fixed
# epochs: the candidate answers q3 right on 2 of 10 tries (a regression) and q5 on 9 of 10 (within noise)
FLAKY = {"What is 10-7?": ["3", "3", "4", "4", "4", "4", "4", "4", "4", "4"],
         "What is 5+6?": ["11", "11", "11", "11", "11", "11", "11", "11", "11", "12"]}
FAILING = "What is 12/4?"  # the question whose model call raises in the errored and failed runs


def model(answers: dict[str, str], *, flaky: dict[str, list[str]] | None = None, raises: bool = False):  # noqa: ANN201
    asked: Counter[str] = Counter()

    def answer(messages, tools, tool_choice, config):  # noqa: ANN001, ANN202
        question = messages[-1].text
        if raises and question == FAILING:
            raise RuntimeError("mock model failure")
        tries = (flaky or {}).get(question)
        text = tries[asked[question] % len(tries)] if tries else answers[question]
        asked[question] += 1
        output = ModelOutput.from_content(model="mockllm/model", content=f"ANSWER: {text}")
        # usage given, so mockllm does not count tokens with tiktoken (which downloads its encoding: offline here)
        output.usage = ModelUsage(input_tokens=len(question.split()), output_tokens=2, total_tokens=len(question.split()) + 2)
        return output

    return get_model("mockllm/model", custom_outputs=answer, memoize=False)


RUNS = {
    "baseline.eval": dict(answers=BASELINE),
    "candidate.eval": dict(answers=CANDIDATE),
    "baseline.json": dict(answers=BASELINE, log_format="json"),
    "candidate.json": dict(answers=CANDIDATE, log_format="json"),
    "dataset-changed.eval": dict(answers=CANDIDATE, task_args={"changed_dataset": True}),
    "scorer-changed.eval": dict(answers=CANDIDATE, task_args={"scorer": "includes"}),
    "baseline-epochs.eval": dict(answers=RIGHT, epochs=10),
    "candidate-epochs.eval": dict(answers=RIGHT, epochs=10, flaky=FLAKY),
    "errored.eval": dict(answers=CANDIDATE, raises=True, fail_on_error=False),
    "failed.eval": dict(answers=CANDIDATE, raises=True, fail_on_error=True),
}


def make(name: str, out: Path, *, answers: dict[str, str], log_format: str = "eval", epochs: int = 1,
         task_args: dict[str, object] | None = None, flaky: dict[str, list[str]] | None = None,
         raises: bool = False, fail_on_error: bool | None = None) -> None:
    with tempfile.TemporaryDirectory() as logs:
        inspect_eval(arith(**(task_args or {})), model=model(answers, flaky=flaky, raises=raises), epochs=epochs,
                     log_dir=logs, log_format=log_format, display="none", fail_on_error=fail_on_error,
                     retry_on_error=0)
        (written,) = Path(logs).glob(f"*.{log_format}")
        shutil.copyfile(written, out / name)


if __name__ == "__main__":
    target = Path(sys.argv[1])
    target.mkdir(parents=True, exist_ok=True)
    for name, settings in RUNS.items():
        make(name, target, **settings)  # type: ignore[arg-type]
