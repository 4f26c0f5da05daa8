"""Environment-variable lookup for provider settings, read at first use (never at import)."""

from __future__ import annotations

import os
from collections.abc import Sequence

from akasha.errors import MissingAPIKeyError


def env_lookup(*names: str) -> tuple[str, str] | None:
    """Return ``(name, value)`` of the first variable in ``names`` that is set and non-empty."""
    for name in names:
        value = os.environ.get(name, "").strip()
        if value:
            return name, value
    return None


def env_value(*names: str, default: str | None = None) -> str | None:
    """The value of the first set variable in ``names``, else ``default``."""
    found = env_lookup(*names)
    return found[1] if found else default


def require_api_key(provider: str, explicit: str | None, variables: Sequence[str]) -> str:
    """An explicit key, else the first set variable; raise MissingAPIKeyError naming them all."""
    key = explicit or env_value(*variables)
    if not key:
        raise MissingAPIKeyError(provider, variables)
    return key


def positive_env(variable: str, default: float) -> float:
    """A positive, finite number from ``variable``, else ``default`` when unset; ConfigError naming it otherwise."""
    from akasha.errors import ConfigError

    raw = os.environ.get(variable, "").strip()
    if not raw:
        return default
    try:
        value = float(raw)
    except ValueError:
        value = float("nan")
    if not value > 0 or value == float("inf"):
        raise ConfigError(f"{variable}={raw!r} is not a positive number; unset it for the default {default:g}")
    return value
