"""vector_store URLs: parsing, secrets kept out of every message, and opening stores (no server needed)."""

from __future__ import annotations

import ast
import socket
from pathlib import Path

import pytest

from akasha.errors import ConfigError, ServerUnavailableError
from akasha.retry import Retry
from akasha.stores.redact import redact_url
from akasha.stores.urls import open_store, parse_vector_store

SECRETS = ("S3cr/etTok", "S3cr", "etTok", "pa?ssW0rd", "ssW0rd", "hunter2", "sk-123", "tok-9")


def closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def assert_no_secret(text: str) -> None:
    for secret in SECRETS:
        assert secret not in text, f"{secret!r} leaked into {text!r}"


@pytest.mark.parametrize(
    "url",
    [
        "chroma://:S3cr/etTok@host:8000/a b",  # bad collection name, after a token with '/'
        "chroma://:S3cr/etTok@host:99999/docs",  # bad port
        "chroma://:S3cr/etTok@host/docs?colour=red",  # unknown option
        "chroma://S3cr/etTok@/docs",  # token as user name, no host
        "postgresql://admin:pa?ssW0rd@host/db?table=drop;table",
        "postgresql://admin:pa?ssW0rd@host:notaport/db",
        "postgresql://admin:pa?ssW0rd@[::1/db",  # broken IPv6 literal: urlsplit raises
        "postgres://u@host/db?sslpassword=hunter2&table=bad-name",
        "postgresql://u@host/db?password=hunter2&sslmode=require&table=1bad",
        "redis://:hunter2@host:6379/0",  # unknown scheme
        "qdrant://:sk-123@host:6333/",  # no collection
        "qdrant://:sk-123@host:6333/docs?api_key=tok-9",
        "chromas://:S3cr/etTok@host/docs?tenant=t&token=tok-9",
    ],
)
def test_secrets_never_reach_a_config_error(url):
    with pytest.raises(ConfigError) as info:
        parse_vector_store(url)
    assert_no_secret(str(info.value))
    assert "***" in str(info.value) or "@" not in url.split("?")[0]


def test_secrets_never_reach_display_or_repr():
    for url in ("chroma://:S3cr/etTok@host:8000/docs", "postgresql://admin:pa?ssW0rd@host/db?sslmode=require",
                "qdrants://:sk-123@q.example/docs", "postgresql://u:hunter2@h/db?sslpassword=tok-9"):
        spec = parse_vector_store(url)
        assert_no_secret(spec.display)
        assert_no_secret(repr(spec))
        assert_no_secret(redact_url(url))


def test_tokens_and_passwords_with_url_characters_are_parsed_whole():
    chroma = parse_vector_store("chroma://:S3cr/etTok@host:8000/team-docs")
    assert (chroma.token, chroma.host, chroma.port, chroma.name) == ("S3cr/etTok", "host", 8000, "team-docs")
    assert parse_vector_store("chroma://tok-9@host/team-docs").token == "tok-9"
    pg = parse_vector_store("postgresql://admin:pa?ssW0rd@db.local:5433/rag?table=idx&sslmode=require")
    assert (pg.host, pg.port, pg.name, pg.options) == ("db.local", 5433, "idx", {"sslmode": "require"})
    from psycopg.conninfo import conninfo_to_dict

    parsed = conninfo_to_dict(pg.dsn)
    assert (parsed["user"], parsed["password"], parsed["dbname"], parsed["sslmode"]) == (
        "admin", "pa?ssW0rd", "rag", "require")
    assert parse_vector_store("postgresql://u:p@h/db?options=a@b").host == "h"  # an '@' in the query stays there


def test_qdrant_urls():
    spec = parse_vector_store("qdrant://q.example/team-docs")
    assert (spec.kind, spec.host, spec.port, spec.name, spec.ssl, spec.token) == (
        "qdrant", "q.example", 6333, "team-docs", False, None)
    tls = parse_vector_store("qdrants://:sk-123@q.example:443/docs")
    assert (tls.ssl, tls.port, tls.token) == (True, 443, "sk-123")


