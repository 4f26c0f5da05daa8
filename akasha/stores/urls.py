"""``vector_store=`` URLs: which store on which server, and opening it as a :class:`~akasha.stores.base.Store`.

Known forms (docs/servers.md has the details): ``chroma://host:port/collection`` (``chromas://`` for
HTTPS; options ``tenant``, ``database``, ``header``), ``postgresql://user:pass@host:port/db?table=name``
(or ``postgres://``; ``table`` defaults to ``akasha``, other options go to libpq unchanged) and
``qdrant://host:port/collection`` (``qdrants://`` for HTTPS, port 6333 by default). A Chroma or Qdrant
token comes from ``token=``, the URL's ``:TOKEN@`` or ``$CHROMA_AUTH_TOKEN`` / ``$QDRANT_API_KEY``.

Every message shows the URL through :func:`~akasha.stores.redact.redact_url`
(no password, token or secret query value), computed before any parsing that can
fail. Nothing here touches the network until :func:`open_store` is called.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import parse_qsl, quote, unquote, urlencode, urlsplit, urlunsplit

from akasha.errors import ConfigError
from akasha.stores.redact import redact_url, userinfo_end

SCHEMES: tuple[str, ...] = ("chroma", "chromas", "postgresql", "postgres", "qdrant", "qdrants")
_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{1,510}[A-Za-z0-9]$")
_QDRANT_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,254}$")
_TABLE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]{0,39}$")
_EXAMPLES = ("chroma://host:port/collection, postgresql://user:pass@host:port/db?table=name or "
             "qdrant://host:port/collection")


@dataclass(frozen=True)
class ServerURL:
    """A parsed ``vector_store`` URL. ``display`` is safe to log (no password or token); so is its repr."""

    kind: str  # "chroma", "postgresql" or "qdrant"
    display: str
    host: str = ""
    port: int | None = None
    name: str = ""  # Chroma/Qdrant collection or PostgreSQL table
    ssl: bool = False
    token: str | None = field(default=None, repr=False)
    dsn: str = field(default="", repr=False)  # PostgreSQL: the libpq URI without akasha's own options
    options: dict[str, str] = field(default_factory=dict, repr=False)  # libpq options may hold secrets


def parse_vector_store(url: str) -> ServerURL:
    """Parse and check a ``vector_store`` URL; ConfigError says what is wrong and what is expected."""
    shown = redact_url(url) if isinstance(url, str) else type(url).__name__
    if not isinstance(url, str) or "://" not in url:
        raise ConfigError(f"vector_store {shown!r} is not a server URL; use {_EXAMPLES}")
    scheme, _, rest = url.strip().partition("://")
    scheme = scheme.lower()
    if scheme not in SCHEMES:
        raise ConfigError(f"unknown vector_store scheme {scheme!r} in {shown}; known: "
                          f"{', '.join(s + '://' for s in SCHEMES)}")
    # The user info first, by hand: a password may hold '/', '?' or '@', which urlsplit misreads.
    at = userinfo_end(rest)
    userinfo, rest = (rest[:at], rest[at + 1 :]) if at >= 0 else ("", rest)
    user, colon, password = userinfo.partition(":")
    try:
        parts = urlsplit(f"{scheme}://{rest}")
        hostname, port = parts.hostname, parts.port
    except ValueError:
        raise ConfigError(f"vector_store {shown} is not a valid URL (check the host and port); "
                          f"use {_EXAMPLES}") from None
    options = dict(parse_qsl(parts.query, keep_blank_values=True))
    login = (unquote(user), unquote(password) if colon else None) if at >= 0 else None
    kind = scheme.removesuffix("s")  # chromas://, qdrants://: the same servers over TLS
    if kind in _COLLECTION_SERVERS:
        return _parse_collection(kind, parts, scheme, hostname, port, login, options, shown)
    return _parse_postgres(parts, hostname, port, login, options, shown)


@dataclass(frozen=True)
class _CollectionServer:
    """What a ``<kind>://host:port/collection`` URL (Chroma, Qdrant) may hold."""

    name: re.Pattern[str]
    name_rule: str  # the collection names ``name`` accepts, in words
    port: int
    tls_port: int  # the port of ``chromas://``, ``qdrants://``
    options: tuple[str, ...] = ()  # the query options it takes


