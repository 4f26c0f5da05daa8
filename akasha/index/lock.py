"""The cross-process write lock of a local index folder.

One writer at a time per cache folder: a second process (or index object) waits up to
``timeout`` seconds, then gets an :class:`~akasha.errors.IndexLockError` that says what to do.
On POSIX this is ``fcntl.flock`` on ``index.lock`` (released by the kernel if the holder dies,
even under ``kill -9``), which spares an unchanged re-run the ``filelock`` import; elsewhere
the ``filelock`` package does the same job.
"""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Any

from akasha.errors import IndexLockError
from akasha.index.paths import storage_error

try:
    import fcntl
except ImportError:  # Windows
    fcntl = None  # type: ignore[assignment]  # None marks "no fcntl here"; the module type cannot hold it

_POLL_SECONDS = 0.05


class IndexLock:
    """Context manager holding the write lock at ``path`` (created if missing)."""

    def __init__(self, path: Path, timeout: float) -> None:
        self._path = path
        self._timeout = timeout
        self._fd: int | None = None
        self._fallback: Any = None

    def __enter__(self) -> IndexLock:
        if fcntl is None:
            from filelock import FileLock, Timeout

            lock = FileLock(str(self._path), timeout=self._timeout)
            try:
                lock.acquire()
            except Timeout:
                raise self._busy() from None
            except OSError as exc:
                raise storage_error(self._path.parent, exc) from exc
            self._fallback = lock
            return self
        try:
            fd = os.open(self._path, os.O_RDWR | os.O_CREAT, 0o644)
        except OSError as exc:  # cannot even create the lock file: read-only, full, ...
            raise storage_error(self._path.parent, exc) from exc
        deadline = time.monotonic() + max(0.0, self._timeout)
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() >= deadline:
                    os.close(fd)
                    raise self._busy() from None
                time.sleep(_POLL_SECONDS)
            except OSError as exc:
                os.close(fd)
                raise storage_error(self._path.parent, exc) from exc
        self._fd = fd
        return self

    def __exit__(self, *_: Any) -> None:
        if self._fallback is not None:
            self._fallback.release()
            self._fallback = None
        if self._fd is not None:
            fd, self._fd = self._fd, None
            try:
                fcntl.flock(fd, fcntl.LOCK_UN)
            finally:
                os.close(fd)

    def _busy(self) -> IndexLockError:
        return IndexLockError(
            f"another process is writing the index at {self._path.parent} and held its lock "
            f"({self._path}) for more than {self._timeout:g} s; wait for it to finish, or pass a larger "
            "lock_timeout"
        )
