"""``vector_store=`` URLs: which shared-index server a CorpusIndex uses, and opening it.

Known forms (see docs/servers.md):

* ``chroma://host:port/collection`` - a Chroma server over HTTP (``chromas://`` for
  HTTPS); the token comes from ``token=``, ``chroma://:TOKEN@host:port/...`` or
  ``$CHROMA_AUTH_TOKEN`` (sent as ``Authorization: Bearer``; add
  ``?header=x-chroma-token`` to send ``X-Chroma-Token`` instead). Query options:
  ``tenant``, ``database``, ``header``.
* ``postgresql://user:pass@host:port/db?table=name`` (or ``postgres://``) - PostgreSQL
  with pgvector via psycopg 3. ``table`` (default ``akasha``) prefixes every table
  akasha creates; the other query options (``sslmode``, ``host=/socket/dir`` ...)
  go to libpq unchanged, as do ``$PGPASSWORD`` and ``~/.pgpass``.

Nothing here touches the network until :func:`open_backend` is called.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import parse_qsl, unquote, urlencode, urlsplit, urlunsplit

from akasha.errors import ConfigError

SCHEMES: tuple[str, ...] = ("chroma", "chromas", "postgresql", "postgres")
_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{1,510}[A-Za-z0-9]$")
_TABLE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]{0,39}$")


@dataclass(frozen=True)
class ServerURL:
    """A parsed ``vector_store`` URL. ``display`` is safe to log (no password or token)."""

    kind: str  # "chroma" or "postgresql"
    display: str
    host: str = ""
    port: int | None = None
    name: str = ""  # Chroma collection or PostgreSQL table prefix
    ssl: bool = False
    token: str | None = None
    dsn: str = ""  # PostgreSQL: the libpq DSN without akasha's own options
    options: dict[str, str] = field(default_factory=dict)


def parse_vector_store(url: str) -> ServerURL:
    """Parse and check a ``vector_store`` URL; ConfigError says what is wrong and what is expected."""
    if not isinstance(url, str) or "://" not in url:
        raise ConfigError(f"vector_store {url!r} is not a server URL; use chroma://host:port/collection or "
                          "postgresql://user:pass@host:port/db?table=name")
    parts = urlsplit(url.strip())
    scheme = parts.scheme.lower()
    if scheme not in SCHEMES:
        raise ConfigError(f"unknown vector_store scheme {scheme!r} in {_redact(parts)}; known: "
                          f"{', '.join(s + '://' for s in SCHEMES)}")
    options = dict(parse_qsl(parts.query, keep_blank_values=True))
    if scheme.startswith("chroma"):
        return _parse_chroma(parts, scheme, options)
    return _parse_postgres(parts, options)


def _parse_chroma(parts: Any, scheme: str, options: dict[str, str]) -> ServerURL:
    name = unquote(parts.path.strip("/"))
    shown = _redact(parts)
    if not parts.hostname:
        raise ConfigError(f"vector_store {shown} names no host; use chroma://host:port/collection")
    if not _NAME.match(name):
        raise ConfigError(f"vector_store {shown} needs a collection name of 3-512 characters from "
                          "[A-Za-z0-9._-] after the port, e.g. chroma://localhost:8000/team-docs")
    try:
        port = parts.port or (443 if scheme == "chromas" else 8000)
    except ValueError:
        raise ConfigError(f"vector_store {shown} has an invalid port") from None
    token = unquote(parts.password or parts.username or "") or None
    unknown = set(options) - {"tenant", "database", "header"}
    if unknown:
        raise ConfigError(f"vector_store {shown}: unknown option(s) {', '.join(sorted(unknown))}; "
                          "known: tenant, database, header")
    return ServerURL("chroma", shown, host=parts.hostname, port=port, name=name, ssl=scheme == "chromas",
                     token=token, options=options)


def _parse_postgres(parts: Any, options: dict[str, str]) -> ServerURL:
    table = options.pop("table", "akasha")
    shown = _redact(parts)
    if not _TABLE.match(table):
        raise ConfigError(f"vector_store {shown}: table {table!r} must be a plain SQL identifier of at most "
                          "40 characters (letters, digits, underscores, not starting with a digit)")
    dsn = urlunsplit(("postgresql", parts.netloc, parts.path, urlencode(options), ""))
    try:
        port = parts.port
    except ValueError:
        raise ConfigError(f"vector_store {shown} has an invalid port") from None
    return ServerURL("postgresql", shown, host=parts.hostname or options.get("host", ""), port=port,
                     name=table.lower(), dsn=dsn, options=options)


def _redact(parts: Any) -> str:
    netloc = parts.netloc
    if "@" in netloc:
        creds, host = netloc.rsplit("@", 1)
        user = creds.split(":", 1)[0] if ":" in creds else ""
        netloc = f"{user}:***@{host}" if user else f"***@{host}"
    query = "&".join(p for p in parts.query.split("&") if not p.lower().startswith(("password=", "token=")))
    return urlunsplit((parts.scheme, netloc, parts.path, query, ""))


def open_backend(url: str, *, local: Any = None, token: str | None = None, retry: Any = None,
                 **options: Any) -> Any:
    """Connect to the shared index at ``url`` and return its backend (creates what is missing).

    ``local`` is the machine's own Manifest (it keeps the stat cache); ``token``
    overrides the URL's and ``$CHROMA_AUTH_TOKEN``; ``retry`` is a
    :class:`~akasha.index.backends.base.Retry`. Raises ConfigError for a bad URL,
    MissingExtraError for a missing client library, ServerUnavailableError /
    ServerAuthError when the server cannot be used.
    """
    spec = parse_vector_store(url)
    if spec.kind == "chroma":
        from akasha.index.backends.chroma_server import ChromaServerBackend

        chosen = token or spec.token or os.environ.get("CHROMA_AUTH_TOKEN") or None
        return ChromaServerBackend(spec, token=chosen, local=local, retry=retry, **options)
    from akasha.index.backends.postgres import PgVectorBackend

    return PgVectorBackend(spec, local=local, retry=retry, **options)
