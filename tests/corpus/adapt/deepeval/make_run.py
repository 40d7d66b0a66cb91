"""Makes one DeepEval test run of this folder's fixture (see README.md): python make_run.py VARIANT OUT_FOLDER.

Runs deepeval.evaluate() offline on fixed outputs with two non-LLM metrics (DeepEval's ExactMatchMetric and a
custom CityMetric), with DisplayConfig(results_folder=...), so DeepEval writes its own test_run_<timestamp>.json
there; this script then renames that file to VARIANT.json. Variants differ in known ways:
baseline; candidate (a regression on france, a fix on italy); dataset-changed (a fourth case);
metric-changed (CityMetric's threshold 0.5 -> 1.0); metric-error (CityMetric raises on japan, ignore_errors=True).
"""

import sys
from pathlib import Path

from deepeval import evaluate
from deepeval.evaluate.configs import AsyncConfig, DisplayConfig, ErrorConfig
from deepeval.metrics import BaseMetric, ExactMatchMetric
from deepeval.test_case import LLMTestCase


class CityMetric(BaseMetric):
    """Scores 1.0 when the output names the expected city (any case), 0.5 for a lower-case mention, else 0."""

    def __init__(self, threshold: float = 0.5, fail_on: str | None = None):
        self.threshold = threshold
        self.fail_on = fail_on
        self.async_mode = False

    def measure(self, test_case: LLMTestCase, *args: object, **kwargs: object) -> float:
        if self.fail_on and self.fail_on in test_case.input:
            raise RuntimeError(f"city lookup unavailable for {self.fail_on}")
        city = test_case.expected_output.split()[-1].rstrip(".")
        if city in test_case.actual_output:
            self.score = 1.0
        elif city.lower() in test_case.actual_output.lower():
            self.score = 0.5
        else:
            self.score = 0.0
        self.reason = f"city {city!r} scored {self.score}"
        self.success = self.score >= self.threshold
        return self.score

    async def a_measure(self, test_case: LLMTestCase, *args: object, **kwargs: object) -> float:
        return self.measure(test_case)

    def is_successful(self) -> bool:
        return bool(self.success)

    @property
    def __name__(self) -> str:
        return "City"


CASES = {  # name: (input, expected output, baseline output, candidate output)
    "france": ("What is the capital of France?", "The capital is Paris.", "The capital is Paris.", "The capital is paris."),
    "italy": ("What is the capital of Italy?", "The capital is Rome.", "Rome, I think.", "The capital is Rome."),
    "japan": ("What is the capital of Japan?", "The capital is Tokyo.", "The capital is Tokyo.", "The capital is Tokyo."),
}
EXTRA = {"kenya": ("What is the capital of Kenya?", "The capital is Nairobi.", "The capital is Nairobi.", "")}


def main(variant: str, out: Path) -> None:
    cases = dict(CASES, **EXTRA) if variant == "dataset-changed" else CASES
    side = 3 if variant == "candidate" else 2
    test_cases = [LLMTestCase(name=name, input=row[0], expected_output=row[1], actual_output=row[side])
                  for name, row in cases.items()]
    city = CityMetric(threshold=1.0 if variant == "metric-changed" else 0.5,
                      fail_on="Japan" if variant == "metric-error" else None)
    folder = out / f".{variant}"
    evaluate(test_cases, metrics=[ExactMatchMetric(), city],
             hyperparameters={"model": "fixed-outputs", "prompt": "capital-v2" if variant == "candidate" else "capital-v1"},
             async_config=AsyncConfig(run_async=False),
             display_config=DisplayConfig(print_results=False, show_indicator=False, results_folder=str(folder),
                                          inspect_after_run=False),
             error_config=ErrorConfig(ignore_errors=variant == "metric-error"))
    written = sorted(folder.glob("test_run_*.json"))
    if len(written) != 1:
        sys.exit(f"expected one test_run_*.json in {folder}, found {written}")
    written[0].rename(out / f"{variant}.json")


if __name__ == "__main__":
    main(sys.argv[1], Path(sys.argv[2]))
