"""HTML pages (report.html, summary.html, history pages): Jinja2 templates, autoescaped, self-contained.

Every page carries a seal (`<meta name="evalkit-seal" content="KIND sha256:HEX">`): the SHA-256 of the whole page
with the digest itself left blank. A command that replaces only a page evalkit wrote checks that seal: a
hand-written file that merely mentions the kind of page (this package's README, the template itself) cannot carry a
digest of its own bytes by accident, and a page edited by hand no longer verifies, so it is kept too.

Every page is one file with no network: inline CSS, and inline JavaScript only for filtering and sorting (the page
reads the same without it). A Content-Security-Policy meta allows exactly the page's own style and script, by their
SHA-256, and images only as `data:` URIs inside the page (image cases' thumbnails), and nothing else: no fetch, remote
image, font, frame, form or other script, so even an escaping bug could neither load nor run anything.
"""

from __future__ import annotations

import base64
import hashlib
import re
from functools import cache
from importlib.resources import files
from typing import Any

from jinja2 import Environment, PackageLoader, StrictUndefined
from markupsafe import Markup, escape

from evalkit.core.untrusted import visible

__all__ = ["breakable", "content_security_policy", "environment", "render_page", "is_sealed_page", "shown"]

_TEMPLATES = "templates"
_BLANK = "0" * 64
_SEAL = re.compile(r'<meta name="evalkit-seal" content="([a-z]+) sha256:([0-9a-f]{64})">')


@cache
def environment() -> Environment:
    """The one Jinja2 environment: templates shipped in evalkit/render/templates, autoescape on for every template
    (report data is untrusted text, its control characters shown as escapes), and an undefined name is an error
    rather than an empty string."""
    env = Environment(loader=PackageLoader("evalkit.render", _TEMPLATES), autoescape=True, undefined=StrictUndefined,
                      trim_blocks=True, lstrip_blocks=True, keep_trailing_newline=True, finalize=_shown)
    env.filters["breakable"] = breakable
    return env


def _shown(value: Any) -> Any:
    """Every value a template prints: report text with control characters shown as escapes (`\\x1b`); line breaks
    and tabs kept for `<pre>`. The page's own markup (style, script, seal) is left as it is."""
    if isinstance(value, str) and not isinstance(value, Markup):
        return visible(value, keep="\n\r\t", controls_only=True)
    return value


def shown(value: str) -> str:
    """Report text as a template prints it (`{{ value }}`): its control characters as escapes, then HTML-escaped."""
    return str(escape(_shown(value)))


def breakable(text: object) -> Markup:
    """A test id that may wrap where a reader expects it, before `::` and `[`, never mid-word: escaped first, so
    the only markup added is the line-break opportunity `<wbr>`."""
    shown = _shown(str(text))  # control characters as escapes first: the filter's Markup skips `finalize`
    return Markup(str(escape(shown)).replace("::", "<wbr>::").replace("[", "<wbr>["))


@cache
def _asset(name: str) -> str:
    return files("evalkit.render").joinpath(_TEMPLATES, name).read_text(encoding="utf-8")


def _sha256(text: str) -> str:
    return "'sha256-" + base64.b64encode(hashlib.sha256(text.encode("utf-8")).digest()).decode("ascii") + "'"


def content_security_policy(style: str, script: str) -> str:
    """Nothing but this style and this script, named by hash, and images carried in the page itself (`data:`, the
    thumbnails of image cases): `default-src 'none'` forbids every fetch (remote images, fonts, frames,
    connections), and inline event handlers and `javascript:` URLs match no hash, so they never run."""
    return (f"default-src 'none'; style-src {_sha256(style)}; script-src {_sha256(script)}; img-src data:; "
            "base-uri 'none'; form-action 'none'")


def render_page(template: str, *, kind: str = "page", **values: Any) -> str:
    """One self-contained page: `template` (extending base.html.j2) with the shared style and script inlined, the
    policy that admits only them, and the seal of a page of this `kind` (lower-case letters)."""
    style, script = _asset("page.css"), _asset("page.js")
    text = environment().get_template(template).render(
        style=Markup(style), script=Markup(script), csp=content_security_policy(style, script),
        seal=Markup(f'<meta name="evalkit-seal" content="{kind} sha256:{_BLANK}">'), **values)
    return text.replace(f"{kind} sha256:{_BLANK}", f"{kind} sha256:{_digest(text)}", 1)


def is_sealed_page(data: bytes, kind: str) -> bool:
    """Whether `data` is, byte for byte, a page of this `kind` that evalkit wrote: valid UTF-8 holding exactly
    one seal, in the page's head, whose digest matches the rest of the file."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        return False
    seals = list(_SEAL.finditer(text))
    if len(seals) != 1 or seals[0].group(1) != kind or seals[0].start() > text.find("</head>"):
        return False
    start, end = seals[0].span(2)
    return _digest(text[:start] + _BLANK + text[end:]) == seals[0].group(2)


def _digest(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()
