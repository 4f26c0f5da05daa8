"""The stage timer and the one error policy every door shares.

Each stage appends one entry to a :class:`Trace`: ``{"stage", "name", "ms", "in", "out"}`` plus
``"error"`` when it failed and any stage-specific extras. The error policy (:func:`stage_failure`):
akasha's own errors and ``ImportError`` keep their type (they already say what to change), and so
does ``StreamInterruptedError`` (it carries the partial answer); anything else, a provider's
``ProviderError`` included, is raised as :class:`~akasha.errors.StageError` naming the stage and the
component, with the original as ``cause`` (docs/troubleshooting.md, "StageError").
"""

from __future__ import annotations

import logging
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from akasha.errors import AkashaError, ProviderError, StageError, StreamInterruptedError

logger = logging.getLogger(__name__)

TraceEntry = dict[str, Any]


def keeps_type(exc: BaseException) -> bool:
    """True for errors that reach the caller unchanged (see the module docstring)."""
    if isinstance(exc, (StageError, StreamInterruptedError)):
        return True
    if isinstance(exc, ProviderError):
        return False
    return isinstance(exc, (AkashaError, ImportError))


def stage_failure(stage: str, name: str, exc: BaseException) -> BaseException:
    """The exception to raise for ``exc`` failing in ``stage`` (``exc`` itself, or a StageError around it)."""
    if keeps_type(exc) or not isinstance(exc, Exception):
        return exc
    return StageError(stage, name, exc)


def describe(exc: BaseException) -> str:
    """``"TypeName: message"``, the form of a trace entry's ``error``."""
    return f"{type(exc).__name__}: {exc}"


class Trace(list):
    """The trace entries of one call, in the order the stages ran (a plain list of dicts)."""

    @contextmanager
    def stage(self, stage: str, name: str, n_in: Any, **extra: Any) -> Iterator[TraceEntry]:
        """Time one stage and append its entry (the body sets ``entry["out"]``); a failure is recorded, then
        raised by the error policy."""
        entry: TraceEntry = {"stage": stage, "name": name, "ms": 0.0, "in": n_in, "out": None, **extra}
        start = time.perf_counter()
        try:
            yield entry
        except BaseException as exc:
            if "error" not in entry and isinstance(exc, Exception):
                entry["error"] = describe(exc)
            failure = stage_failure(stage, name, exc)
            if failure is exc:
                raise
            raise failure from exc
        finally:
            entry["ms"] = round((time.perf_counter() - start) * 1000, 3)
            self.append(entry)
            logger.info("%s %s: %s -> %s in %.1f ms", stage, name, entry["in"], entry["out"], entry["ms"])

    def record(self, stage: str, name: str, n_in: Any, out: Any, ms: float = 0.0, **extra: Any) -> TraceEntry:
        """Append an entry for a stage timed elsewhere (or that did not need timing)."""
        entry: TraceEntry = {"stage": stage, "name": name, "ms": round(ms, 3), "in": n_in, "out": out, **extra}
        self.append(entry)
        logger.info("%s %s: %s -> %s in %.1f ms", stage, name, n_in, out, entry["ms"])
        return entry


class Timer:
    """Milliseconds since construction, for entries recorded with :meth:`Trace.record`."""

    def __init__(self) -> None:
        self.start = time.perf_counter()

    @property
    def ms(self) -> float:
        return round((time.perf_counter() - self.start) * 1000.0, 3)


__all__ = ["Timer", "Trace", "TraceEntry", "describe", "keeps_type", "stage_failure"]
