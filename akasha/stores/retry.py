"""How a store talks to a server that may be briefly away: bounded retries, then a clear error.

Every call a server-backed store (Chroma over HTTP, PostgreSQL, Qdrant) makes goes
through :meth:`Retry.run`: connection failures are retried with exponential backoff,
then raised as :class:`~akasha.errors.ServerUnavailableError` naming the server and
what to do; a refused login is raised at once as :class:`~akasha.errors.ServerAuthError`.
"""

from __future__ import annotations

import contextlib
import logging
import random
import time
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager
from dataclasses import dataclass
from typing import Any, TypeVar

from akasha.errors import ServerAuthError, ServerError, ServerUnavailableError

log = logging.getLogger(__name__)
T = TypeVar("T")


@dataclass
class Retry:
    """Bounded retries with exponential backoff (and a little jitter) for server calls.

    ``attempts`` counts the first try; the waits are ``base * 2**i`` capped at
    ``max_delay`` seconds, so the defaults give up after about 15 s of outage.
    """

    attempts: int = 6
    base: float = 0.5
    max_delay: float = 8.0

    def delays(self) -> Iterator[float]:
        """The waits between attempts, in seconds."""
        for i in range(max(0, self.attempts - 1)):
            yield min(self.max_delay, self.base * 2**i) * (0.8 + 0.4 * random.random())

    def run(self, fn: Callable[[], T], *, server: str, what: str, transient: tuple[type[BaseException], ...],
            auth: Callable[[BaseException], bool] = lambda exc: False, on_retry: Callable[[], None] | None = None,
            hint: str = "", lock: AbstractContextManager[Any] | None = None) -> T:
        """Call ``fn``; retry on ``transient`` errors, raise ServerAuthError / ServerUnavailableError.

        ``lock`` (a client that one thread at a time may use) is held during each
        attempt and released while waiting, so other threads are not held up by an outage wait.
        """
        delays = self.delays()
        while True:
            try:
                if lock is None:
                    return fn()
                with lock:
                    return fn()
            except ServerError:
                raise
            except BaseException as exc:
                if auth(exc):
                    raise ServerAuthError(f"{server} refused the credentials while {what}: {first_line(exc)}. {hint}"
                                          ) from exc
                if not isinstance(exc, transient):
                    raise
                delay = next(delays, None)
                if delay is None:
                    raise ServerUnavailableError(
                        f"cannot reach {server} while {what} after {self.attempts} attempts "
                        f"({first_line(exc)}). Start the server or check its address; the store on it stays "
                        "consistent, so run the same call again once it is back"
                    ) from exc
                log.warning("store server %s failed while %s (%s); retrying in %.1f s", server, what,
                            first_line(exc), delay)
                time.sleep(delay)
                if on_retry is not None:
                    with contextlib.suppress(Exception):
                        on_retry()


def first_line(exc: BaseException) -> str:
    """``Type: first line of the message``, for error messages and logs."""
    text = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {text[0]}" if text else type(exc).__name__


__all__ = ["Retry", "first_line"]
