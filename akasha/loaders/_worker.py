"""The loader worker process: ``python -m akasha.loaders._worker`` (started by :mod:`akasha.loaders.guard`).

Frames on stdin/stdout: an 8-byte little-endian length, then the bytes. In: a JSON header ``{"path",
"suffix", "limits", "options"}``, then the file's bytes. Out: one JSON frame, ``{"documents": [[text,
metadata, id], ...], "logs", "rss_mb"}`` or ``{"error": kind, ...}`` (loader, limit, memory, value, other).

The worker caps its own memory first (``RLIMIT_DATA`` on Linux, else ``RLIMIT_AS``), turns off core
dumps and ignores SIGINT (the parent stops it). Each request arms an alarm past its timeout, so a
worker stuck in native code ends itself even if the parent is gone. End of input means exit.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import signal
import struct
import sys
from pathlib import Path
from typing import IO, Any, BinaryIO

#: The length before every frame, both ways (:mod:`akasha.loaders.guard` uses it too).
FRAME = struct.Struct("<Q")


class _Collect(logging.Handler):
    """Keeps the loaders' log records of one request, to be replayed by the parent."""

    def __init__(self) -> None:
        super().__init__(logging.INFO)
        self.records: list[list[Any]] = []

    def emit(self, record: logging.LogRecord) -> None:
        if len(self.records) < 200:
            self.records.append([record.levelno, record.name, record.getMessage()])


def _limit_memory() -> None:
    import resource

    try:
        megabytes = float(os.environ.get("AKASHA_WORKER_MEMORY_MB", "0"))
    except ValueError:
        megabytes = 0.0
    with contextlib.suppress(ValueError, OSError):
        resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    if megabytes > 0:
        limit = int(megabytes * 2**20)
        # RLIMIT_DATA counts heap and anonymous mappings but not reserved address space, which
        # PDFium's allocator takes a lot of; elsewhere RLIMIT_AS is the closest there is.
        which = resource.RLIMIT_DATA if sys.platform.startswith("linux") else resource.RLIMIT_AS
        with contextlib.suppress(ValueError, OSError):
            _soft, hard = resource.getrlimit(which)
            if hard != resource.RLIM_INFINITY:
                limit = min(limit, hard)
            resource.setrlimit(which, (limit, hard))


def read_frame(stream: IO[bytes]) -> bytes | None:
    """The next frame's bytes, or None at end of input (or a frame cut short)."""
    head = stream.read(FRAME.size)
    if len(head) < FRAME.size:
        return None
    (size,) = FRAME.unpack(head)
    body = stream.read(size)
    return body if len(body) == size else None


def _write_frame(stream: BinaryIO, payload: dict[str, Any]) -> None:
    blob = json.dumps(payload, default=str).encode("ascii")  # \u escapes carry lone surrogates too
    stream.write(FRAME.pack(len(blob)) + blob)
    stream.flush()


def _rss_mb() -> float:
    """This worker's peak resident memory in MB (on Linux ``VmHWM``: ``ru_maxrss`` keeps the parent's across exec)."""
    with (contextlib.suppress(OSError, ValueError, IndexError),
          open("/proc/self/status", encoding="ascii", errors="replace") as status):
        for line in status:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    try:
        import resource

        peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        return peak / 1024 if sys.platform.startswith("linux") else peak / 2**20
    except (ImportError, OSError):  # pragma: no cover - resource exists wherever the worker runs
        return 0.0


def handle(header: dict[str, Any], data: bytes) -> dict[str, Any]:
    """Run the in-process loader for one request and describe the outcome as a JSON-able dict."""
    from akasha.errors import LoaderError
    from akasha.loaders import load_file
    from akasha.loaders.limits import LoaderLimitError, LoaderLimits

    path = Path(header["path"])
    limits = LoaderLimits(**header["limits"], isolate=False)
    try:
        documents = load_file(path, data, limits=limits, **header.get("options", {}))
    except LoaderLimitError as exc:
        return {"error": "limit", "limit": exc.limit, "value": exc.value, "what": exc.what}
    except LoaderError as exc:
        return {"error": "loader", "reason": exc.reason}
    except MemoryError:
        return {"error": "memory", "value": limits.max_memory_mb}
    except ValueError as exc:
        return {"error": "value", "reason": str(exc)}
    except Exception as exc:  # a loader bug: the parent reports it without remembering the file
        return {"error": "other", "reason": f"{type(exc).__name__}: {exc}"}
    return {"documents": [[d.text, d.metadata, d.id] for d in documents]}


def _warm(suffixes: list[str]) -> None:
    """Import the parsers of ``suffixes`` before the first request (a failure is left to the request that needs it)."""
    from akasha.loaders import LOADERS, warm_loader

    for suffix in suffixes:
        if suffix in LOADERS:
            with contextlib.suppress(Exception):  # reported by the request that needs this loader
                warm_loader(suffix)


def main() -> None:
    """Serve requests until end of input."""
    if hasattr(signal, "SIGINT"):
        signal.signal(signal.SIGINT, signal.SIG_IGN)
    if os.name == "posix":
        _limit_memory()
    _warm(os.environ.get("AKASHA_WORKER_WARM", "").split())
    inp, out = sys.stdin.buffer, sys.stdout.buffer
    sys.stdout = sys.stderr  # nothing a library prints may corrupt the reply stream
    collector = _Collect()
    root = logging.getLogger("akasha")
    root.addHandler(collector)
    root.setLevel(logging.INFO)
    root.propagate = False
    while True:
        raw = read_frame(inp)
        if raw is None:
            return
        data = read_frame(inp)
        if data is None:
            return
        header = json.loads(raw)
        timeout = float(header.get("limits", {}).get("timeout") or 0)
        if timeout and hasattr(signal, "alarm"):
            signal.alarm(int(timeout) + 30)  # the parent gave up long before: do not linger
        collector.records = []
        try:
            reply = handle(header, data)
        except MemoryError:  # raised while building the reply itself
            reply = {"error": "memory", "value": header.get("limits", {}).get("max_memory_mb")}
        if hasattr(signal, "alarm"):
            signal.alarm(0)
        reply["logs"] = collector.records
        reply["rss_mb"] = _rss_mb()
        try:
            _write_frame(out, reply)
        except MemoryError:
            _write_frame(out, {"error": "memory", "value": header.get("limits", {}).get("max_memory_mb"),
                               "logs": [], "rss_mb": _rss_mb()})
        except BrokenPipeError:
            return


if __name__ == "__main__":
    main()
    # Every reply was flushed and nothing else is buffered: skip the interpreter's teardown, which
    # the parent waits for when it closes the worker at its own exit.
    os._exit(0)
