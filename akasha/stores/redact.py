"""Store addresses made safe to show: no password, token or secret query value, ever.

:func:`redact_url` works on the raw text and never raises, so an error message about a URL can
use it before any parsing that might fail (a password with ``/``, ``?`` or ``@`` confuses ``urlsplit``).
"""

from __future__ import annotations

import re

#: Query parameters whose values are secrets (``password``, ``sslpassword``, ``token``, ``api_key``, ...).
SECRET_PARAM = re.compile(r"pass|token|secret|key|auth|credential", re.IGNORECASE)


def userinfo_end(rest: str) -> int:
    """Index of the ``@`` that ends the user-info part of ``rest`` (the URL after ``://``), or -1.

    The last ``@`` counts (a password may hold ``/``, ``?`` or ``@``), unless it sits in the query
    string (a ``?`` with a ``name=`` before it): then the last ``@`` before the query.
    """
    at = rest.rfind("@")
    if at < 0:
        return -1
    query = rest.find("?")
    if 0 <= query < at and "=" in rest[query:at]:
        at = rest.rfind("@", 0, query)
    return at


def redact_query(query: str) -> str:
    """``a=1&password=x`` -> ``a=1&password=***``."""
    parts = []
    for item in query.split("&"):
        name, eq, _value = item.partition("=")
        parts.append(f"{name}=***" if eq and SECRET_PARAM.search(name) else item)
    return "&".join(parts)


def redact_url(url: object) -> str:
    """``url`` with its password/token and secret query values replaced by ``***`` (never raises)."""
    text = str(url).strip()
    scheme, sep, rest = text.partition("://")
    if not sep:
        base, qsep, query = text.partition("?")
        return base + (qsep + redact_query(query) if qsep else "")
    at = userinfo_end(rest)
    shown = ""
    if at >= 0:
        creds, rest = rest[:at], rest[at + 1 :]
        user = creds.split(":", 1)[0] if ":" in creds else ""
        shown = f"{user}:***@" if user else "***@"
    rest = rest.split("#", 1)[0]
    base, qsep, query = rest.partition("?")
    return f"{scheme}://{shown}{base}" + (qsep + redact_query(query) if qsep else "")


def redact_conninfo(conninfo: str) -> str:
    """A libpq ``key=value`` connection string or URL with secrets replaced by ``***``."""
    if "://" in conninfo:
        return redact_url(conninfo)
    return re.sub(r"(\b\w*(?:pass|token|secret|key)\w*\s*=\s*)('(?:[^'\\]|\\.)*'|\S+)", r"\1***", conninfo,
                  flags=re.IGNORECASE)


__all__ = ["SECRET_PARAM", "redact_conninfo", "redact_query", "redact_url", "userinfo_end"]
