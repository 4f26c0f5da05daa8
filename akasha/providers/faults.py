"""Translate client-library exceptions into provider-neutral :class:`Fault` values.

Each translator returns ``None`` for exceptions it does not recognise, so
programming errors propagate unchanged instead of being retried.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from typing import Any

from akasha.retry import Fault, is_retryable, parse_retry_after

_TRANSPORT_PACKAGES = {"httpx", "httpx2", "httpcore", "httpcore2", "aiohttp", "requests", "urllib3", "h11"}


class HTTPFault(Exception):
    """Raised by akasha's own HTTP providers (Ollama) for an error status; translated below."""

    def __init__(self, status: int, message: str, headers: Mapping[str, str] | None = None) -> None:
        super().__init__(f"HTTP {status}: {message}")
        self.status = status
        self.message = message
        self.headers = dict(headers or {})


class StreamErrorEvent(Exception):
    """An error object that arrived inside an otherwise successful stream (not retryable)."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


def _headers_of(response: Any) -> Mapping[str, str] | None:
    headers = getattr(response, "headers", None)
    try:
        return dict(headers.items()) if headers is not None else None
    except Exception:
        return None


def status_fault(message: str, status: int | None, headers: Mapping[str, str] | None) -> Fault:
    """The fault of an error answer: retryable when :func:`~akasha.retry.is_retryable` says so, after
    at least the wait its ``Retry-After`` asks."""
    return Fault(message, status, is_retryable(status, message), parse_retry_after(headers))


def transport_fault(exc: BaseException, timeout: float | None = None) -> Fault | None:
    """Timeouts and dropped connections from any HTTP stack: retryable, status None."""
    name = type(exc).__name__
    if type(exc).__name__ == "ReplyLimitError":
        return Fault(str(exc), retryable=False)
    package = type(exc).__module__.split(".")[0]
    if isinstance(exc, (TimeoutError, asyncio.TimeoutError)) or "Timeout" in name:
        limit = f" after {timeout:g} s" if timeout else ""
        return Fault(f"request timed out{limit} (raise the 'timeout' option if the model is slow)", retryable=True)
    if package in _TRANSPORT_PACKAGES or isinstance(exc, ConnectionError):
        detail = str(exc) or name
        return Fault(f"connection error: {name}: {detail}", retryable=True)
    return None


def http_fault(exc: BaseException, timeout: float | None = None) -> Fault | None:
    """Translator for :class:`HTTPFault` plus transport errors (used by the Ollama provider)."""
    if isinstance(exc, StreamErrorEvent):
        return Fault(exc.message, retryable=False)
    if isinstance(exc, HTTPFault):
        return status_fault(exc.message, exc.status, exc.headers)
    return transport_fault(exc, timeout)


def openai_fault(exc: BaseException, timeout: float | None = None) -> Fault | None:
    """Translator for the ``openai`` package's exceptions."""
    import openai

    if isinstance(exc, openai.APITimeoutError):
        return transport_fault(TimeoutError(), timeout)
    if isinstance(exc, openai.APIConnectionError):
        cause = exc.__cause__
        if type(cause).__name__ == "ReplyLimitError":
            return Fault(str(cause), retryable=False)
        detail = f"{type(cause).__name__}: {cause}" if cause else exc.message
        return Fault(f"connection error: {detail}", retryable=True)
    if isinstance(exc, openai.APIStatusError):
        body = exc.body
        message = None
        if isinstance(body, dict):
            inner = body.get("error", body)
            message = inner.get("message") if isinstance(inner, dict) else str(inner)
        return status_fault(str(message or exc.message), exc.status_code, _headers_of(exc.response))
    if isinstance(exc, openai.APIError):  # e.g. an error event inside a stream
        return Fault(exc.message, retryable=False)
    return transport_fault(exc, timeout)


def genai_fault(exc: BaseException, timeout: float | None = None) -> Fault | None:
    """Translator for ``google-genai`` exceptions (``google.genai.errors.APIError``)."""
    from google.genai import errors

    if isinstance(exc, errors.APIError):
        code = int(exc.code) if exc.code else None
        message = exc.message or str(exc.details)
        if exc.status:
            message = f"{exc.status}: {message}"
        return status_fault(message, code, _headers_of(getattr(exc, "response", None)))
    return transport_fault(exc, timeout)


__all__ = ["HTTPFault", "StreamErrorEvent", "genai_fault", "http_fault", "openai_fault", "transport_fault"]
