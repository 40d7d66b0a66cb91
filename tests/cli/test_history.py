"""`evalkit history`: one suite over many runs, as a table and a self-contained page with SVG charts."""

from __future__ import annotations

import json
import subprocess
import sys
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import pytest
from conftest import evalkit_env, report, write_json

PROJECT_ROOT = Path(__file__).resolve().parents[2]  # this repository: the examples project
HOSTILE = "<script>alert(1)</script><img src=x onerror=alert(2)>"


class Page(HTMLParser):
    """The parts of the page the tests read: elements with their attributes and the text inside them."""

    def __init__(self, text: str) -> None:
        super().__init__()
        self.elements: list[tuple[str, dict[str, str | None], list[str]]] = []
        self.stack: list[str] = []
        self.text: list[str] = []
        self.feed(text)

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.elements.append((tag, dict(attrs), list(self.stack)))
        if tag not in ("meta", "link", "br", "rect", "circle", "line", "polyline", "input"):
            self.stack.append(tag)

    def handle_startendtag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.elements.append((tag, dict(attrs), list(self.stack)))

    def handle_endtag(self, tag: str) -> None:
        if tag in self.stack:
            while self.stack.pop() != tag:
                pass

    def handle_data(self, data: str) -> None:
        self.text.append(data)

    def all(self, tag: str, **attrs: str) -> list[dict[str, str | None]]:
        return [a for t, a, _ in self.elements if t == tag and all(a.get(k) == v for k, v in attrs.items())]


def _run(cwd: Path, *args: str, project: Path | None = None) -> subprocess.CompletedProcess[str]:
    env = {**evalkit_env(), **({"EVALKIT_PROJECT": str(project)} if project else {})}
    return subprocess.run([sys.executable, "-m", "evalkit.cli.main", "history", *args], cwd=cwd, env=env, capture_output=True,
                          text=True, timeout=120)


def _run_folder(folder: Path, created: float | None, outcomes: dict[str, str], decision: str | None = None,
                metrics: dict[str, Any] | None = None, suite: str = "s", policy: tuple[str, str] | None = None,
                **key: Any) -> Path:
    """An authored run folder: report.json (with pytest-json-report's `created`), and decision.json."""
    folder.mkdir(parents=True)
    data = report(outcomes, suite=suite, **key)
    if created is not None:
        data["created"] = created
    data["metrics"] = {name: {"mean": value, "count": 1} for name, value in (metrics or {}).items()}
    data["execution"] = {"cost": {"input_tokens": 100 * len(outcomes), "output_tokens": 10, "model_calls": 2},
                         "latency": {"measured_calls": 2, "mean_ms": 120.5, "p95_ms": 300}}
    write_json(folder / "report.json", data)
    if decision:
        written: dict[str, Any] = {"decision": decision}
        if policy:  # evidence as evalkit writes it (evalkit.records.decision.Evidence)
            side = {"path": "r.json", "sha256": "0" * 64, "eval": {}}
            written["evidence"] = {"policy": {"name": policy[0], "version": None, "source": "p.yaml", "overrides": [],
                                              "chosen_by": "--policy", "sha256": policy[1]},
                                   "baseline": side, "candidate": side, "evalkit_version": "0"}
        write_json(folder / "decision.json", written)
    return folder


@pytest.fixture
def project(tmp_path: Path) -> Path:
    """An authored project with four runs of suite s under outputs/: folder names out of time order, a model
    change (K2) between runs of K1, and a run on another dataset (K3)."""
    root = tmp_path / "proj"
    (root / "conf").mkdir(parents=True)
    (root / "conf/config.yaml").write_text("defaults: []\n")
    out = root / "outputs/2026-11-30"
    _run_folder(out / "a", 1_700_000_300.0, {"test_a": "passed", "test_b": "failed"}, "block", {"recall": 0.5})
    _run_folder(out / "b", 1_700_000_100.0, {"test_a": "passed", "test_b": "passed"}, "go", {"recall": 0.75})
    _run_folder(out / "c", 1_700_000_200.0, {"test_a": "passed", "test_b": "passed"}, "go", {"recall": 0.8},
                model="m2")
    _run_folder(out / "d", 1_700_000_400.0, {"test_a": "passed", "test_b": "passed"}, "incomparable",
                {"recall": None}, dataset_sha="bbb", dataset="issue-triage@2")
    return root


