"""issue 33: one deadline for the whole request, its retries and backoff sleeps included.

``AKASHA_REQUEST_DEADLINE_S`` bounds a call from its first attempt to its last byte: a
server that answers 503 slowly to every attempt, or asks for a long Retry-After, cannot
stretch one call to (retries + 1) deadlines. Each case runs against a local server; what shows
the deadline ended the call is the error naming it, the attempts the server saw and the sleeps
asked for, not the wall clock (noisy on a shared machine).
"""

from __future__ import annotations

import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from akasha.errors import ProviderError
from akasha.llm import resolve_chat_model

SPECS = ["openai:m@http://127.0.0.1:{port}/v1", "ollama:m@http://127.0.0.1:{port}",
         "gemini:m@http://127.0.0.1:{port}"]


def _serve_503(*, drip_s: float, retry_after: str | None = None):
    """A server answering every POST with a 503 whose body drips for ``drip_s`` seconds; counts the requests."""
    seen = []

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.0"

        def do_POST(self):
            seen.append(self.path)
            self.rfile.read(int(self.headers.get("Content-Length") or 0))
            self.send_response(503)
            self.send_header("Content-Type", "application/json")
            if retry_after is not None:
                self.send_header("Retry-After", retry_after)
            self.end_headers()
            body = b'{"error": {"message": "overloaded", "code": 503}}'
            try:
                steps = 10
                self.wfile.write(b" ")
                self.wfile.flush()
                for _ in range(steps):
                    time.sleep(drip_s / steps)
                    self.wfile.write(b" ")
                    self.wfile.flush()
                self.wfile.write(body)
            except OSError:
                pass

        def log_message(self, *args):
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server, seen


@pytest.mark.parametrize("spec", SPECS)
def test_slow_503_replies_and_their_retries_share_one_deadline(monkeypatch, spec):
    """Every attempt ends well inside the deadline, but five of them do not: the call ends at the deadline."""
    monkeypatch.setenv("GEMINI_API_KEY", "k")
    monkeypatch.setenv("AKASHA_REQUEST_DEADLINE_S", "2")
    server, seen = _serve_503(drip_s=1.2)
    try:
        model = resolve_chat_model(spec.format(port=server.server_address[1]), timeout=10, max_retries=5,
                                   retry_initial_delay=0.05, retry_jitter=0.0)
        with pytest.raises(ProviderError, match="deadline") as caught:
            model.generate([{"role": "user", "content": "hi"}])
        assert len(seen) <= 2, seen  # unbounded: six attempts of 1.2 s each
        assert "AKASHA_REQUEST_DEADLINE_S" in str(caught.value)
    finally:
        server.shutdown()


@pytest.mark.parametrize("spec", SPECS)
def test_a_retry_after_past_the_deadline_is_not_waited_for(monkeypatch, spec):
    """A Retry-After of 30 s (below retry_max_wait) with a 2 s deadline gives up at once, naming the deadline."""
    from sleeps import record_sleeps

    monkeypatch.setenv("GEMINI_API_KEY", "k")
    monkeypatch.setenv("AKASHA_REQUEST_DEADLINE_S", "2")
    server, seen = _serve_503(drip_s=0.0, retry_after="30")
    try:
        model = resolve_chat_model(spec.format(port=server.server_address[1]), timeout=10, max_retries=3)
        slept = record_sleeps(monkeypatch)
        with pytest.raises(ProviderError, match="deadline") as caught:
            model.generate([{"role": "user", "content": "hi"}])
        assert not [s for s in slept if s >= 2]  # unbounded: a 30 s sleep, then more attempts
        assert len(seen) == 1
        assert "503" in str(caught.value) or "overloaded" in str(caught.value)
    finally:
        server.shutdown()


def test_the_async_call_shares_one_deadline_too(monkeypatch):
    import asyncio

    monkeypatch.setenv("AKASHA_REQUEST_DEADLINE_S", "2")
    server, seen = _serve_503(drip_s=1.2)
    try:
        model = resolve_chat_model(f"openai:m@http://127.0.0.1:{server.server_address[1]}/v1", timeout=10,
                                   max_retries=5, retry_initial_delay=0.05, retry_jitter=0.0)
        with pytest.raises(ProviderError, match="deadline"):
            asyncio.run(model.agenerate([{"role": "user", "content": "hi"}]))
        assert len(seen) <= 2  # unbounded: six attempts of 1.2 s each
    finally:
        server.shutdown()


def test_a_server_silent_before_its_headers_is_cut_at_the_deadline(monkeypatch):
    """httpx's timeout is per read: 10 s; the request deadline (1.5 s) ends a server that never answers."""
    monkeypatch.setenv("AKASHA_REQUEST_DEADLINE_S", "1.5")
    seen = []

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self):
            seen.append(self.path)
            time.sleep(15)

        def log_message(self, *args):
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        model = resolve_chat_model(f"openai:m@http://127.0.0.1:{server.server_address[1]}/v1", timeout=10,
                                   max_retries=3, retry_initial_delay=0.05)
        with pytest.raises(ProviderError, match="deadline"):
            model.generate([{"role": "user", "content": "hi"}])
        assert len(seen) == 1  # unbounded: 10 s per attempt, four attempts
    finally:
        server.shutdown()
