"""Run a coroutine from synchronous code, even when an event loop is already running.

``asyncio.run`` refuses to start inside a running loop (Jupyter, async web servers): there the
coroutine runs on a private loop in a worker thread while the caller blocks.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
from collections.abc import Coroutine
from typing import Any, TypeVar

T = TypeVar("T")


def run_sync(coro: Coroutine[Any, Any, T]) -> T:
    """Run ``coro`` to completion and return its result (exceptions propagate)."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(coro)
    with concurrent.futures.ThreadPoolExecutor(max_workers=1, thread_name_prefix="akasha-sync") as pool:
        return pool.submit(asyncio.run, coro).result()


__all__ = ["run_sync"]