def test_table_orders_runs_by_time_and_marks_eval_keys(project: Path):
    done = _run(project)
    assert done.returncode == 0, done.stderr
    rows = [line.split() for line in done.stdout.splitlines() if line[:1].isdigit()]
    # oldest first: b (K1), c (K2, model m2), a (K1 again), d (K3, another dataset)
    assert [(r[0], r[3], r[4], r[6], r[7]) for r in rows] == [
        ("1", "K1", "GO", "2/2", "1.000"), ("2", "K2", "GO", "2/2", "1.000"), ("3", "K1", "BLOCK", "1/2", "0.500"),
        ("4", "K3", "INCOMPARABLE", "2/2", "1.000")]
    assert [r[5] for r in rows] == ["-"] * 4  # decisions that do not say their policy
    assert [r[8] for r in rows] == ["0.750", "0.800", "0.500", "n/a"]  # recall; not measured is "n/a"
    assert "K2: changed against K1: model m -> m2; comparable with K1" in done.stdout
    assert "K3: changed against K1: no component; NOT comparable with K1" in done.stdout
    assert (project / "outputs/history.html").is_file()


def test_rows_of_one_key_decided_under_different_policies_show_which_and_say_so(tmp_path: Path):
    runs = tmp_path / "runs"
    default, strict = ("default", "3f2a9c1e" + "0" * 56), ("strict", "9b1c7d20" + "1" * 56)
    _run_folder(runs / "a", 10.0, {"test_a": "passed"}, "go", policy=default)
    _run_folder(runs / "b", 20.0, {"test_a": "passed"}, "block", policy=strict)  # same key, stricter rules
    _run_folder(runs / "c", 30.0, {"test_a": "passed"}, "go", policy=default, model="m2")
    done = _run(tmp_path, str(runs), "--no-html")
    assert done.returncode == 0, done.stderr
    rows = [line.split() for line in done.stdout.splitlines() if line[:1].isdigit()]
    assert [(r[3], r[4], r[5]) for r in rows] == [("K1", "GO", "default@3f2a9c1e"), ("K1", "BLOCK", "strict@9b1c7d20"),
                                                  ("K2", "GO", "default@3f2a9c1e")]
    assert ("judge_model j, suite s; its runs were decided under 2 policies (default@3f2a9c1e: run 1, "
            "strict@9b1c7d20: run 2): a change of decision between them may be the policy's, not the run's\n"
            in done.stdout)
    assert "K2: changed against K1: model m -> m2; comparable with K1\n" in done.stdout + "\n"  # one policy: no note


def test_page_charts_join_only_runs_of_one_key(project: Path):
    assert _run(project).returncode == 0
    page = Page((project / "outputs/history.html").read_text(encoding="utf-8"))
    assert len(page.all("section", id="history")) == 1
    figures = page.all("figure")
    names = [a.get("aria-label") for a in page.all("svg", role="img")]
    assert names == ["pass rate per run", "recall per run", "input tokens per run", "latency mean ms per run"]
    assert len(figures) == 4
    circles = [a for t, a, stack in page.elements if t == "circle"]
    assert len(circles) == 4 + 3 + 4 + 4  # recall is missing in run 4
    # runs K1, K2, K1, K3: no two consecutive runs share a key, so no line joins any of them
    assert page.all("polyline") == []
    bands = [a for t, a, _ in page.elements if t == "rect" and a.get("class") == "band"]
    assert len(bands) == 4 * 4  # four spans of one key in each chart
    rows = [a for t, a, _ in page.elements if t == "tr" and a.get("data-key")]
    assert [r["data-key"] for r in rows] == ["K1", "K2", "K1", "K3"]
    assert [a for t, a, _ in page.elements if t == "script"] == [{}]  # the page's own script only


