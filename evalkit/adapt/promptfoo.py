"""The promptfoo source: `promptfoo eval -o results.json` read into a neutral run.

promptfoo evaluates test cases (vars plus assertions) through prompts and providers and writes one row per
test x prompt x provider (x repeat), each with the row's grading result and one component result per assertion.
Here each assertion of a test case is an evalkit test `<task>::<assertion type>[<test>]` (the test's
`description`, else a fingerprint of its vars; the prompt label and provider are added when the file holds
several), `--repeat N` rows of one test become repeats of that test (and so do the rows of a test written
identically several times in the config, told apart only by `testIdx`: said in the notes; different tests that
share an id are refused, saying so), and a row promptfoo records as an error
(`failureReason: 2`, the provider failed) makes every assertion of its test `error`, listed as unscored.
The eval key: the task is the config's `description`; promptfoo records no dataset hash, so the dataset is the
fingerprint of the tests' vars; the scorer is every test's assertions with their values, weights and thresholds
(and `defaultTest`'s); the model is the providers; the prompt is the prompts' raw text. Results format version 3
(what promptfoo has written since 2024) is read; another version is refused, naming it.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from evalkit.adapt.framework import Source
from evalkit.adapt.neutral import AdaptedTest, NeutralRun, SourceKey, fingerprint_inputs
from evalkit.core.errors import InputError
from evalkit.core.files import read_text_sha256
from evalkit.core.fingerprint import canonical_json, fingerprint
from evalkit.core.parsing import json_object, parse_json, refuse_lone_surrogates

__all__ = ["FORMAT_VERSION", "SOURCE", "read_promptfoo"]

FORMAT_VERSION = 3
"""`results.version` of `promptfoo eval -o results.json` that this adapter reads."""

_ERROR = 2  # promptfoo's ResultFailureReason: 0 none, 1 assertion failed, 2 error (the provider or the eval failed)


def read_promptfoo(path: Path) -> NeutralRun:
    """Read promptfoo's `-o results.json` output (format version 3) into a neutral run."""
    text, digest = read_text_sha256(path, "promptfoo results")
    where = str(path)
    data = json_object(parse_json(text, where, "promptfoo results"), where, _NOT_RESULTS)
    refuse_lone_surrogates(data, where)
    # promptfoo before 0.92 put the rows on top (with the table, or under a top-level version below 3)
    if isinstance(data.get("results"), list) and ("table" in data or data.get("version") in (1, 2)):
        written = f"version {data['version']}" if "version" in data else "without a version (promptfoo of 2023)"
        raise InputError(f"{where}: promptfoo results format {written}, its rows at the top level, as promptfoo "
                         f"before 0.92 (October 2024) wrote them; evalkit reads format version {FORMAT_VERSION}: "
                         "rerun `promptfoo eval -o results.json` with a current promptfoo")
    results = json_object(data.get("results"), f"{where}: results", _NOT_RESULTS)
    version = results.get("version")
    if version != FORMAT_VERSION:
        raise InputError(f"{where}: results.version is {version!r}; evalkit reads promptfoo results version "
                         f"{FORMAT_VERSION} (written by promptfoo 0.92, October 2024, and later): rerun "
                         "`promptfoo eval -o results.json` with a current promptfoo")
    rows = results.get("results")
    if not isinstance(rows, list) or not rows:
        raise InputError(f"{where}: results.results holds no rows; was the eval cancelled before it wrote any?")
    # every row an object before any is read (a null row is a broken file, not a crash)
    rows = [json_object(row, f"{where}: results.results[{index}]", _NOT_RESULTS) for index, row in enumerate(rows)]
    config = _optional_object(data, "config")
    _check_complete(results, rows, where)
    repeat = _repeat(data, where)
    many = len({(_prompt(row, where), _provider(row, where)) for row in rows}) > 1
    groups: dict[str, list[Mapping[str, Any]]] = {}
    cases: dict[str, Mapping[str, Any]] = {}
    dataset: dict[str, Mapping[str, Any]] = {}  # by test, whatever prompts and providers ran it
    test_cases = [json_object(row.get("testCase"), f"{where}: results.results[{index}].testCase", _NOT_RESULTS)
                  for index, row in enumerate(rows)]
    shared_vars = _shared_vars(rows, test_cases)
    for row, case in zip(rows, test_cases, strict=True):
        sample = dataset_id = _sample_id(row, case, shared_vars)
        if many:
            sample = f"{sample}|{_prompt(row, where)}|{_provider(row, where)}"
        groups.setdefault(sample, []).append(row)
        cases[sample] = dataset[dataset_id] = case
    written_again: list[str] = []
    for sample, group in groups.items():
        if len(group) == repeat:
            continue
        if _identical_tests(group, repeat):
            written_again.append(f"{sample[:80]!r} ({len(group) // repeat} times)")
            continue
        indexes = len({row.get("testIdx") for row in group})
        if repeat == 1 and indexes > 1:
            described = isinstance(cases[sample].get("description"), str) and cases[sample]["description"]
            shared = "a description" if described else "their vars, and have no description"
            what = (f"is {indexes} different tests that share {shared} (testIdx tells them apart); give each "
                    "test a unique `description`")
        else:
            what = (f"has {len(group)} rows but the run repeated each test {repeat} times (runtimeOptions.repeat): "
                    "a mix of repeats, or an edited file")
        raise InputError(f"{where}: test {sample!r} {what}")
    task = str(config.get("description") or "promptfoo")
    tests: list[AdaptedTest] = []
    errored: list[str] = []
    for sample in sorted(groups):
        found, failed = _assertions(groups[sample], cases[sample], task, sample, where)
        tests.extend(found)
        if failed:
            errored.append(sample)
    passes = sum(1 for row in rows if row.get("success") is True)
    scores = [row["score"] for row in rows if isinstance(row.get("score"), int | float)]
    notes = ["promptfoo's row scores and named scores are not gated (pass_rate and mean_score are reported as "
             "metrics); each assertion's pass or fail is gated"]
    if any(kind == "assert-set" for case in cases.values() if isinstance(case.get("assert"), list)
           for kind, _ in _flattened(case["assert"])):
        notes.append("an assert-set is gated as one test on its own threshold (`assert-set`) and each of its "
                     "assertions as a test of its own (`assert-set/<type>`)")
    if repeat > 1:
        notes.append(f"each test ran {repeat} times (--repeat {repeat}); its assertions are gated as repeats")
    if shared_vars:
        notes.append(f"{len(shared_vars)} sets of vars are shared by different tests without a description (a red "
                     "team's strategies, or tests that differ only in their assertions): each such test is told apart "
                     "by a fingerprint of its whole test case, `vars:<vars>/test:<test case>`")
    if written_again:
        notes.append("tests written identically several times in the config (told apart only by testIdx) are "
                     f"read as repeats of one test: {', '.join(written_again[:5])}")
    key = SourceKey(
        task=task, dataset=f"tests of {task}",
        dataset_sha=_dataset(dataset),
        dataset_sha_from="sample inputs",
        scorer=_scorer(dataset, config),
        model=", ".join(sorted({_provider(row, where) for row in rows})),
        prompt=_templates(results, where),
        prompt_version=", ".join(sorted({_prompt(row, where) for row in rows})))
    metadata = _optional_object(data, "metadata")
    return NeutralRun(
        source="promptfoo", tool=f"promptfoo {metadata.get('promptfooVersion', 'unknown version')}", key=key,
        tests=tuple(tests),
        metrics={"pass_rate": passes / len(rows), "mean_score": sum(scores) / len(scores) if scores else None},
        errored=tuple(errored), notes=tuple(notes),
        provenance={"file_sha256": digest, "format_version": version, "run_id": data.get("evalId")})




