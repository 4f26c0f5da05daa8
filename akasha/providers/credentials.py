"""Credentials written into an endpoint URL (``http://user:secret@host/...``): taken out, sent as a header.

A URL with user info is never handed to httpx as it is: httpx would log it, akasha's messages
would repeat it, and httpx's Basic auth would silently replace a provider's ``Authorization:
Bearer <key>``. Every HTTP caller of akasha goes through :func:`split_credentials`:

* the URL without user info is what is requested, logged and shown;
* the user info becomes ``Authorization: Basic ...`` when the provider sends no key of its own, else
  ``Proxy-Authorization: Basic ...`` (for what sits in front of it, a proxy or gateway).
"""

from __future__ import annotations

import base64
from collections.abc import Mapping
from urllib.parse import unquote

from akasha.stores.redact import userinfo_end


def split_credentials(url: str) -> tuple[str, tuple[str, str] | None]:
    """``(url without user info, (user, password) or None)``; never raises."""
    scheme, sep, rest = str(url).partition("://")
    if not sep:
        return str(url), None
    at = userinfo_end(rest)
    if at < 0:
        return str(url), None
    user, _, password = rest[:at].partition(":")
    return f"{scheme}://{rest[at + 1:]}", (unquote(user), unquote(password))


def basic_value(credentials: tuple[str, str]) -> str:
    """The ``Basic ...`` value of a header for ``(user, password)``."""
    token = base64.b64encode(f"{credentials[0]}:{credentials[1]}".encode()).decode("ascii")
    return f"Basic {token}"


def with_credentials(headers: Mapping[str, str], credentials: tuple[str, str] | None) -> dict[str, str]:
    """``headers`` plus the URL's credentials: ``Authorization`` when no key is sent, else ``Proxy-Authorization``."""
    out = dict(headers)
    if credentials is None:
        return out
    taken = any(name.lower() == "authorization" for name in out)
    out["Proxy-Authorization" if taken else "Authorization"] = basic_value(credentials)
    return out


__all__ = ["basic_value", "split_credentials", "with_credentials"]
