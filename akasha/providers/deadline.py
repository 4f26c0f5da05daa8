"""One deadline for a whole provider request: every attempt, every backoff sleep, every byte read.

httpx's ``timeout`` is per read and the retry loop sends a request up to ``max_retries + 1``
times, so without a shared clock a slow server could stretch one call to several times
``AKASHA_REQUEST_DEADLINE_S``. :func:`request_deadline` starts the clock once, where a
call begins (:func:`akasha.retry.call_with_retry`), and makes it the current
deadline of that thread or task (a :mod:`contextvars` variable, which the client libraries
carry down to the transport they call). The bounded transport
(:mod:`akasha.providers.bounded`) counts every reply body against it and shortens httpx's
per-read timeouts to what is left; the retry loop gives up rather than sleep past it.
A request sent outside any retry loop (the hf and cohere HTTP helpers) gets its own.
"""

from __future__ import annotations

import contextvars
import time
from collections.abc import Iterator
from contextlib import contextmanager

from akasha.providers.env import positive_env

#: Seconds one request may take from its first attempt to its last byte (``AKASHA_REQUEST_DEADLINE_S``).
DEFAULT_DEADLINE_S = 600.0
VARIABLE = "AKASHA_REQUEST_DEADLINE_S"


def deadline_seconds() -> float:
    """``AKASHA_REQUEST_DEADLINE_S`` (or the default 600); ConfigError for a value that is not a positive number."""
    return positive_env(VARIABLE, DEFAULT_DEADLINE_S)


class Deadline:
    """A request's time budget: started once, shared by its attempts, sleeps and reads."""

    def __init__(self, seconds: float) -> None:
        self.seconds = float(seconds)
        self.ends = time.monotonic() + self.seconds

    def remaining(self) -> float:
        """Seconds left (0 once passed)."""
        return max(0.0, self.ends - time.monotonic())

    def passed(self) -> bool:
        return time.monotonic() >= self.ends

    def describe(self) -> str:
        """``the 600 s request deadline (AKASHA_REQUEST_DEADLINE_S)`` for messages."""
        return f"the {self.seconds:g} s request deadline ({VARIABLE})"

    def __repr__(self) -> str:
        return f"Deadline({self.seconds:g} s, {self.remaining():.2f} s left)"


_CURRENT: contextvars.ContextVar[Deadline | None] = contextvars.ContextVar("akasha_request_deadline", default=None)


def current_deadline() -> Deadline | None:
    """The deadline of the request this thread or task is making, or None outside one."""
    return _CURRENT.get()


@contextmanager
def request_deadline() -> Iterator[Deadline]:
    """The current deadline, or a new one (``AKASHA_REQUEST_DEADLINE_S`` from now) made current for the block.

    Nested calls share the outermost deadline, so a retried request that itself retries
    cannot restart the clock.
    """
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


__all__ = ["DEFAULT_DEADLINE_S", "Deadline", "current_deadline", "deadline_seconds", "request_deadline"]