_NOT_RESULTS = "; is this the output of `promptfoo eval -o results.json`?"


def _optional_object(data: Mapping[str, Any], field: str) -> dict[str, Any]:
    value = data.get(field)
    return value if isinstance(value, dict) else {}


def _check_complete(results: Mapping[str, Any], rows: list[Any], where: str) -> None:
    """Refuse a run whose rows disagree with promptfoo's own count of them (a cancelled or edited run)."""
    stats = results.get("stats")
    if not isinstance(stats, dict):
        raise InputError(f"{where}: results.stats is missing; is the file truncated?")
    # promptfoo before 0.101 (December 2024) counted errors among the failures and wrote no `errors`
    counts = [stats.get(name, 0 if name == "errors" else None) for name in ("successes", "failures", "errors")]
    if not all(isinstance(count, int) for count in counts):
        raise InputError(f"{where}: results.stats lacks successes, failures or errors counts")
    if sum(counts) != len(rows):  # type: ignore[arg-type]
        raise InputError(f"{where}: results.stats counts {sum(counts)} rows but results.results holds "  # type: ignore[arg-type]
                         f"{len(rows)}; an interrupted or edited run: rerun the eval")
    if stats.get("errors") == len(rows):
        first = next((row.get("error") for row in rows if isinstance(row, dict) and row.get("error")), None)
        raise InputError(f"{where}: every row of the run errored (first error: {str(first)[:120]!r}); a failed run "
                         "is not a verdict: fix the provider and rerun")


