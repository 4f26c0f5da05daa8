"""One bounded HTTP transport for every provider client: a cap on a reply's size and a deadline.

httpx's ``timeout`` is per read: a server that drips one byte a second, or whose body (or SSE
stream) never ends, keeps a request alive and growing without limit. :class:`BoundedTransport`
wraps httpx's own transport and counts the body as it is read: past ``max_bytes`` or past
``deadline`` seconds from the moment the request was sent it raises :class:`ReplyLimitError`,
which names the endpoint with any credentials redacted. The OpenAI and Ollama connections
build their clients on it (``httpx``, or ``httpx2`` under the openai package) (streams included, since the same body iterator is wrapped).

Bounds (see docs/threat-model.md): ``AKASHA_MAX_REPLY_MB`` (default 64) and
``AKASHA_REQUEST_DEADLINE_S`` (default 600).
"""

from __future__ import annotations

import functools
import os
import time
from collections.abc import AsyncIterator, Iterator
from typing import Any

from akasha.errors import ConfigError
from akasha.stores.redact import redact_url

DEFAULT_MAX_REPLY_MB = 64.0
DEFAULT_DEADLINE_S = 600.0


def _positive(variable: str, default: float) -> float:
    raw = os.environ.get(variable, "").strip()
    if not raw:
        return default
    try:
        value = float(raw)
    except ValueError:
        value = float("nan")
    if not value > 0 or value == float("inf"):
        raise ConfigError(f"{variable}={raw!r} is not a positive number; unset it for the default {default:g}")
    return value


def reply_limits() -> tuple[int, float]:
    """``(max_bytes, deadline_s)`` from the environment (or the defaults)."""
    megabytes = _positive("AKASHA_MAX_REPLY_MB", DEFAULT_MAX_REPLY_MB)
    return int(megabytes * 1024 * 1024), _positive("AKASHA_REQUEST_DEADLINE_S", DEFAULT_DEADLINE_S)


class ReplyLimitError(Exception):
    """A reply grew past the size cap or outlived the request deadline (not worth retrying).

    Raised as a subclass of the client library's own ``TransportError`` (see :func:`transports`),
    so each client wraps it as it wraps a dropped connection.
    """


class _Budget:
    def __init__(self, url: str, max_bytes: int, deadline: float, error: type[Exception]) -> None:
        self.url, self.max_bytes, self.deadline_s, self.error = url, max_bytes, deadline, error
        self.ends = time.monotonic() + deadline
        self.seen = 0

    def count(self, chunk: bytes) -> None:
        self.seen += len(chunk)
        if self.seen > self.max_bytes:
            raise self.error(
                f"reply from {self.url} exceeded {self.max_bytes} bytes (raise AKASHA_MAX_REPLY_MB if it is genuine)")
        if time.monotonic() > self.ends:
            raise self.error(
                f"reply from {self.url} still arriving after the {self.deadline_s:g} s request deadline "
                "(raise AKASHA_REQUEST_DEADLINE_S if the server is genuinely slow)")


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
            max_bytes, deadline = reply_limits()
            budget = _Budget(redact_url(str(request.url)), max_bytes, deadline, error)
            response = super().handle_request(request)
            response.stream = _SyncBody(response.stream, budget)
            return response

    class AsyncBoundedTransport(module.AsyncHTTPTransport):
        """Async twin of BoundedTransport."""

        async def handle_async_request(self, request: Any) -> Any:
            max_bytes, deadline = reply_limits()
            budget = _Budget(redact_url(str(request.url)), max_bytes, deadline, error)
            response = await super().handle_async_request(request)
            response.stream = _AsyncBody(response.stream, budget)
            return response

    return BoundedTransport, AsyncBoundedTransport


def bounded_post(url: str, **kwargs: Any) -> Any:
    """``httpx.post`` through :func:`transports`' bounded transport (the reply is read within the bounds)."""
    import httpx

    with httpx.Client(transport=transports(httpx)[0]()) as client:
        return client.post(url, **kwargs)


__all__ = ["ReplyLimitError", "bounded_post", "reply_limits", "transports"]