def test_consecutive_runs_of_one_key_are_joined(tmp_path: Path):
    runs = tmp_path / "runs"
    for i, created in enumerate((10.0, 20.0, 30.0)):
        _run_folder(runs / str(i), created, {"test_a": "passed"}, metrics={"recall": 0.1 * i})
    _run_folder(runs / "3", 40.0, {"test_a": "passed"}, metrics={"recall": 0.9}, model="m2")
    done = _run(tmp_path, str(runs), "--html", str(tmp_path / "h.html"))
    assert done.returncode == 0, done.stderr
    page = Page((tmp_path / "h.html").read_text(encoding="utf-8"))
    lines = page.all("polyline")
    assert len(lines) == 4  # per chart, one line through the three K1 runs; K2's single run stands alone
    assert all(len((line.get("points") or "").split()) == 3 for line in lines)


def test_hostile_report_text_is_escaped(tmp_path: Path):
    run = _run_folder(tmp_path / "r", 1.0, {"test_a": "passed"}, metrics={HOSTILE: 0.5}, model=HOSTILE)
    done = _run(tmp_path, str(run), "--html", str(tmp_path / "h.html"))
    assert done.returncode == 0, done.stderr
    text = (tmp_path / "h.html").read_text(encoding="utf-8")
    assert HOSTILE not in text and "&lt;script&gt;alert(1)&lt;/script&gt;" in text
    page = Page(text)
    assert len([t for t, _, _ in page.elements if t == "script"]) == 1
    assert not [a for t, a, _ in page.elements if t == "img"]
    assert HOSTILE in "".join(page.text)  # shown as text


def test_default_picks_the_latest_runs_suite_and_names_the_others(project: Path):
    _run_folder(project / "multirun/x/0", 1_600_000_000.0, {"test_a": "passed"}, suite="other")
    done = _run(project)
    assert done.returncode == 0, done.stderr
    assert "history of suite s: 4 run(s)" in done.stdout and "left out: runs of other suites (other: 1)" in done.stdout
    other = _run(project, "--suite", "other", "--no-html")
    assert other.returncode == 0 and "history of suite other: 1 run(s)" in other.stdout


def test_a_report_without_created_uses_the_file_time_and_says_so(tmp_path: Path):
    run = _run_folder(tmp_path / "r", None, {"test_a": "passed"})
    done = _run(tmp_path, str(run / "report.json"), "--no-html")
    assert done.returncode == 0, done.stderr
    assert "(file time)" in done.stdout and "modification time" in done.stdout


def test_it_replaces_its_own_page_and_never_another_file(project: Path, tmp_path: Path):
    assert _run(project).returncode == 0
    assert _run(project).returncode == 0  # its own earlier page
    notes = tmp_path / "notes.html"
    notes.write_text("<p>mine</p>")
    done = _run(project, "--html", str(notes))
    assert done.returncode == 3 and "not a history page evalkit wrote" in done.stderr
    assert notes.read_text() == "<p>mine</p>"
    report_path = project / "outputs/2026-11-30/a/report.json"
    before = report_path.read_bytes()
    done = _run(project, str(project / "outputs/2026-11-30/a"), "--html", str(report_path))
    assert done.returncode == 3 and report_path.read_bytes() == before


def test_a_file_that_only_mentions_the_page_or_was_edited_is_never_replaced(project: Path, tmp_path: Path):
    # a hand-written file naming the seal and the old marker, as this repository's README does
    readme = tmp_path / "README.md"
    readme.write_text('# notes\n<section data-evalkit-page="history">\n'
                      f'<meta name="evalkit-seal" content="history sha256:{"0" * 64}">\n')
    before = readme.read_bytes()
    done = _run(project, "--html", str(readme))
    assert done.returncode == 3 and "not a history page evalkit wrote" in done.stderr
    assert readme.read_bytes() == before
    page = tmp_path / "h.html"
    assert _run(project, "--html", str(page)).returncode == 0
    edited = page.read_text().replace("</h1>", "</h1><p>my own note</p>", 1)
    page.write_text(edited)
    done = _run(project, "--html", str(page))
    assert done.returncode == 3 and page.read_text() == edited


def test_unreadable_reports_found_by_searching_are_skipped_with_a_note(project: Path):
    broken = project / "outputs/2026-11-30/e"
    broken.mkdir()
    (broken / "report.json").write_text("{half")
    done = _run(project, "--no-html")
    assert done.returncode == 0, done.stderr
    assert "skipped outputs/2026-11-30/e/report.json" in done.stdout


