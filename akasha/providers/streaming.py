"""Streams that retry while opening and never drop text when they break.

The provider's ``read`` turns each event of the client's stream into a ``(text, finished)``
piece, ``finished`` True on the piece with the provider's end marker (OpenAI ``finish_reason``,
Gemini ``finishReason``, Ollama ``done``). Opening the stream and reading its first piece is
retried like any request; after that, an error, or an end of data without the end marker,
raises :class:`~akasha.errors.StreamInterruptedError` whose ``partial`` holds every piece
already yielded.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Callable, Iterator
from typing import Any

from akasha.errors import AkashaError, StreamInterruptedError
from akasha.providers.secrets import redact
from akasha.retry import Fault, acall_with_retry, call_with_retry

Piece = tuple[str, bool]
#: turns one event of a provider's stream into a piece
Reader = Callable[[Any], Piece]
_NO_MORE = object()
_END = "the stream ended before the provider marked the answer complete"


def _close(obj: Any) -> None:
    with contextlib.suppress(Exception):  # closing a broken stream may fail again; nothing to add
        getattr(obj, "close", lambda: None)()


async def _aclose(obj: Any) -> None:
    closer = getattr(obj, "aclose", None) or getattr(obj, "close", None)
    with contextlib.suppress(Exception):
        result: Any = closer() if callable(closer) else None
        if hasattr(result, "__await__"):
            await result


class _Progress:
    """What a stream has delivered so far, and the error to raise when it breaks."""

    def __init__(self, provider: str, translate: Callable[[BaseException], Fault | None],
                 secrets: tuple[str | None, ...]) -> None:
        self.provider, self.translate, self.secrets = provider, translate, secrets
        self.received: list[str] = []
        self.finished = False
        self.failure: StreamInterruptedError | None = None

    def take(self, piece: Piece) -> str:
        """Record one ``(text, finished)`` piece; return its text."""
        text, done = piece
        self.finished = self.finished or done
        if text:
            self.received.append(text)
        return text

    def check_finished(self) -> None:
        """Raise StreamInterruptedError if the data ended without the provider's end marker."""
        if not self.finished:
            raise StreamInterruptedError(self.provider, _END, "".join(self.received))

    def __enter__(self) -> _Progress:
        return self

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None, _tb: Any) -> bool:
        """Reading the next piece failed: keep the error (key redacted, partial text kept) for
        :meth:`raise_if_broken`; akasha's own errors pass."""
        if not isinstance(exc, Exception) or isinstance(exc, AkashaError):
            return False
        try:
            fault = self.translate(exc)
        except Exception:
            fault = None
        message = fault.message if fault else f"{type(exc).__name__}: {exc}"
        self.failure = StreamInterruptedError(self.provider, redact(message, self.secrets), "".join(self.received))
        return True

    def raise_if_broken(self) -> None:
        """Raise the error kept by the last ``with`` block, outside any ``except`` block: the
        client's exception, whose text may echo the key, does not become its ``__context__``."""
        if self.failure is not None:
            raise self.failure


def _piece(read: Reader, event: Any) -> Piece | None:
    return None if event is _NO_MORE else read(event)


def retrying_stream(open_stream: Callable[[], Iterator[Any]], read: Reader, **retry: Any) -> Iterator[str]:
    """Yield the text of the events of ``open_stream()``; see the module docstring for the guarantees.

    ``retry``: the keyword arguments of :func:`~akasha.retry.call_with_retry` (provider, policy,
    translate, secrets, and ``reopen`` to open once more after a setting the provider refused and
    ``open_stream`` now leaves out).
    """

    def open_and_peek() -> tuple[Iterator[Any], Piece | None]:
        events = open_stream()
        try:
            return events, _piece(read, next(events, _NO_MORE))
        except BaseException:
            _close(events)
            raise

    events, current = call_with_retry(open_and_peek, **retry)
    progress = _Progress(retry["provider"], retry["translate"], tuple(retry.get("secrets", ())))
    try:
        while current is not None:
            if text := progress.take(current):
                yield text
            with progress:
                current = _piece(read, next(events, _NO_MORE))
            progress.raise_if_broken()
        progress.check_finished()
    finally:
        _close(events)


async def aretrying_stream(open_stream: Callable[[], Any], read: Reader, **retry: Any) -> AsyncIterator[str]:
    """Async twin of :func:`retrying_stream`; ``open_stream`` returns (or awaits to) an async iterator."""

    async def open_and_peek() -> tuple[Any, Piece | None]:
        events = open_stream()
        if hasattr(events, "__await__"):
            events = await events
        try:
            return events, _piece(read, await anext(events, _NO_MORE))
        except BaseException:
            await _aclose(events)
            raise

    events, current = await acall_with_retry(open_and_peek, **retry)
    progress = _Progress(retry["provider"], retry["translate"], tuple(retry.get("secrets", ())))
    try:
        while current is not None:
            if text := progress.take(current):
                yield text
            with progress:
                current = _piece(read, await anext(events, _NO_MORE))
            progress.raise_if_broken()
        progress.check_finished()
    finally:
        await _aclose(events)


__all__ = ["Piece", "Reader", "aretrying_stream", "retrying_stream"]