def _repeat(data: Mapping[str, Any], where: str) -> int:
    repeat = _optional_object(data, "runtimeOptions").get("repeat", 1)
    if not isinstance(repeat, int) or isinstance(repeat, bool) or repeat < 1:
        raise InputError(f"{where}: runtimeOptions.repeat is {repeat!r}; expected a positive whole number")
    return repeat


def _identical_tests(group: list[Mapping[str, Any]], repeat: int) -> bool:
    """Whether a group's rows are one test written several times in the config (the same vars and assertions,
    each copy with its own testIdx, each run `repeat` times): a way to sample a model again, read as repeats."""
    indexes = {row.get("testIdx") for row in group}
    return (None not in indexes and len(indexes) > 1 and len(group) % repeat == 0
            and len({canonical_json(row.get("testCase")) for row in group}) == 1)


def _sample_id(row: Mapping[str, Any], case: Mapping[str, Any], shared_vars: frozenset[str] = frozenset()) -> str:
    """A test's id: its description, else a fingerprint of its vars (promptfoo's tests have no other id), and of its
    whole test case where different tests share those vars."""
    description = case.get("description")
    if isinstance(description, str) and description:
        return description
    by_vars = f"vars:{fingerprint(case.get('vars', row.get('vars')))}"
    return f"{by_vars}/test:{fingerprint(canonical_json(case))}" if by_vars in shared_vars else by_vars


def _shared_vars(rows: Sequence[Mapping[str, Any]], cases: Sequence[Mapping[str, Any]]) -> frozenset[str]:
    """The vars ids that different undescribed tests share: test cases under different testIdx that differ in their
    assertions, provider or metadata (a red team's strategies run one attack's vars several ways). A test written
    identically twice is one test read as repeats; tests sharing a description are refused, the description being
    the name their author chose."""
    by_vars: dict[str, set[str]] = {}
    for row, case in zip(rows, cases, strict=True):
        if not (isinstance(case.get("description"), str) and case["description"]):
            by_vars.setdefault(_sample_id(row, case), set()).add(canonical_json(case))
    return frozenset(ident for ident, distinct in by_vars.items() if len(distinct) > 1)


def _prompt(row: Mapping[str, Any], where: str) -> str:
    """The label of the row's prompt."""
    prompt = row.get("prompt")
    if not isinstance(prompt, dict):
        raise InputError(f"{where}: a row has no prompt; is this promptfoo results version 3?")
    return str(prompt.get("label") or row.get("promptId") or "prompt")


def _templates(results: Mapping[str, Any], where: str) -> str:
    """The prompts' templates (results.prompts[].raw, before vars are filled in), labelled, as one text."""
    prompts = results.get("prompts")
    if not isinstance(prompts, list) or not all(isinstance(p, dict) and isinstance(p.get("raw"), str)
                                                for p in prompts):
        raise InputError(f"{where}: results.prompts is not a list of prompts with raw text; is the file truncated?")
    return "\n---\n".join(sorted(f"{p.get('label') or ''}: {p['raw']}" for p in prompts))


def _provider(row: Mapping[str, Any], where: str) -> str:
    provider = row.get("provider")
    if isinstance(provider, dict) and isinstance(provider.get("id"), str):
        label = provider.get("label")
        return f"{provider['id']} ({label})" if label else str(provider["id"])
    raise InputError(f"{where}: a row has no provider.id; is this promptfoo results version 3?")