_COLLECTION_SERVERS = {
    "chroma": _CollectionServer(_NAME, "3-512 characters", 8000, 443, ("tenant", "database", "header")),
    "qdrant": _CollectionServer(_QDRANT_NAME, "1-255 characters", 6333, 6333),
}


def _parse_collection(kind: str, parts: Any, scheme: str, hostname: str | None, port: int | None,
                      login: tuple[str, str | None] | None, options: dict[str, str], shown: str) -> ServerURL:
    server = _COLLECTION_SERVERS[kind]
    name = unquote(parts.path.strip("/"))
    if not hostname:
        raise ConfigError(f"vector_store {shown} names no host; use {kind}://host:port/collection")
    if not server.name.match(name):
        raise ConfigError(f"vector_store {shown} needs a collection name of {server.name_rule} from "
                          f"[A-Za-z0-9._-] after the port, e.g. {kind}://localhost:{server.port}/team-docs")
    unknown = set(options) - set(server.options)
    if unknown:
        raise ConfigError(f"vector_store {shown}: unknown option(s) {', '.join(sorted(unknown))}; known: "
                          f"{', '.join(server.options) or 'none'} (pass a token as {kind}://:TOKEN@host:port/"
                          "collection or token=...)")
    tls = scheme == kind + "s"
    return ServerURL(kind, shown, host=hostname, port=port or (server.tls_port if tls else server.port), name=name,
                     ssl=tls, token=(login[1] or login[0] or None) if login else None, options=options)


def _parse_postgres(parts: Any, hostname: str | None, port: int | None, login: tuple[str, str | None] | None,
                    options: dict[str, str], shown: str) -> ServerURL:
    table = options.pop("table", "akasha")
    if not _TABLE.match(table):
        raise ConfigError(f"vector_store {shown}: table {table!r} must be a plain SQL identifier of at most "
                          "40 characters (letters, digits, underscores, not starting with a digit)")
    netloc = parts.netloc
    if login is not None:
        user, password = login
        creds = quote(user, safe="") + ("" if password is None else ":" + quote(password, safe=""))
        netloc = f"{creds}@{netloc}"
    dsn = urlunsplit(("postgresql", netloc, parts.path, urlencode(options), ""))
    return ServerURL("postgresql", shown, host=hostname or options.get("host", ""), port=port,
                     name=table.lower(), dsn=dsn, options=options)


_CORPUS = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$")


def check_corpus_name(name: object) -> str:
    """``name`` if it is a valid corpus name (letters, digits, ``.``, ``_``, ``-``; up to 128), ``""`` for None."""
    if name is None or name == "":
        return ""
    if not isinstance(name, str) or not _CORPUS.match(name):
        raise ConfigError(f"vector_store_options corpus {name!r} is not a valid corpus name: use letters, digits, "
                          "'.', '_' and '-', starting with a letter or digit, at most 128 characters")
    return name


#: ``vector_store_options`` every store accepts: ``corpus`` names the corpus a folder is indexed as
#: (document keys ``<corpus>/<relative path>``; a query worker searches only that corpus).
COMMON_OPTIONS = ("corpus",)
#: ``vector_store_options`` each kind of URL accepts besides :data:`COMMON_OPTIONS` (what :func:`open_store` takes).
STORE_OPTIONS: dict[str, tuple[str, ...]] = {
    "chroma": ("token", "retry"),
    "qdrant": ("token", "retry"),
    "postgresql": ("retry", "connect_timeout", "ef_search", "hnsw_m", "ef_construction"),
}


