"""One bounded HTTP transport for every provider client: a cap on a reply's size and a deadline.

httpx's ``timeout`` is per read: a server that drips one byte a second, or whose body (or SSE
stream) never ends, keeps a request alive and growing without limit. :class:`BoundedTransport`
wraps httpx's own transport and counts the body as it is read: past ``max_bytes`` or past
the request's deadline (:mod:`akasha.providers.deadline`: one clock for a call and all its
retries, started by the retry loop, or at sending when no loop runs) it raises
:class:`ReplyLimitError`, which names the endpoint with any credentials redacted. httpx's
per-read timeouts are shortened to what is left of the deadline, so a server silent before
its headers is cut at the deadline too. The OpenAI and Ollama connections
build their clients on it (``httpx``, or ``httpx2`` under the openai package) (streams included,
since the same body iterator is wrapped).

Bounds (see docs/threat-model.md): ``AKASHA_MAX_REPLY_MB`` (default 64) and
``AKASHA_REQUEST_DEADLINE_S`` (default 600).
"""

from __future__ import annotations

import functools
from collections.abc import AsyncIterator, Iterator
from typing import Any

from akasha.providers.deadline import (
    DEFAULT_DEADLINE_S,
    Deadline,
    current_deadline,
    deadline_seconds,
)
from akasha.providers.env import positive_env
from akasha.stores.redact import redact_url

DEFAULT_MAX_REPLY_MB = 64.0


def reply_limits() -> tuple[int, float]:
    """``(max_bytes, deadline_s)`` from the environment (or the defaults)."""
    megabytes = positive_env("AKASHA_MAX_REPLY_MB", DEFAULT_MAX_REPLY_MB)
    return int(megabytes * 1024 * 1024), deadline_seconds()


class ReplyLimitError(Exception):
    """A reply grew past the size cap or outlived the request deadline (not worth retrying).

    Raised as a subclass of the client library's own ``TransportError`` (see :func:`transports`),
    so each client wraps it as it wraps a dropped connection.
    """


class _Budget:
    """One reply's allowance: ``max_bytes`` of body, read before ``deadline`` passes."""

    def __init__(self, url: str, max_bytes: int, deadline: Deadline, error: type[Exception]) -> None:
        self.url, self.max_bytes, self.deadline, self.error = url, max_bytes, deadline, error
        self.seen = 0

    @classmethod
    def for_request(cls, request: Any, error: type[Exception]) -> _Budget:
        """The budget of ``request`` under the current deadline (a new one when no retry loop started one).

        Raises ``error`` when the deadline has already passed, and shortens the request's
        per-read timeouts to the time left.
        """
        max_bytes, _ = reply_limits()
        deadline = current_deadline() or Deadline(deadline_seconds())
        budget = cls(redact_url(str(request.url)), max_bytes, deadline, error)
        left = deadline.remaining()
        if left <= 0:
            raise error(f"no time left to ask {budget.url} within {deadline.describe()}")
        timeouts = request.extensions.get("timeout")
        if isinstance(timeouts, dict):
            request.extensions["timeout"] = {
                name: left if value is None else min(float(value), left) for name, value in timeouts.items()}
        return budget

    def count(self, chunk: bytes) -> None:
        self.seen += len(chunk)
        if self.seen > self.max_bytes:
            raise self.error(
                f"reply from {self.url} exceeded {self.max_bytes} bytes (raise AKASHA_MAX_REPLY_MB if it is genuine)")
        if self.deadline.passed():
            raise self.error(
                f"reply from {self.url} still arriving after {self.deadline.describe()}; "
                "raise AKASHA_REQUEST_DEADLINE_S if the server is genuinely slow")


@functools.cache
def transports(module: Any) -> tuple[type, type]:
    """``(BoundedTransport, AsyncBoundedTransport)`` classes for an httpx-like ``module``."""
    error = type("ReplyLimitError", (ReplyLimitError, module.TransportError), {})

    class _SyncBody(module.SyncByteStream):
        def __init__(self, inner: Any, budget: _Budget) -> None:
            self._inner, self._budget = inner, budget

        def __iter__(self) -> Iterator[bytes]:
            for chunk in self._inner:
                self._budget.count(chunk)
                yield chunk

        def close(self) -> None:
            self._inner.close()

    class _AsyncBody(module.AsyncByteStream):
        def __init__(self, inner: Any, budget: _Budget) -> None:
            self._inner, self._budget = inner, budget

        async def __aiter__(self) -> AsyncIterator[bytes]:
            async for chunk in self._inner:
                self._budget.count(chunk)
                yield chunk

        async def aclose(self) -> None:
            await self._inner.aclose()

    class BoundedTransport(module.HTTPTransport):
        """httpx's transport with every reply body counted against a size cap and a deadline."""

        def handle_request(self, request: Any) -> Any:
            budget = _Budget.for_request(request, error)
            response = super().handle_request(request)
            response.stream = _SyncBody(response.stream, budget)
            return response

    class AsyncBoundedTransport(module.AsyncHTTPTransport):
        """Async twin of BoundedTransport."""

        async def handle_async_request(self, request: Any) -> Any:
            budget = _Budget.for_request(request, error)
            response = await super().handle_async_request(request)
            response.stream = _AsyncBody(response.stream, budget)
            return response

    return BoundedTransport, AsyncBoundedTransport


def bounded_request(method: str, url: str, **kwargs: Any) -> Any:
    """``httpx.request`` through :func:`transports`' bounded transport (the reply is read within the bounds)."""
    import httpx

    with httpx.Client(transport=transports(httpx)[0]()) as client:
        return client.request(method, url, **kwargs)


def bounded_post(url: str, **kwargs: Any) -> Any:
    """``httpx.post``, bounded (see :func:`bounded_request`)."""
    return bounded_request("POST", url, **kwargs)


def bounded_get(url: str, **kwargs: Any) -> Any:
    """``httpx.get``, bounded (see :func:`bounded_request`)."""
    return bounded_request("GET", url, **kwargs)


__all__ = ["DEFAULT_DEADLINE_S", "DEFAULT_MAX_REPLY_MB", "ReplyLimitError", "bounded_get", "bounded_post",
           "bounded_request", "reply_limits", "transports"]
