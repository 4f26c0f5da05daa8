"""issue 33: one deadline for the whole request, its retries and backoff sleeps included.

``AKASHA_REQUEST_DEADLINE_S`` bounds a call from its first attempt to its last byte: a
server that answers 503 slowly to every attempt, or asks for a long Retry-After, cannot
stretch one call to (retries + 1) deadlines. Each case runs against a local server; what shows
the deadline ended the call is the error naming it, the attempts the server saw and the sleeps
asked for, not the wall clock (noisy on a shared machine).
"""

from __future__ import annotations

import time

import pytest
from http_fixtures import drip, send_head, serving

from akasha.errors import ProviderError
from akasha.llm import resolve_chat_model

SPECS = ["openai:m@http://127.0.0.1:{port}/v1", "ollama:m@http://127.0.0.1:{port}",
         "gemini:m@http://127.0.0.1:{port}"]


def _dripping_503(*, drip_s: float, retry_after: str | None = None):
    """A reply: a 503 whose body drips for ``drip_s`` seconds before the error arrives."""

    def reply(handler):
        wfile = send_head(handler, 503, "application/json", {"Retry-After": retry_after} if retry_after else None)
        drip(wfile, [b" "] * 10, drip_s / 10)
        wfile.write(b'{"error": {"message": "overloaded", "code": 503}}')

    return reply


@pytest.mark.parametrize("spec", SPECS)
def test_slow_503_replies_and_their_retries_share_one_deadline(monkeypatch, spec):
    """Every attempt ends well inside the deadline, but five of them do not: the call ends at the deadline."""
    monkeypatch.setenv("GEMINI_API_KEY", "k")
    monkeypatch.setenv("AKASHA_REQUEST_DEADLINE_S", "2")
    with serving(_dripping_503(drip_s=1.2)) as (port, seen):
        model = resolve_chat_model(spec.format(port=port), timeout=10, max_retries=5,
                                   retry_initial_delay=0.05, retry_jitter=0.0)
        with pytest.raises(ProviderError, match="deadline") as caught:
            model.generate([{"role": "user", "content": "hi"}])
        assert len(seen) <= 2, seen  # unbounded: six attempts of 1.2 s each
        assert "AKASHA_REQUEST_DEADLINE_S" in str(caught.value)


@pytest.mark.parametrize("spec", SPECS)
def test_a_retry_after_past_the_deadline_is_not_waited_for(monkeypatch, spec):
    """A Retry-After of 30 s (below retry_max_wait) with a 2 s deadline gives up at once, naming the deadline."""
    from sleeps import record_sleeps

    monkeypatch.setenv("GEMINI_API_KEY", "k")
    monkeypatch.setenv("AKASHA_REQUEST_DEADLINE_S", "2")
    with serving(_dripping_503(drip_s=0.0, retry_after="30")) as (port, seen):
        model = resolve_chat_model(spec.format(port=port), timeout=10, max_retries=3)
        slept = record_sleeps(monkeypatch)
        with pytest.raises(ProviderError, match="deadline") as caught:
            model.generate([{"role": "user", "content": "hi"}])
        assert not [s for s in slept if s >= 2]  # unbounded: a 30 s sleep, then more attempts
        assert len(seen) == 1
        assert "503" in str(caught.value) or "overloaded" in str(caught.value)


def test_the_async_call_shares_one_deadline_too(monkeypatch):
    import asyncio

    monkeypatch.setenv("AKASHA_REQUEST_DEADLINE_S", "2")
    with serving(_dripping_503(drip_s=1.2)) as (port, seen):
        model = resolve_chat_model(f"openai:m@http://127.0.0.1:{port}/v1", timeout=10,
                                   max_retries=5, retry_initial_delay=0.05, retry_jitter=0.0)
        with pytest.raises(ProviderError, match="deadline"):
            asyncio.run(model.agenerate([{"role": "user", "content": "hi"}]))
        assert len(seen) <= 2  # unbounded: six attempts of 1.2 s each


def test_a_server_silent_before_its_headers_is_cut_at_the_deadline(monkeypatch):
    """httpx's timeout is per read: 10 s; the request deadline (1.5 s) ends a server that never answers."""
    monkeypatch.setenv("AKASHA_REQUEST_DEADLINE_S", "1.5")
    with serving(lambda handler: time.sleep(15)) as (port, seen):
        model = resolve_chat_model(f"openai:m@http://127.0.0.1:{port}/v1", timeout=10,
                                   max_retries=3, retry_initial_delay=0.05)
        with pytest.raises(ProviderError, match="deadline"):
            model.generate([{"role": "user", "content": "hi"}])
        assert len(seen) == 1  # unbounded: 10 s per attempt, four attempts