def test_a_run_replayed_from_calls_its_recording_could_not_serve_is_left_out_not_plotted_as_0(project: Path):
    # how an evalkit from before replay refusals reported a replay of a recording made at another setting
    unserved = _run_folder(project / "outputs/2026-11-30/f", 1_700_000_500.0, {"test_a": "failed", "test_b": "failed"},
                           "block")
    data = json.loads((unserved / "report.json").read_text())
    data["execution"]["calls"] = {"replayed": 1, "stale": 38}
    write_json(unserved / "report.json", data)
    done = _run(project, "--no-html")
    assert done.returncode == 0, done.stderr
    rows = [line.split() for line in done.stdout.splitlines() if line[:1].isdigit()]
    assert len(rows) == 4 and "0/2" not in {r[5] for r in rows}
    assert ("left out 1 run(s) replayed from a recording that could not serve them (missing or stale calls: nothing "
            "was measured): outputs/2026-11-30/f/report.json") in done.stdout


@pytest.mark.parametrize(("args", "expected"), [
    (["missing-folder"], "missing-folder: no such file or folder"),
    (["conf/config.yaml"], "conf/config.yaml"),
    (["conf"], "no run reports"),
    (["--suite", "nope"], "no run of that suite"),
    (["--html", "x.html", "--no-html"], "contradict"),
    (["--html", "no-such-folder/h.html"], "does not exist"),
])
def test_bad_inputs_exit_3_in_one_line(project: Path, args: list[str], expected: str):
    done = _run(project, *args)
    assert done.returncode == 3, done.stdout + done.stderr
    assert expected in done.stderr and len(done.stderr.strip().splitlines()) == 1


def test_outside_a_project_with_nothing_named(tmp_path: Path):
    done = _run(tmp_path)
    assert done.returncode == 3 and "no run folders to read" in done.stderr


def test_runs_only_under_multirun_put_the_page_in_a_new_outputs_folder(tmp_path: Path):
    root = tmp_path / "proj"
    (root / "conf").mkdir(parents=True)
    (root / "conf/config.yaml").write_text("defaults: []\n")
    _run_folder(root / "multirun/2026-11-30/10-00-00/0", 5.0, {"test_a": "passed"}, "go")
    done = _run(root)
    assert done.returncode == 0, done.stderr
    assert "page: outputs/history.html" in done.stdout and (root / "outputs/history.html").is_file()


@pytest.mark.slow
def test_the_page_in_a_real_browser_draws_its_charts_sorts_and_runs_nothing_hostile(project: Path, open_page):
    """The history page in headless Chromium (tests/helpers/browser.py): a run whose model and metric names are
    hostile markup runs no script and fetches nothing; the charts are drawn; the runs table sorts."""
    _run_folder(project / "outputs/2026-11-30/e", 1_700_000_500.0, {"test_a": "passed", "test_b": "failed"}, "block",
                {"recall": 0.25, HOSTILE: 0.5}, model=HOSTILE)
    done = _run(project)
    assert done.returncode == 0, done.stderr
    opened = open_page(project / "outputs/history.html")
    page = opened.page
    assert opened.dialogs == [] and opened.foreign_requests == [] and opened.errors == []
    assert page.locator("img, iframe, object, embed").count() == 0 and page.locator("script").count() == 1
    assert HOSTILE in page.locator("body").inner_text()  # shown, as text
    charts = page.locator("svg[role=img]")
    assert charts.count() >= 4
    assert all(box["width"] > 100 and box["height"] > 50
               for box in (charts.nth(i).bounding_box() for i in range(charts.count())))
    keys = page.locator("#history-table tbody tr").evaluate_all("rows => rows.map(r => r.dataset.key)")
    assert keys == ["K1", "K2", "K1", "K3", "K4"]  # oldest first
    page.locator("#history-table thead button", has_text="pass rate").click()
    rates = page.locator("#history-table tbody tr td:nth-child(7)").all_inner_texts()
    assert rates == sorted(rates) and rates[0] == "0.500"  # ascending: the two half-passing runs first