def test_old_names_still_import_from_index_servers():
    import importlib.util

    import akasha.index.servers as servers
    import akasha.stores.urls as urls

    assert servers.parse_vector_store is urls.parse_vector_store and servers.ServerURL is urls.ServerURL
    assert servers.open_store is urls.open_store
    # the previous release's shared-index backends are gone: every URL opens a store
    assert not hasattr(servers, "open_backend") and importlib.util.find_spec("akasha.index.backends") is None


def test_chroma_url_parts_and_defaults():
    spec = parse_vector_store("chroma://db.example:9000/team-docs")
    assert (spec.kind, spec.host, spec.port, spec.name, spec.ssl, spec.token) == (
        "chroma", "db.example", 9000, "team-docs", False, None)
    assert parse_vector_store("chroma://db.example/team-docs").port == 8000
    tls = parse_vector_store("chromas://db.example/team-docs?tenant=t1&database=d1")
    assert (tls.ssl, tls.port, tls.options) == (True, 443, {"tenant": "t1", "database": "d1"})


def test_postgres_url_gives_libpq_its_options_but_not_the_table():
    spec = parse_vector_store("postgresql://alice:pw123@pg.local:5433/rag?table=team_idx&sslmode=require")
    assert (spec.kind, spec.name, spec.port) == ("postgresql", "team_idx", 5433)
    assert "table=" not in spec.dsn and "sslmode=require" in spec.dsn and "pw123" in spec.dsn
    assert "pw123" not in spec.display and "alice:***@" in spec.display
    assert parse_vector_store("postgres://h/db").name == "akasha"


@pytest.mark.parametrize(
    ("url", "words"),
    [
        ("redis://localhost:6379/x", ["unknown vector_store scheme", "chroma://", "postgresql://"]),
        ("./folder", ["not a server URL"]),
        ("chroma://localhost:8000/", ["collection name"]),
        ("chroma://localhost:8000/a b", ["collection name"]),
        ("chroma://localhost:8000/docs?colour=red", ["unknown option", "colour"]),
        ("postgresql://u:p@h/db?table=drop;table", ["plain SQL identifier"]),
    ],
)
def test_bad_urls_raise_config_error_saying_what_is_expected(url, words):
    with pytest.raises(ConfigError) as info:
        parse_vector_store(url)
    for word in words:
        assert word in str(info.value)
    assert "p@" not in str(info.value) or "u:***@" in str(info.value)


def test_stores_never_import_the_index():
    """akasha.stores sits below akasha.index: no module of it imports akasha.index, not even in a function."""
    folder = Path(__file__).resolve().parents[1] / "akasha" / "stores"
    offenders = []
    for path in folder.glob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else (
                [node.module or ""] if isinstance(node, ast.ImportFrom) else [])
            offenders += [f"{path.name}: {n}" for n in names if n == "akasha.index" or n.startswith("akasha.index.")]
    assert offenders == []


@pytest.mark.parametrize("scheme", ["chroma", "qdrant"])
def test_unreachable_server_is_a_clear_bounded_error(scheme):
    pytest.importorskip("chromadb" if scheme == "chroma" else "qdrant_client")
    port = closed_port()
    with pytest.raises(ServerUnavailableError) as info:
        open_store(f"{scheme}://:tok-9@127.0.0.1:{port}/docs", retry=Retry(attempts=2, base=0.01))
    assert f"127.0.0.1:{port}/docs" in str(info.value) and "Start the server" in str(info.value)
    assert_no_secret(str(info.value))


def test_unreachable_postgres_is_a_clear_bounded_error():
    pytest.importorskip("psycopg")
    port = closed_port()
    with pytest.raises(ServerUnavailableError) as info:
        open_store(f"postgresql://u:hunter2@127.0.0.1:{port}/db?sslpassword=tok-9",
                   retry=Retry(attempts=2, base=0.01))
    assert f"127.0.0.1:{port}/db" in str(info.value) and "Start the server" in str(info.value)
    assert_no_secret(str(info.value))
