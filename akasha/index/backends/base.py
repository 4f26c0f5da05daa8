"""What every shared-index backend provides, and how it reports an unreachable server.

A shared backend replaces the local SQLite :class:`~akasha.index.manifest.Manifest`
of a :class:`~akasha.index.CorpusIndex` with one that lives on a server, so
several machines share one content-keyed index: parsed chunks per (file hash,
chunk settings), vectors per (model, chunk-text hash), and the committed state
of each corpus. It offers the Manifest's method set (duck-typed) plus

* ``write_lock(timeout)``: a lock that serialises writers across machines
  (a PostgreSQL advisory lock; Chroma has none, so its records are immutable
  and content-keyed instead, which makes concurrent upserts idempotent);
* ``knn(model, vector, k)``: approximate nearest neighbours on the server
  (HNSW), as ``[(text_hash, cosine similarity)]`` best first.

The *stat cache* (path, size, mtime -> file hash) stays on the local machine:
paths and mtimes mean nothing to another machine.

Every call to the server goes through :class:`Retry`: connection failures are
retried with exponential backoff, then raised as :class:`ServerUnavailableError`
naming the server and what to do; a refused login is raised at once as
:class:`ServerAuthError`.
"""

from __future__ import annotations

import contextlib
import logging
import random
import time
from collections.abc import Callable, Iterator
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
        for i in range(max(0, self.attempts - 1)):
            yield min(self.max_delay, self.base * 2**i) * (0.8 + 0.4 * random.random())

    def run(self, fn: Callable[[], T], *, server: str, what: str, transient: tuple[type[BaseException], ...],
            auth: Callable[[BaseException], bool] = lambda exc: False, on_retry: Callable[[], None] | None = None,
            hint: str = "") -> T:
        """Call ``fn``; retry on ``transient`` errors, raise ServerAuthError / ServerUnavailableError."""
        delays = self.delays()
        while True:
            try:
                return fn()
            except ServerError:
                raise
            except BaseException as exc:
                if auth(exc):
                    raise ServerAuthError(f"{server} refused the credentials while {what}: {_first_line(exc)}. {hint}"
                                          ) from exc
                if not isinstance(exc, transient):
                    raise
                delay = next(delays, None)
                if delay is None:
                    raise ServerUnavailableError(
                        f"cannot reach {server} while {what} after {self.attempts} attempts "
                        f"({_first_line(exc)}). Start the server or check its address; the index on it stays "
                        "consistent, so run the same call again once it is back"
                    ) from exc
                log.warning("index server %s failed while %s (%s); retrying in %.1f s", server, what,
                            _first_line(exc), delay)
                time.sleep(delay)
                if on_retry is not None:
                    with contextlib.suppress(Exception):
                        on_retry()


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {text[0]}" if text else type(exc).__name__


class LocalStatCache:
    """The per-machine half of a shared manifest: the stat cache, kept in a local Manifest."""

    def __init__(self, local: Any) -> None:
        self._local = local

    def stat_cache(self) -> dict[str, tuple[int, int, str]]:
        return self._local.stat_cache() if self._local is not None else {}

    def remember_stats(self, rows: Any) -> None:
        if self._local is not None:
            self._local.remember_stats(rows)

    def close_local(self) -> None:
        if self._local is not None:
            with contextlib.suppress(Exception):
                self._local.close()
