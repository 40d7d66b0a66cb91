"""A run's credentials: the values it must never write (redactor_for), and a key too short to mask refused."""

from __future__ import annotations

from evalkit.core.config import RunConfig
from evalkit.core.errors import ProviderError
from evalkit.core.provider_specs import provider_spec
from evalkit.live.redact import MIN_SECRET, Redactor, credential_name

__all__ = ["key_variables", "redactor_for", "refuse_short_keys"]


def redactor_for(config: RunConfig) -> Redactor:
    """What this run must never write: the values of its credential variables and secret-shaped text."""
    return Redactor(key_variables(config), config.run.secret_patterns)


def key_variables(config: RunConfig) -> list[str]:
    """The environment variables holding the run's credentials: `api_key_env` and `token_env` of the model, the
    judge and the simulated user, those their providers read by themselves (Bedrock's AWS chain), and any variable
    named like a credential that the config reads through `${oc.env:...}`."""
    names: list[str] = []
    for model in (config.model, config.judge, config.simulator):
        if model is not None:
            names += [n for n in (model.api_key_env, model.token_env) if n]
            names += provider_spec(model.provider).credential_env
    names += [name for name in config.env_read if credential_name(name)]
    return list(dict.fromkeys(names))


def refuse_short_keys(config: RunConfig, redact: Redactor) -> None:
    """A key value under MIN_SECRET characters cannot be masked without masking ordinary words: refuse it before a
    live run can write it anywhere."""
    if redact.short_keys:
        names = ", ".join(redact.short_keys)
        raise ProviderError(f"{names}: the key is shorter than {MIN_SECRET} characters, too short for evalkit to "
                            "redact from recordings and reports; use the real key, or, for a server that needs "
                            "none, unset the config's api_key_env (model.api_key_env=null)")