def check_store_options(vector_store: Any, options: Any) -> dict[str, Any]:
    """``vector_store_options`` checked against what ``vector_store`` accepts; ConfigError names an unknown key.

    A URL's kind decides the keys (:data:`STORE_OPTIONS`); a Store object takes only :data:`COMMON_OPTIONS`.
    """
    if options is None:
        return {}
    if not isinstance(options, dict) or not all(isinstance(k, str) for k in options):
        raise ConfigError(f"vector_store_options must be a dict of option names, got {type(options).__name__}")
    if vector_store is None:
        if options:
            raise ConfigError("vector_store_options needs a vector_store (a URL or a Store object)")
        return {}
    if isinstance(vector_store, str):
        kind = parse_vector_store(vector_store).kind
        known = COMMON_OPTIONS + STORE_OPTIONS[kind]
        where = f"a {kind} vector_store"
    else:
        known, where = COMMON_OPTIONS, "a Store object (configure it when you build it)"
    unknown = sorted(set(options) - set(known))
    if "server_knn" in unknown:
        raise ConfigError("vector_store_options server_knn is gone: searches of a server store always run in the "
                          "server's engine now; drop the option")
    if unknown:
        raise ConfigError(f"unknown vector_store_options {', '.join(map(repr, unknown))} for {where}; "
                          f"known: {', '.join(known)}")
    for name in ("ef_search", "hnsw_m", "ef_construction"):
        value = options.get(name)
        if value is not None and (isinstance(value, bool) or not isinstance(value, int) or value < 1):
            raise ConfigError(f"vector_store_options {name} must be a positive integer, got {value!r}")
    value = options.get("connect_timeout")
    if value is not None and (isinstance(value, bool) or not isinstance(value, (int, float)) or not value > 0):
        raise ConfigError(f"vector_store_options connect_timeout must be a positive number of seconds, got {value!r}")
    if "corpus" in options:
        check_corpus_name(options["corpus"])
    return dict(options)


def open_store(url: str, *, token: str | None = None, retry: Any = None, **options: Any) -> Any:
    """Connect to the store at ``url`` and return it as a :class:`~akasha.stores.base.Store`.

    ``token`` overrides the URL's (and ``$CHROMA_AUTH_TOKEN`` / ``$QDRANT_API_KEY``);
    ``retry`` is a :class:`~akasha.retry.Retry`; other ``options`` go to the
    store (``embedder=`` and ``dimension=`` check an existing collection). Raises
    ConfigError for a bad URL, MissingExtraError for a missing client library,
    ServerUnavailableError / ServerAuthError when the server cannot be used and
    IndexMismatchError when the collection holds another embedder's vectors.
    """
    spec = parse_vector_store(url)
    if spec.kind == "chroma":
        from akasha.stores.chroma import ChromaStore

        chosen = token or spec.token or os.environ.get("CHROMA_AUTH_TOKEN") or None
        return ChromaStore(spec.name, host=spec.host, port=int(spec.port or 8000), ssl=spec.ssl, token=chosen,
                           header=spec.options.get("header"), tenant=spec.options.get("tenant"),
                           database=spec.options.get("database"), retry=retry, display=spec.display, **options)
    if spec.kind == "qdrant":
        from akasha.stores.qdrant import QdrantStore

        chosen = token or spec.token or os.environ.get("QDRANT_API_KEY") or None
        address = f"{'https' if spec.ssl else 'http'}://{spec.host}:{spec.port}"
        return QdrantStore(collection=spec.name, url=address, api_key=chosen, retry=retry, display=spec.display,
                           **options)
    from akasha.stores.pgvector import PgVectorStore

    return PgVectorStore(table=spec.name, dsn=spec.dsn, retry=retry, display=spec.display, **options)


__all__ = ["COMMON_OPTIONS", "check_corpus_name", "SCHEMES", "STORE_OPTIONS", "ServerURL", "check_store_options",
           "open_store", "parse_vector_store", "redact_url"]
