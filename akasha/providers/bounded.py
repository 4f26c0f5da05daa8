"""One bounded HTTP transport for every provider client: a cap on a reply's size and one deadline per call.

httpx's ``timeout`` is per read and a request is retried: a server that drips one byte a second,
or whose body never ends, would keep a call alive without limit. :func:`request_deadline` starts
one clock where a call begins (:func:`akasha.retry.call_with_retry`) and makes it the current
deadline of that thread or task (a :mod:`contextvars` variable, so it reaches the transport; a
request outside any retry loop gets its own). :func:`transports`' ``BoundedTransport`` shortens
httpx's per-read timeouts to what is left and counts every reply body (streams included): past
``max_bytes`` or the deadline it raises :class:`ReplyLimitError`, naming the endpoint redacted.

Bounds (see docs/threat-model.md): ``AKASHA_MAX_REPLY_MB`` (default 64) and
``AKASHA_REQUEST_DEADLINE_S`` (default 600).
"""

from __future__ import annotations

import contextvars
import functools
import time
from collections.abc import AsyncIterator, Iterator
from contextlib import contextmanager
from typing import Any

from akasha.providers.env import positive_env

DEFAULT_MAX_REPLY_MB = 64.0
#: Seconds one request may take from its first attempt to its last byte (``AKASHA_REQUEST_DEADLINE_S``).
DEFAULT_DEADLINE_S = 600.0
DEADLINE_VARIABLE = "AKASHA_REQUEST_DEADLINE_S"


def deadline_seconds() -> float:
    """``AKASHA_REQUEST_DEADLINE_S`` (or the default 600); ConfigError for a value that is not a positive number."""
    return positive_env(DEADLINE_VARIABLE, DEFAULT_DEADLINE_S)


def reply_limits() -> tuple[int, float]:
    """``(max_bytes, deadline_s)`` from the environment (or the defaults)."""
    megabytes = positive_env("AKASHA_MAX_REPLY_MB", DEFAULT_MAX_REPLY_MB)
    return int(megabytes * 1024 * 1024), deadline_seconds()


class Deadline:
    """A request's time budget: started once, shared by its attempts, sleeps and reads."""

    def __init__(self, seconds: float) -> None:
        self.seconds = float(seconds)
        self.ends = time.monotonic() + self.seconds

    def remaining(self) -> float:
        """Seconds left (0 once passed)."""
        return max(0.0, self.ends - time.monotonic())

    def describe(self) -> str:
        """``the 600 s request deadline (AKASHA_REQUEST_DEADLINE_S)`` for messages."""
        return f"the {self.seconds:g} s request deadline ({DEADLINE_VARIABLE})"

    def __repr__(self) -> str:
        return f"Deadline({self.seconds:g} s, {self.remaining():.2f} s left)"


_CURRENT: contextvars.ContextVar[Deadline | None] = contextvars.ContextVar("akasha_request_deadline", default=None)


@contextmanager
def request_deadline() -> Iterator[Deadline]:
    """The current deadline, or a new one (``AKASHA_REQUEST_DEADLINE_S`` from now) made current for the block;
    nested calls share the outermost one, so a retried request that itself retries cannot restart the clock."""
    existing = _CURRENT.get()
    if existing is not None:
        yield existing
        return
    deadline = Deadline(deadline_seconds())
    token = _CURRENT.set(deadline)
    try:
        yield deadline
    finally:
        _CURRENT.reset(token)


class ReplyLimitError(Exception):
    """A reply grew past the size cap or outlived the request deadline (not worth retrying); raised as a
    subclass of the client library's ``TransportError``, so each client wraps it as a dropped connection."""


class _Budget:
    """One reply's allowance: ``max_bytes`` of body, read before ``deadline`` passes."""

    def __init__(self, request: Any, error: type[Exception]) -> None:
        """The budget of ``request`` under the current deadline (a new one outside a retry loop); raises
        ``error`` when it has passed, and shortens the request's per-read timeouts to the time left."""
        # Imported here: akasha.retry imports this module for its deadline, and the stores package that holds
        # redact_url loads numpy and every store module (about 60 ms) that a retry loop alone never needs.
        from akasha.stores.redact import redact_url

        self.max_bytes, _ = reply_limits()
        self.url, self.error, self.seen = redact_url(str(request.url)), error, 0
        self.deadline = _CURRENT.get() or Deadline(deadline_seconds())
        left = self.deadline.remaining()
        if left <= 0:
            raise error(f"no time left to ask {self.url} within {self.deadline.describe()}")
        timeouts = request.extensions.get("timeout")
        if isinstance(timeouts, dict):
            request.extensions["timeout"] = {
                name: left if value is None else min(float(value), left) for name, value in timeouts.items()}

    def count(self, chunk: bytes) -> None:
        self.seen += len(chunk)
        if self.seen > self.max_bytes:
            raise self.error(
                f"reply from {self.url} exceeded {self.max_bytes} bytes (raise AKASHA_MAX_REPLY_MB if it is genuine)")
        if self.deadline.remaining() <= 0:
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
            budget = _Budget(request, error)
            response = super().handle_request(request)
            response.stream = _SyncBody(response.stream, budget)
            return response

    class AsyncBoundedTransport(module.AsyncHTTPTransport):
        """Async twin of BoundedTransport."""

        async def handle_async_request(self, request: Any) -> Any:
            budget = _Budget(request, error)
            response = await super().handle_async_request(request)
            response.stream = _AsyncBody(response.stream, budget)
            return response

    return BoundedTransport, AsyncBoundedTransport


def bounded_request(method: str, url: str, **kwargs: Any) -> Any:
    """``httpx.request`` through :func:`transports`' bounded transport (the reply is read within the bounds)."""
    import httpx

    with httpx.Client(transport=transports(httpx)[0]()) as client:
        return client.request(method, url, **kwargs)


__all__ = ["DEFAULT_DEADLINE_S", "DEFAULT_MAX_REPLY_MB", "Deadline", "ReplyLimitError", "bounded_request",
           "deadline_seconds", "reply_limits", "request_deadline", "transports"]
