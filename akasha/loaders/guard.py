"""Read risky formats (PDF, .docx) in a child process, so a hostile file cannot end the program.

PDFium, lxml and zlib run native code on untrusted bytes (a PDF stream inflating to gigabytes makes
PDFium abort: no exception, the process is gone). :func:`guarded_load` hands the file's bytes to a
worker (``python -m akasha.loaders._worker``) that runs the ordinary loader under a memory limit and
answers in JSON within ``timeout`` seconds; a worker that crashes or runs out of memory or time is
killed and replaced, and the file is reported with a :class:`~akasha.loaders.limits.LoaderLimitError`
naming the limit to raise (docs/threat-model.md).

A plain subprocess, not :mod:`multiprocessing` (which re-imports the user's ``__main__`` or forks a
threaded program). Workers are reused and exit after :data:`IDLE_SECONDS` idle or with this process;
if none can start, files are read in-process, with one warning.
"""

from __future__ import annotations

import atexit
import contextlib
import json
import logging
import os
import queue
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Sequence
from dataclasses import asdict
from pathlib import Path
from typing import Any

from akasha.loaders._worker import FRAME, read_frame
from akasha.loaders.limits import LoaderLimitError, LoaderLimits, TransientLoaderError
from akasha.types import Document

logger = logging.getLogger(__name__)

#: A worker nobody used for this long exits.
IDLE_SECONDS = 60.0
#: How many idle workers are kept for reuse (threads loading at once start more).
KEEP_IDLE = 2
_EOF = object()

_lock = threading.Lock()
_idle: list[_Worker] = []
_fallback_warned = False
_unavailable: str | None = None  # why workers cannot start here, once known


class WorkerStartError(RuntimeError):
    """The worker process could not be started (the caller falls back to in-process loading)."""


#: Signals another process sends: the file is not at fault, so a reader ended by one is retried on the next run.
_SENT_FROM_OUTSIDE = frozenset(int(getattr(signal, name)) for name in
                               ("SIGKILL", "SIGTERM", "SIGINT", "SIGHUP", "SIGQUIT", "SIGUSR1", "SIGUSR2")
                               if hasattr(signal, name))


def _signal_name(code: int) -> str:
    try:
        return signal.Signals(code).name
    except ValueError:
        return f"signal {code}"


class _Worker:
    """One worker process: frames written to its stdin, read from its stdout by a thread."""

    def __init__(self, memory_mb: float, warm: Sequence[str] = ()) -> None:
        """Start the process; ``warm``: suffixes whose parsers it imports before it reads a request."""
        self.memory_mb = memory_mb
        self.pid_owner = os.getpid()
        env = dict(os.environ)
        import akasha

        root = str(Path(akasha.__file__).resolve().parent.parent)  # the worker imports this very akasha
        env["PYTHONPATH"] = os.pathsep.join(p for p in (root, env.get("PYTHONPATH", "")) if p)
        for name in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
            env.setdefault(name, "1")  # a worker never does linear algebra: no thread pools, less memory
        env["AKASHA_WORKER_MEMORY_MB"] = repr(float(memory_mb))
        env["AKASHA_WORKER_WARM"] = " ".join(warm)
        if not sys.executable:
            raise WorkerStartError("sys.executable is empty (an embedded interpreter)")
        try:
            self.process = subprocess.Popen(
                [sys.executable, "-m", "akasha.loaders._worker"],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.DEVNULL,
                env=env,
                close_fds=True,
                start_new_session=os.name == "posix",  # Ctrl-C in a terminal reaches the parent, not the worker
            )
        except OSError as exc:
            raise WorkerStartError(f"{sys.executable} -m akasha.loaders._worker: {exc}") from exc
        self.replies: queue.Queue[Any] = queue.Queue()
        self.last_used = time.monotonic()
        self.files = 0
        self._reader = threading.Thread(target=self._read_replies, name="akasha-loader-reader", daemon=True)
        self._reader.start()

    def _read_replies(self) -> None:
        stream = self.process.stdout
        assert stream is not None
        with contextlib.suppress(OSError, ValueError):
            while (body := read_frame(stream)) is not None:
                self.replies.put(body)
        self.replies.put(_EOF)

    def alive(self) -> bool:
        return self.process.poll() is None and os.getpid() == self.pid_owner

    def send(self, header: dict[str, Any], data: bytes) -> None:
        blob = json.dumps(header).encode("utf-8")
        stream = self.process.stdin
        assert stream is not None
        stream.write(FRAME.pack(len(blob)) + blob + FRAME.pack(len(data)))
        stream.write(data)
        stream.flush()

    def receive(self, timeout: float | None) -> Any:
        """The next reply (a dict), ``_EOF`` when the worker died, or raise ``queue.Empty`` on timeout."""
        body = self.replies.get(timeout=timeout)
        return body if body is _EOF else json.loads(body)

    def kill(self) -> None:
        with contextlib.suppress(OSError):
            self.process.kill()
        self.close(wait=1.0)

    def close(self, wait: float = 2.0) -> None:
        for stream in (self.process.stdin, self.process.stdout):
            if stream is not None:
                with contextlib.suppress(OSError):
                    stream.close()
        try:
            self.process.wait(timeout=wait)
        except subprocess.TimeoutExpired:
            self.process.kill()
            with contextlib.suppress(subprocess.TimeoutExpired):  # a process that ignores SIGKILL
                self.process.wait(timeout=wait)


