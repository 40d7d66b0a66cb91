"""The Inspect task behind evalkit's Inspect fixtures: six arithmetic questions answered by mockllm/model.

The "model" is a table of answers (custom_outputs as a callable), so every run is deterministic and offline.
"""

from inspect_ai import Task, task
from inspect_ai.dataset import MemoryDataset, Sample
from inspect_ai.scorer import includes, match
from inspect_ai.solver import generate

QUESTIONS = {"q1": ("What is 2+2?", "4"), "q2": ("What is 3*3?", "9"), "q3": ("What is 10-7?", "3"),
             "q4": ("What is 12/4?", "3"), "q5": ("What is 5+6?", "11"), "q6": ("What is 7*8?", "56")}


@task
def arith(scorer: str = "match", changed_dataset: bool = False) -> Task:
    questions = dict(QUESTIONS)
    if changed_dataset:  # one target corrected, one question added: another dataset
        questions["q6"] = ("What is 7*9?", "63")
        questions["q7"] = ("What is 9+9?", "18")
    samples = [Sample(id=sid, input=question, target=target) for sid, (question, target) in questions.items()]
    return Task(dataset=MemoryDataset(samples, name="arith-questions"), solver=generate(),
                scorer=match() if scorer == "match" else includes())
