"""HTML pages (report.html, summary.html, history pages): Jinja2 templates, autoescaped, self-contained.

Every page is one file with no network: inline CSS, and inline JavaScript only for filtering and sorting (the page
reads the same without it). A Content-Security-Policy meta allows exactly the page's own style and script, by their
SHA-256, and nothing else: no fetch, image, font, frame, form or other script, so even an escaping bug could neither
load nor run anything.
"""

from __future__ import annotations

import base64
import hashlib
from functools import cache
from importlib.resources import files
from typing import Any

from jinja2 import Environment, PackageLoader, StrictUndefined
from markupsafe import Markup, escape

__all__ = ["breakable", "content_security_policy", "environment", "render_page"]

_TEMPLATES = "templates"


@cache
def environment() -> Environment:
    """The one Jinja2 environment: templates shipped in evalkit/render/templates, autoescape on for every template
    (report data is untrusted text), and an undefined name is an error rather than an empty string."""
    env = Environment(loader=PackageLoader("evalkit.render", _TEMPLATES), autoescape=True, undefined=StrictUndefined,
                      trim_blocks=True, lstrip_blocks=True, keep_trailing_newline=True)
    env.filters["breakable"] = breakable
    return env


def breakable(text: object) -> Markup:
    """A test id that may wrap where a reader expects it, before `::` and `[`, never mid-word: escaped first, so
    the only markup added is the line-break opportunity `<wbr>`."""
    return Markup(str(escape(text)).replace("::", "<wbr>::").replace("[", "<wbr>["))


@cache
def _asset(name: str) -> str:
    return files("evalkit.render").joinpath(_TEMPLATES, name).read_text(encoding="utf-8")


def _sha256(text: str) -> str:
    return "'sha256-" + base64.b64encode(hashlib.sha256(text.encode("utf-8")).digest()).decode("ascii") + "'"


def content_security_policy(style: str, script: str) -> str:
    """Nothing but this style and this script, named by hash: `default-src 'none'` forbids every fetch (images,
    fonts, frames, connections), and inline event handlers and `javascript:` URLs match no hash, so they never run."""
    return (f"default-src 'none'; style-src {_sha256(style)}; script-src {_sha256(script)}; "
            "base-uri 'none'; form-action 'none'")


def render_page(template: str, **values: Any) -> str:
    """One self-contained page: `template` (extending base.html.j2) with the shared style and script inlined and
    the policy that admits only them."""
    style, script = _asset("page.css"), _asset("page.js")
    return environment().get_template(template).render(
        style=Markup(style), script=Markup(script), csp=content_security_policy(style, script), **values)
