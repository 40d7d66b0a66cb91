"""The project's documentation as the tests read it: the README, then every page of the docs site in its navigation
order. Tests that hold the docs to the program look for their commands and tables here, wherever a page keeps them."""

from __future__ import annotations

from pathlib import Path

import yaml

REPO = Path(__file__).resolve().parents[2]


def pages(root: Path = REPO) -> list[Path]:
    """The README and the docs pages, in the site's navigation order."""

    def walk(items: list[object]) -> list[str]:
        out: list[str] = []
        for item in items:
            value = next(iter(item.values())) if isinstance(item, dict) else item
            out.extend(walk(value) if isinstance(value, list) else [str(value)])
        return out

    nav = yaml.safe_load((root / "mkdocs.yml").read_text(encoding="utf-8"))["nav"]
    return [root / "README.md", *(root / "docs" / page for page in walk(nav))]


def docs_text(root: Path = REPO) -> str:
    return "\n".join(page.read_text(encoding="utf-8") for page in pages(root))


DOCS = docs_text()
