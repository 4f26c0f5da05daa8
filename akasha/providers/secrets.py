"""Keep API keys out of every message, log line and repr akasha produces."""

from __future__ import annotations

from collections.abc import Iterable

#: What a redacted secret looks like in messages.
MASK = "***"


def redact(text: object, secrets: Iterable[str | None]) -> str:
    """Return ``str(text)`` with every non-trivial secret (4+ characters) replaced by ``***``."""
    out = str(text)
    for secret in secrets:
        if secret and len(secret) >= 4 and secret in out:
            out = out.replace(secret, MASK)
    return out