def _take(memory_mb: float) -> _Worker:
    with _lock:
        while _idle:
            worker = _idle.pop()
            if worker.alive() and worker.memory_mb == memory_mb:
                return worker
            if os.getpid() == worker.pid_owner:
                threading.Thread(target=worker.close, daemon=True).start()
    return _Worker(memory_mb)


def warm_up(suffixes: Sequence[str], memory_mb: float) -> None:
    """Start a worker importing the parsers of ``suffixes`` unless one is idle (the first load reports a failure)."""
    if _unavailable is not None:
        return
    with _lock:
        if any(w.memory_mb == memory_mb and w.alive() for w in _idle):
            return
    try:
        worker = _Worker(memory_mb, warm=suffixes)
    except WorkerStartError:
        return
    _give_back(worker)


def _give_back(worker: _Worker) -> None:
    worker.last_used = time.monotonic()
    with _lock:
        kept = worker.alive() and len(_idle) < KEEP_IDLE
        if kept:
            _idle.append(worker)
    if not kept:
        worker.close()
    _schedule_reaper()


_reaper: threading.Timer | None = None


def _schedule_reaper() -> None:
    global _reaper
    with _lock:
        if _reaper is not None and _reaper.is_alive():
            return
        _reaper = threading.Timer(IDLE_SECONDS, _reap)
        _reaper.daemon = True
        _reaper.start()


def _reap() -> None:
    """Close workers idle for longer than :data:`IDLE_SECONDS`; reschedule while some remain."""
    global _reaper
    now = time.monotonic()
    with _lock:
        stale = [w for w in _idle if now - w.last_used >= IDLE_SECONDS]
        for worker in stale:
            _idle.remove(worker)
        _reaper = None
        remaining = bool(_idle)
    for worker in stale:
        worker.close()
    if remaining:
        _schedule_reaper()


def shutdown() -> None:
    """Stop every idle worker now (also run at interpreter exit)."""
    with _lock:
        workers = list(_idle)
        _idle.clear()
    for worker in workers:
        if os.getpid() == worker.pid_owner:
            worker.close(wait=1.0)


atexit.register(shutdown)


