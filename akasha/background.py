"""One function run on a thread of its own while the caller does other work (a cold start's overlaps)."""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any


class Background:
    """``function()`` on its own thread; :meth:`result` waits for it and returns its value or raises its exception.
    A plain (non-daemon) thread: a process that ends while it runs waits for it, not stopping it half way."""

    def __init__(self, function: Callable[[], Any], name: str) -> None:
        self._function = function
        self._value: Any = None
        self._error: BaseException | None = None
        self._thread = threading.Thread(target=self._run, name=name)
        self._thread.start()

    def _run(self) -> None:
        try:
            self._value = self._function()
        except BaseException as exc:  # handed to the caller of result(), which handles it as its own
            self._error = exc

    def result(self) -> Any:
        """The function's return value (waiting for it); its exception is raised here instead."""
        self._thread.join()
        if self._error is not None:
            error, self._error = self._error, None
            raise error
        return self._value


__all__ = ["Background"]
