"""The HTML pages: Jinja2 with autoescape, self-contained, and a Content-Security-Policy that admits only their own
inline style and script."""

from __future__ import annotations

import base64
import hashlib
import html
import re

from evalkit.render.html import content_security_policy, environment, render_page


def _hash(text: str) -> str:
    return "'sha256-" + base64.b64encode(hashlib.sha256(text.encode()).digest()).decode() + "'"


def test_the_environment_escapes_by_default():
    page = environment().from_string("<p>{{ text }}</p>").render(text="<script>alert(1)</script>")
    assert page == "<p>&lt;script&gt;alert(1)&lt;/script&gt;</p>"


def test_the_base_page_admits_exactly_its_own_style_and_script():
    page = render_page("base.html.j2")
    style = re.search(r"<style>(.*?)</style>", page, re.S)
    script = re.search(r"<script>(.*?)</script>", page, re.S)
    assert style and script and style.group(1).strip() and script.group(1).strip()
    csp = re.search(r'http-equiv="Content-Security-Policy" content="([^"]*)"', page)
    assert csp is not None
    policy = html.unescape(csp.group(1))  # the attribute is escaped (&#39;); the browser reads it unescaped
    assert policy == content_security_policy(style.group(1), script.group(1))
    assert f"style-src {_hash(style.group(1))};" in policy
    assert f"script-src {_hash(script.group(1))};" in policy
    assert policy.startswith("default-src 'none';")
    # nothing on the page points anywhere: no src, href or url() at all
    assert not re.search(r"\b(src|href)=|url\(|@import", page)
