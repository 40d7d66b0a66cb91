"""A real browser for the HTML pages' tests: Debian's headless Chromium driven by Playwright.

`open_page(path)` opens a local file with every network request recorded and refused, script dialogs
recorded, and console messages kept; when a test using it fails, a screenshot of each page it opened is kept
under the test's tmp_path (`browser-failure-N.png`). Chromium is the system's (/usr/bin/chromium, installed by
scripts/test.sh); Playwright's own browser downloads are never used.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

CHROMIUM = "/usr/bin/chromium"
ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
        "--disable-background-networking", "--disable-component-update", "--disable-sync"]
VIEWPORT = {"width": 1280, "height": 900}


@dataclass
class Opened:
    """A page opened from a file, and what it did: every request, dialog and console message."""

    page: Any
    url: str
    requests: list[str] = field(default_factory=list)
    dialogs: list[str] = field(default_factory=list)
    console: list[str] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)

    @property
    def foreign_requests(self) -> list[str]:
        """Requests other than the page's own file: a self-contained page makes none."""
        return [url for url in self.requests if url != self.url]


@pytest.hookimpl(wrapper=True, tryfirst=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Any:
    report = yield
    if report.when == "call":
        item.stash[_FAILED] = report.failed
    return report


_FAILED = pytest.StashKey[bool]()


# Per module, not per session: Playwright's driver is a child process watched by a thread, and a thread left
# running for the rest of the session changes what other tests measure (evalkit.core.parsing bounds JSON nesting
# at C speed only while no other thread runs).
@pytest.fixture(scope="module")
def chromium() -> Iterator[Any]:
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, headless=True, args=ARGS)
        try:
            yield browser
        finally:
            browser.close()


@pytest.fixture
def open_page(chromium: Any, request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Callable[..., Opened]]:
    contexts: list[Any] = []
    opened: list[Opened] = []

    def open_(path: Path, javascript: bool = True, follow: Path | None = None) -> Opened:
        """Open `path`; with `follow`, links to files under that folder may be followed (still recorded)."""
        context = chromium.new_context(viewport=VIEWPORT, java_script_enabled=javascript, offline=True)
        contexts.append(context)
        page = context.new_page()
        url = path.resolve().as_uri()
        seen = Opened(page, url)
        page.on("request", lambda r: seen.requests.append(r.url))
        page.on("dialog", lambda d: (seen.dialogs.append(d.message), d.dismiss()))
        page.on("console", lambda m: seen.console.append(f"{m.type}: {m.text}"))
        page.on("pageerror", lambda e: seen.errors.append(str(e)))

        followed = follow.resolve().as_uri() + "/" if follow is not None else None

        def refuse(route: Any) -> None:  # anything but the page itself is recorded and refused, never fetched
            target = route.request.url
            if target == url or (followed is not None and target.startswith(followed)):
                route.continue_()
            else:
                seen.requests.append(target)
                route.abort()

        context.route("**/*", refuse)
        page.goto(url, wait_until="load")
        opened.append(seen)
        return seen

    yield open_
    if request.node.stash.get(_FAILED, False):
        for index, seen in enumerate(opened):
            try:
                seen.page.screenshot(path=str(tmp_path / f"browser-failure-{index + 1}.png"), full_page=True)
            except Exception as error:  # a page that cannot be drawn must not hide the test's own failure
                print(f"no screenshot of {seen.url}: {error}")
    for context in contexts:
        context.close()
