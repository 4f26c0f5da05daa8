"""Things built on first use: a value built once (:class:`Lazy`), and a provider's sync and per-loop async
clients (:class:`Clients`; an async client's connection pool belongs to the event loop that made it)."""

from __future__ import annotations

import asyncio
import threading
import weakref
from collections.abc import Callable
from typing import Any, Generic, TypeVar

T = TypeVar("T")


class Lazy(Generic[T]):
    """``build()`` called once, on the first :meth:`get` (thread-safe; one that raises is tried again)."""

    def __init__(self, build: Callable[[], T]) -> None:
        self._build = build
        self._value: T | None = None
        self._lock = threading.Lock()

    @property
    def built(self) -> bool:
        return self._value is not None

    def peek(self) -> T | None:
        """The value when it was built, else None (builds nothing)."""
        return self._value

    def get(self) -> T:
        if self._value is None:
            with self._lock:
                if self._value is None:
                    self._value = self._build()
        return self._value


class Clients:
    """One sync client shared by all threads, and one async client per running event loop, made by
    ``build(asynchronous)`` at the first request."""

    def __init__(self, build: Callable[[bool], Any]) -> None:
        self._build = build
        #: the sync client, built on its first ``get()``
        self.sync = Lazy(lambda: build(False))
        self._async: weakref.WeakKeyDictionary[Any, Any] = weakref.WeakKeyDictionary()

    @property
    def built(self) -> bool:
        """Whether any client was built (construction alone builds none)."""
        return self.sync.built or len(self._async) > 0

    def for_running_loop(self) -> Any:
        """The async client of the running event loop, built on its first call there."""
        loop = asyncio.get_running_loop()
        client = self._async.get(loop)
        if client is None:
            client = self._async[loop] = self._build(True)
        return client


class Connection:
    """Base of the provider connections: :meth:`client` and :meth:`async_client`, made by
    :meth:`_new_client` at the first request (no client is built and no key read before)."""

    def __init__(self, timeout: float) -> None:
        self.timeout = float(timeout)
        self.clients = Clients(self._new_client)

    def _new_client(self, asynchronous: bool) -> Any:
        raise NotImplementedError

    def client(self) -> Any:
        return self.clients.sync.get()

    def async_client(self) -> Any:
        """The client of the running event loop (connection pools are loop-bound)."""
        return self.clients.for_running_loop()


__all__ = ["Clients", "Connection", "Lazy"]