def _assertions(group: list[Mapping[str, Any]], case: Mapping[str, Any], task: str, sample: str,
                where: str) -> tuple[list[AdaptedTest], bool]:
    """One test per assertion of the test case over its rows (repeats); whether any row errored."""
    top = case.get("assert") or []
    if not isinstance(top, list):
        raise InputError(f"{where}: test {sample!r}: testCase.assert is not a list")
    declared = _flattened(top)
    names = _names([kind for kind, _ in declared])
    if not names:
        names = ["output"]  # a test without assertions passes or fails on the row's success alone
    passed = Counter[str]()
    messages: dict[str, str] = {}
    errors = 0
    for row in group:
        if row.get("failureReason") == _ERROR or (row.get("error") and not row.get("gradingResult")):
            errors += 1
            for name in names:
                messages.setdefault(name, f"promptfoo error: {str(row.get('error'))[:200]}")
            continue
        grading = row.get("gradingResult")
        components = grading.get("componentResults") if isinstance(grading, dict) else None
        if declared and not isinstance(components, list):
            raise InputError(f"{where}: test {sample!r}: a row has no gradingResult.componentResults, the score of "
                             f"each of its {len(declared)} assertions; a sample without scores cannot be gated")
        if declared and not _paired(declared, components):  # type: ignore[arg-type]
            counted = (f"{len(declared)} assertions (an assert-set counted with its children)"
                       if len(declared) != len(top) else f"{len(declared)} assertions")
            raise InputError(f"{where}: test {sample!r}: a row's gradingResult.componentResults holds "
                             f"{len(components)} results that do not pair in order with its {counted} in "  # type: ignore[arg-type]
                             "testCase.assert; was the file edited?")
        outcomes = ([bool(c.get("pass")) if isinstance(c, dict) else False for c in components]  # type: ignore[union-attr]
                    if declared else [row.get("success") is True])
        for name, ok, component in zip(names, outcomes, components or [None] * len(names), strict=True):
            if ok:
                passed[name] += 1
            else:
                reason = component.get("reason") if isinstance(component, dict) else row.get("error")
                messages.setdefault(name, str(reason or "failed")[:200])
    runs = len(group)
    tests = []
    for name in names:
        outcome = "passed" if passed[name] == runs else "error" if errors else "failed"
        tests.append(AdaptedTest(f"{task}::{name}[{sample}]", outcome, sample,  # type: ignore[arg-type]
                                 repeats=(passed[name], runs) if runs > 1 else None,
                                 message=None if outcome == "passed" else messages.get(name)))
    return tests, errors > 0


def _flattened(declared: list[Any]) -> list[tuple[str, Any]]:
    """(test name, assertion) of each declared assertion in the order promptfoo writes their results: an
    `assert-set` is one result (its own pass, on its threshold) followed by each of its children's, named
    `assert-set/<type>`."""
    flat: list[tuple[str, Any]] = []
    for assertion in declared:
        kind = str(assertion.get("type", "assertion")) if isinstance(assertion, dict) else "assertion"
        flat.append((kind, assertion))
        children = assertion.get("assert") if isinstance(assertion, dict) and kind == "assert-set" else None
        if isinstance(children, list):
            flat += [(f"{kind}/{name}", child) for name, child in _flattened(children)]
    return flat


def _paired(declared: list[tuple[str, Any]], components: list[Any]) -> bool:
    """Whether the row's component results pair in order with the declared assertions: as many, and each that
    names its assertion names the one declared in its place (an assert-set's own result names none)."""
    if len(components) != len(declared):
        return False
    for (_, assertion), component in zip(declared, components, strict=True):
        named = component.get("assertion") if isinstance(component, dict) else None
        if isinstance(named, dict) and isinstance(assertion, dict) and named.get("type") != assertion.get("type"):
            return False
    return True


def _names(types: list[str]) -> list[str]:
    """Assertion types as test names; a type used twice in one test gets `#2`, `#3`, ..."""
    seen = Counter[str]()
    names = []
    for kind in types:
        seen[kind] += 1
        names.append(kind if seen[kind] == 1 else f"{kind}#{seen[kind]}")
    return names


def _dataset(cases: Mapping[str, Mapping[str, Any]]) -> str:
    """The tests as data: each test's vars and its assertions' expected values (promptfoo's tests are its dataset)."""
    return fingerprint_inputs((sample, {"vars": case.get("vars"),
                                        "expected": [a.get("value") if isinstance(a, dict) else a
                                                     for a in case.get("assert") or []]})
                              for sample, case in cases.items())


def _scorer(cases: Mapping[str, Mapping[str, Any]], config: Mapping[str, Any]) -> str:
    """How the tests are scored, as one text: the distinct assertion kinds with their settings (weight, threshold,
    grading provider, transform, ...; the expected values are the dataset's), test options and defaultTest."""
    kinds = set()
    for case in cases.values():
        for assertion in case.get("assert") or []:
            if isinstance(assertion, dict):
                kinds.add(canonical_json({name: value for name, value in assertion.items() if name != "value"}))
        kinds.add(canonical_json({"threshold": case.get("threshold"), "options": case.get("options")}))
    types = sorted({str(a.get("type")) for case in cases.values() for a in (case.get("assert") or [])
                    if isinstance(a, dict)})
    return (f"assertions {fingerprint(canonical_json([sorted(kinds), config.get('defaultTest')]))} "
            f"({', '.join(types) or 'none'})")


SOURCE = Source(
    name="promptfoo", summary="promptfoo results (`promptfoo eval -o results.json`, format version 3)",
    read=read_promptfoo,
    description="Each assertion of each test case becomes a test <description>::<assertion type>[<test>]; "
                "--repeat N rows become repeats; errored rows make their assertions errors (unscored, never "
                "dropped). Runs whose tests' vars or assertions differ are incomparable.")
