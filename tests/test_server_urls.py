"""vector_store URLs, retries and refused connections (no server needed: fast tests)."""

from __future__ import annotations

import socket
import time

import pytest

from akasha.errors import ConfigError
from akasha.index.backends import Retry, ServerAuthError, ServerUnavailableError
from akasha.index.servers import open_backend, parse_vector_store


def closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])  # nothing listens once the socket is closed


def test_chroma_url_parts_and_defaults():
    spec = parse_vector_store("chroma://db.example:9000/team-docs")
    assert (spec.kind, spec.host, spec.port, spec.name, spec.ssl, spec.token) == (
        "chroma", "db.example", 9000, "team-docs", False, None)
    assert parse_vector_store("chroma://db.example/team-docs").port == 8000
    tls = parse_vector_store("chromas://db.example/team-docs?tenant=t1&database=d1")
    assert (tls.ssl, tls.port, tls.options) == (True, 443, {"tenant": "t1", "database": "d1"})


def test_chroma_token_in_url_is_used_and_redacted():
    spec = parse_vector_store("chroma://:s3cret@localhost:8000/docs")
    assert spec.token == "s3cret"
    assert "s3cret" not in spec.display and "***" in spec.display


def test_postgres_url_keeps_libpq_options_and_hides_password():
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


def test_retry_backs_off_then_names_the_server():
    calls = []

    def down():
        calls.append(time.perf_counter())
        raise ConnectionError("refused")

    retry = Retry(attempts=4, base=0.02, max_delay=0.05)
    with pytest.raises(ServerUnavailableError) as info:
        retry.run(down, server="the Chroma server chroma://h:1/x", what="reading", transient=(ConnectionError,))
    assert len(calls) == 4
    gaps = [b - a for a, b in zip(calls, calls[1:])]
    assert all(0.01 <= g < 1.0 for g in gaps)
    message = str(info.value)
    assert "chroma://h:1/x" in message and "after 4 attempts" in message and "run the same call again" in message


def test_retry_recovers_when_the_server_comes_back():
    state = {"n": 0}

    def flaky():
        state["n"] += 1
        if state["n"] < 3:
            raise ConnectionError("refused")
        return "ok"

    assert Retry(attempts=5, base=0.01).run(flaky, server="s", what="w", transient=(ConnectionError,)) == "ok"
    assert state["n"] == 3


def test_auth_errors_are_not_retried_and_other_errors_pass_through():
    calls = []

    def refused():
        calls.append(1)
        raise PermissionError("401 Unauthorized")

    with pytest.raises(ServerAuthError, match="refused the credentials"):
        Retry(attempts=5, base=0.01).run(refused, server="s", what="w", transient=(ConnectionError, PermissionError),
                                         auth=lambda exc: "401" in str(exc), hint="Pass the token.")
    assert calls == [1]
    with pytest.raises(KeyError):
        Retry(attempts=5, base=0.01).run(lambda: {}["x"], server="s", what="w", transient=(ConnectionError,))


def test_chroma_server_down_is_a_clear_bounded_error():
    pytest.importorskip("chromadb")
    port = closed_port()
    started = time.perf_counter()
    with pytest.raises(ServerUnavailableError) as info:
        open_backend(f"chroma://127.0.0.1:{port}/docs", retry=Retry(attempts=2, base=0.01))
    assert time.perf_counter() - started < 20
    assert f"127.0.0.1:{port}/docs" in str(info.value) and "Start the server" in str(info.value)


def test_postgres_server_down_is_a_clear_bounded_error():
    pytest.importorskip("psycopg")
    port = closed_port()
    with pytest.raises(ServerUnavailableError) as info:
        open_backend(f"postgresql://u:pw@127.0.0.1:{port}/db", retry=Retry(attempts=2, base=0.01))
    assert f"127.0.0.1:{port}/db" in str(info.value) and "pw" not in str(info.value).replace("postgresql", "")
