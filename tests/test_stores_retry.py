"""Retry: bounded backoff for a server that is briefly away, refused logins at once (no server needed)."""

from __future__ import annotations

import pytest

from akasha.errors import ServerAuthError, ServerUnavailableError
from akasha.retry import Retry


def test_retry_backs_off_then_names_the_server(monkeypatch):
    from sleeps import record_sleeps

    slept = record_sleeps(monkeypatch)
    calls = []

    def down():
        calls.append(1)
        raise ConnectionError("refused")

    retry = Retry(attempts=4, base=0.02, max_delay=0.05)
    with pytest.raises(ServerUnavailableError) as info:
        retry.run(down, server="the Chroma server chroma://h:1/x", what="reading", transient=(ConnectionError,))
    assert len(calls) == 4
    assert len(slept) == 3 and all(0.01 <= s <= 0.06 for s in slept)  # base 0.02, doubling, capped at 0.05, +-20%
    message = str(info.value)
    assert "chroma://h:1/x" in message and "after 4 attempts" in message and "run the same call again" in message
    assert isinstance(info.value, ConnectionError)  # callers catching ConnectionError still do


def test_retry_recovers_when_the_server_comes_back():
    state = {"n": 0, "reconnects": 0}

    def flaky():
        state["n"] += 1
        if state["n"] < 3:
            raise ConnectionError("refused")
        return "ok"

    def reconnect():
        state["reconnects"] += 1

    assert Retry(attempts=5, base=0.01).run(flaky, server="s", what="w", transient=(ConnectionError,),
                                            on_retry=reconnect) == "ok"
    assert (state["n"], state["reconnects"]) == (3, 2)


def test_auth_errors_are_not_retried_and_other_errors_pass_through():
    calls = []

    def refused():
        calls.append(1)
        raise PermissionError("401 Unauthorized")

    with pytest.raises(ServerAuthError, match="refused the credentials.*Pass the token"):
        Retry(attempts=5, base=0.01).run(refused, server="s", what="w", transient=(ConnectionError, PermissionError),
                                         auth=lambda exc: "401" in str(exc), hint="Pass the token.")
    assert calls == [1]
    with pytest.raises(KeyError):
        Retry(attempts=5, base=0.01).run(lambda: {}["x"], server="s", what="w", transient=(ConnectionError,))


def test_delays_grow_and_are_capped():
    delays = list(Retry(attempts=6, base=0.5, max_delay=2.0).delays())
    assert len(delays) == 5
    assert delays[0] == pytest.approx(0.5, rel=0.21) and all(d <= 2.0 * 1.2 for d in delays)
    assert delays[-1] >= 2.0 * 0.8


def test_lock_is_held_during_each_attempt_and_released_while_waiting():
    import threading

    lock = threading.Lock()
    seen = []

    def flaky():
        seen.append(("attempt", lock.locked()))
        if len([e for e in seen if e[0] == "attempt"]) < 3:
            raise ConnectionError("refused")
        return "ok"

    assert Retry(attempts=3, base=0.01).run(flaky, server="s", what="w", transient=(ConnectionError,), lock=lock,
                                            on_retry=lambda: seen.append(("waiting", lock.locked()))) == "ok"
    assert seen == [("attempt", True), ("waiting", False), ("attempt", True), ("waiting", False), ("attempt", True)]
    assert not lock.locked()


def test_giving_up_chains_the_server_error_to_its_cause():
    """The store's error keeps the client's exception as ``__cause__`` (as ``raise ... from exc``)."""
    refused = ConnectionError("refused")

    def down():
        raise refused

    with pytest.raises(ServerUnavailableError) as info:
        Retry(attempts=1).run(down, server="s", what="w", transient=(ConnectionError,))
    assert info.value.__cause__ is refused


def test_stores_and_providers_share_one_retry_loop(monkeypatch):
    """Both doors sleep through :func:`akasha.retry.retry_calls`: patching its sleep stops both from waiting."""
    import akasha.retry as retry_module
    from akasha.retry import Fault, RetryPolicy, call_with_retry

    waits: list[float] = []
    monkeypatch.setattr(retry_module.time, "sleep", waits.append)
    calls = {"n": 0}

    def flaky():
        calls["n"] += 1
        if calls["n"] % 2:
            raise ConnectionError("refused")
        return "ok"

    assert Retry(attempts=2, base=5.0).run(flaky, server="s", what="w", transient=(ConnectionError,)) == "ok"
    assert call_with_retry(flaky, provider="p", policy=RetryPolicy(max_retries=1, initial_delay=5.0),
                           translate=lambda exc: Fault(str(exc), 503, retryable=True)) == "ok"
    assert len(waits) == 2 and all(w >= 4.0 for w in waits)


def test_a_chroma_segment_not_yet_on_disk_is_retried_and_other_internal_errors_are_not(tmp_path):
    """Two indexers starting on one new collection: a read may meet a segment the other has not persisted yet."""
    import chromadb.errors
    import httpx

    from akasha.stores.chroma import ChromaStore

    store = ChromaStore(collection="retry-test", path=str(tmp_path / "chroma"))
    not_yet = chromadb.errors.InternalError(
        "Error executing plan: Internal error: Error creating hnsw segment reader: Nothing found on disk")
    assert store._transient(not_yet) and store._transient(httpx.ConnectError("refused"))
    assert not store._transient(chromadb.errors.InternalError("Error executing plan: bad where clause"))

    attempts = []

    def read():
        attempts.append(1)
        if len(attempts) == 1:
            raise not_yet
        return "rows"

    assert Retry(attempts=3, base=0.001, max_delay=0.001).run(read, server="s", what="reading",
                                                              transient=store._transient) == "rows"
    with pytest.raises(chromadb.errors.InternalError):  # not transient: raised at once, not retried
        Retry(attempts=3, base=0.001).run(lambda: (_ for _ in ()).throw(chromadb.errors.InternalError("bad")),
                                          server="s", what="reading", transient=store._transient)
