"""The install hint for a provider whose client is missing: a command that works however evalkit was installed.

`pip install 'evalkit[openai]'` only works where `evalkit` on the package index is this project (it is not), so
the hint installs the extra's own requirements, as this evalkit's metadata lists them, into the running
interpreter; a third-party provider's hint installs the requirements its spec names.
"""

from __future__ import annotations

import re
import shlex
import sys
from importlib.metadata import PackageNotFoundError, requires

from evalkit.core.errors import ProviderError
from evalkit.core.provider_specs import provider_spec

__all__ = ["missing_client", "extra_requirements"]

_EXTRA = re.compile(r"""extra\s*==\s*["']([^"']+)["']""")


def extra_requirements(extra: str) -> list[str]:
    """The requirements evalkit's `extra` brings (`openai<4,>=1.55.3`), from the installed metadata."""
    try:
        listed = requires("evalkit") or []
    except PackageNotFoundError:
        listed = []
    out = []
    for line in listed:
        requirement, _, marker = line.partition(";")
        found = _EXTRA.search(marker)
        if found and found.group(1) == extra:
            out.append(requirement.strip())
    return out


def missing_client(provider: str) -> ProviderError:
    """The refusal for a provider whose client library cannot be imported, naming the command that installs it
    (the requirements of the spec's extra, or the spec's own requirements when the metadata lacks them)."""
    spec = provider_spec(provider)
    needed = (extra_requirements(spec.extra) if spec.extra else []) or list(spec.requirements) or [provider]
    packages = " ".join(shlex.quote(r) for r in needed)
    return ProviderError(f"the {provider} provider needs its client, which is not installed. Install with: "
                         f"{shlex.quote(sys.executable)} -m pip install {packages}")