def _raise_error(path: Path, reply: dict[str, Any]) -> None:
    from akasha.errors import LoaderError

    kind = reply.get("error")
    if kind == "limit":
        raise LoaderLimitError(path, reply["limit"], reply["value"], reply["what"])
    if kind == "loader":
        raise LoaderError(path, reply["reason"])
    if kind == "memory":
        raise LoaderLimitError(path, "max_memory_mb", reply["value"],
                               "reading it needs more memory than the reader may use")
    if kind == "value":  # a caller mistake, such as an unknown PDF engine: the same error as in-process
        raise ValueError(reply["reason"])
    # Anything else is a loader bug or a transient failure: like in-process, not the file's fault.
    raise RuntimeError(f"{path}: the loader failed in its worker process: {reply.get('reason')}")


def guarded_load(path: Path, suffix: str, data: bytes, limits: LoaderLimits,
                 options: dict[str, Any] | None = None) -> list[Document]:
    """Load ``data`` (the bytes of ``path``) with the loader for ``suffix`` in a worker process.

    Raises what the loader raises, a :class:`~akasha.loaders.limits.LoaderLimitError` for ``timeout`` and
    ``max_memory_mb`` (a native crash counts as the latter), :class:`~akasha.loaders.limits.TransientLoaderError`
    when the system killed the worker, and :class:`WorkerStartError` when none can start.
    """
    global _unavailable
    if _unavailable is not None:
        raise WorkerStartError(_unavailable)
    try:
        worker = _take(limits.max_memory_mb)
    except WorkerStartError as exc:
        _unavailable = str(exc)
        raise
    header = {"path": str(path), "suffix": suffix, "options": options or {},
              "limits": {name: value for name, value in asdict(limits).items() if name != "isolate"}}
    try:
        reply = _exchange(worker, path, suffix, header, data, limits)
    except BaseException:
        worker.kill()  # timed out, crashed, or interrupted (Ctrl-C) mid-request: its state is unknown
        raise
    for level, name, message in reply.get("logs", ()):  # the loader's log lines, as if it ran here
        logging.getLogger(name).log(int(level), "%s", message)
    if reply.get("error") == "memory" or reply.get("rss_mb", 0) > limits.max_memory_mb / 2 > 0:
        worker.close()  # near its memory limit (a fragmented heap): the next file gets a fresh one
    else:
        _give_back(worker)
    if "error" in reply:
        _raise_error(path, reply)
    return [Document(text=text, metadata=metadata, id=doc_id) for text, metadata, doc_id in reply["documents"]]


def _exchange(worker: _Worker, path: Path, suffix: str, header: dict[str, Any], data: bytes,
              limits: LoaderLimits) -> dict[str, Any]:
    """Send one request and wait for its reply; raise for a timeout or a worker that died."""
    try:
        worker.send(header, data)
    except (OSError, ValueError):
        reply: Any = _EOF  # it died before reading everything: treated like a crash below
    else:
        try:
            reply = worker.receive(limits.timeout or None)
        except queue.Empty:
            raise LoaderLimitError(path, "timeout", limits.timeout,
                                   f"reading it took more than {limits.timeout:g} s") from None
    if reply is not _EOF:
        return reply
    try:
        code = worker.process.wait(timeout=5.0)
    except subprocess.TimeoutExpired:
        code = None
    if code is not None and code < 0 and -code not in _SENT_FROM_OUTSIDE:  # the parser itself crashed
        raise LoaderLimitError(
            path, "max_memory_mb", limits.max_memory_mb,
            f"the {suffix.lstrip('.').upper()} reader crashed ({_signal_name(-code)}) on it, "
            "usually from running out of memory")
    how = _signal_name(-code) if code is not None and code < 0 else f"exit status {code}"
    raise TransientLoaderError(
        path, f"the reader process ended without answering ({how}; the system may have run out of "
        "memory); it will be retried on the next run")


def warn_in_process_once(reason: str) -> None:
    """Log once per process that risky formats are read in-process (no worker could start)."""
    global _fallback_warned
    if not _fallback_warned:
        _fallback_warned = True
        logger.warning("cannot start a loader worker process (%s); PDF and .docx files are read in this "
                       "process, where a crash in a native parser would end it", reason)


__all__ = ["IDLE_SECONDS", "WorkerStartError", "guarded_load", "shutdown", "warn_in_process_once"]
