"""Reading a data source for the index: scan each file, hash it, and parse (load + chunk) what is new.

A file is known by the sha256 of its bytes plus its extension (the *content key*); a stat
cache only saves re-reading files whose stat is unchanged. A file's chunks are stored under
(content key, chunk settings), so a touched, copied or renamed file is never parsed again.
Format errors are remembered (skipped until the file changes); anything else (a loader bug,
a MemoryError, a killed worker) is retried on the next sync.
"""

from __future__ import annotations

import hashlib
import logging
import os
import stat
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from akasha.errors import LoaderError
from akasha.index.manifest import Manifest, StoredChunk
from akasha.loaders.limits import limit_changed
from akasha.loaders.paths import shown, storable
from akasha.metadata import drop_own, put_own
from akasha.types import Chunk, Document

log = logging.getLogger(__name__)

#: With ``progress=None``, the bar appears when a sync reads more files than this.
LONG_FILES = 200
#: Files modified this recently are not stat-cached (their mtime may not yet tell edits apart).
RACY_SECONDS = 2.0

#: (status, reason): "ok", "skipped" (remembered) or "error" (retried next time).
ParseStatus = tuple[str, "str | None"]
#: A text file larger than this is hashed, then loaded, a block at a time: never held whole in memory
#: (its loader stops at ``max_chars``). Smaller files, and PDFs/.docx (whose worker needs the bytes), are
#: read once and the same bytes hashed and loaded.
STREAM_BYTES = 8 * 2**20


def _streamed(path: Path, size: int) -> bool:
    """True when a file of ``size`` bytes at ``path`` is hashed and loaded a block at a time."""
    from akasha.loaders import ISOLATED

    return size > STREAM_BYTES and path.suffix.lower() not in ISOLATED


def file_digest(path: Path) -> str:
    """sha256 hex of the file at ``path``, read a block at a time."""
    hasher = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            hasher.update(block)
    return hasher.hexdigest()


def _unchanged_now(path: Path, st: os.stat_result) -> bool:
    """True when the file at ``path`` still has the stat ``st`` (False when it is gone)."""
    try:
        now = path.stat()
    except OSError:
        return False
    return _unchanged((now.st_size, now.st_mtime_ns, None, now.st_ctime_ns, now.st_ino), st)


def _over_size(path: Path, size: int) -> str | None:
    """Why a file of ``size`` bytes is over a loader limit before it is read, or None
    (:meth:`LoaderLimits.check_size`: ``max_file_mb`` for every file, ``max_chars`` for text formats)."""
    from akasha.loaders import ISOLATED
    from akasha.loaders.limits import LoaderLimitError, LoaderLimits

    try:
        LoaderLimits.from_env().check_size(path, size, text=path.suffix.lower() not in ISOLATED)
    except LoaderLimitError as exc:
        return exc.reason
    return None


def digest(text: str) -> str:
    """sha256 hex of a text (surrogates kept, so any decoded file can be hashed)."""
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


def _unchanged(cached: Sequence[Any] | None, st: os.stat_result) -> bool:
    """True when the stat cache's row ``(size, mtime_ns, content, ctime_ns, inode)`` matches ``st``.

    ctime and inode too: an mtime can be put back (``touch -d``, ``cp -p``, an archive).
    """
    return cached is not None and tuple(cached[:2]) + tuple(cached[3:5]) == (
        st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino)


class SourceReader:
    """Turns paths into content keys, parsing each new file version once into ``manifest``."""

    def __init__(self, manifest: Manifest, settings_key: str, split: Callable[[list[Document]], list[Chunk]],
                 prepare: Callable[[int], None] | None = None) -> None:
        """``prepare(size)`` is told, before a :meth:`read` parses its first file, the bytes of the files
        whose stat changed (the embedder's ``prepare_documents``, which gets ready to embed meanwhile)."""
        self.manifest = manifest
        self.settings_key = settings_key
        self.split = split
        self.prepare = prepare
        self._pending_bytes = 0  # announced to ``prepare`` at the next file to parse
        self._warned: set[tuple[str, str]] = set()

    def read(self, paths: Sequence[Path], progress: bool | None, report: Any) -> dict[str, str]:
        """path -> content key of every readable file with text; the rest are counted in ``report`` as skipped.
        ``progress=True`` (``None``: over :data:`LONG_FILES` files) shows a bar once a file must be read."""
        stats = self.manifest.stat_cache()
        parsed = self.manifest.parsed_status(self.settings_key)
        files: dict[str, str] = {}
        fresh_stats = []
        now = time.time()
        show = bool(progress or (progress is None and len(paths) > LONG_FILES))
        bar: Any = None

        def working(position: int) -> None:  # a file must be read or parsed: the bar shows from here on
            nonlocal bar
            if show and bar is None:
                from tqdm.auto import tqdm

                bar = tqdm(total=len(paths), initial=position, desc="indexing", unit="file")

        # Every stat first: the files whose stat changed (most of them then parsed and embedded) are
        # announced to ``prepare`` before the first of them is read.
        stat_results: list[os.stat_result | OSError] = []
        for path in paths:
            try:
                stat_results.append(path.stat())
            except OSError as exc:
                stat_results.append(exc)
        self._announce(paths, stat_results, stats)
        for position, path in enumerate(paths):
            if bar is not None:
                bar.update(1)
            key = str(path)
            stat_key = storable(key)  # a name that is not valid UTF-8 is kept escaped (SQLite stores UTF-8)
            try:
                st = stat_results[position]
                if isinstance(st, OSError):
                    raise st
                if not stat.S_ISREG(st.st_mode):  # a FIFO would block read_bytes() forever
                    self.skip(report, key, "not a regular file (a pipe, device or folder); nothing was read")
                    continue
                cached = stats.get(stat_key)
                data = None
                if cached is not None and _unchanged(cached, st):
                    content = cached[2]
                else:
                    over = _over_size(path, st.st_size)
                    if over is not None:  # decided from the size alone: a 4 GB file is never read
                        self.skip(report, key, over)
                        continue
                    working(position)
                    if _streamed(path, st.st_size):
                        content = f"{file_digest(path)}{path.suffix.lower()}"  # the loader reads it again, streaming
                    else:
                        data = path.read_bytes()
                        content = f"{hashlib.sha256(data).hexdigest()}{path.suffix.lower()}"
                    if now - max(st.st_mtime, st.st_ctime) > RACY_SECONDS:
                        fresh_stats.append((stat_key, st.st_size, st.st_mtime_ns, content, st.st_ctime_ns,
                                            st.st_ino))
            except OSError as exc:
                self.skip(report, key, f"cannot read file: {exc.strerror or exc}")
                continue
            status = parsed.get(content)
            if status is None or (status[0] == "skipped" and limit_changed(status[1])):  # over a limit since raised
                working(position)
                status = self.parse_file(path, content, data, st)
                if status[0] != "error":
                    parsed[content] = status
            if status[0] != "ok":
                self.skip(report, key, status[1] or "unreadable")
                continue
            files[key] = content
        if bar is not None:
            bar.update(1)
            bar.close()
        self.manifest.remember_stats(fresh_stats)
        return files

    def _announce(self, paths: Sequence[Path], stat_results: Sequence[os.stat_result | OSError],
                  stats: dict[str, Any]) -> None:
        """Tell the loaders now, and ``prepare`` at the first file to parse, what the files whose stat changed hold.

        The loaders start the worker process PDF and .docx files need. ``prepare`` waits for the first
        file to parse, so the splitter import, a first build's longest wait, starts before it.
        """
        changed = [(path, st) for path, st in zip(paths, stat_results, strict=True) if isinstance(st, os.stat_result)
                   and stat.S_ISREG(st.st_mode) and not _unchanged(stats.get(storable(str(path))), st)]
        self._pending_bytes = sum(st.st_size for _path, st in changed) if self.prepare is not None else 0
        if changed:
            from akasha.loaders import prepare_loaders

            prepare_loaders({path.suffix for path, _st in changed})

    def skip(self, report: Any, path: str, reason: str) -> None:
        """Count a skipped file in ``report``; warn once per (file, reason) in this index's life."""
        report.skipped += 1
        report.skipped_files.append((path, reason))
        if (path, reason) not in self._warned:
            self._warned.add((path, reason))
            log.warning("skipping %s: %s", shown(path), reason)

    def parse_file(self, path: Path, content: str, data: bytes | None,
                   st: os.stat_result | None = None) -> ParseStatus:
        """Load and chunk one file, storing the result under its content key.

        ``st``: the file's stat when ``content`` was computed. A streamed file (:data:`STREAM_BYTES`) whose
        stat changed meanwhile may not be the version ``content`` names: nothing is stored, it is read again.
        """
        from akasha.loaders import load_file

        if self._pending_bytes and self.prepare is not None:  # hand ``prepare`` the announced bytes, once
            size, self._pending_bytes = self._pending_bytes, 0
            self.prepare(size)
        changed = "error", "the file changed while it was read; it is read again on the next sync"
        streamed = False
        try:
            st = st or path.stat()
            streamed = data is None and _streamed(path, st.st_size)
            if data is None and not streamed:
                data = path.read_bytes()
            pieces = self.split(load_file(path, data))
            if streamed and not _unchanged_now(path, st):
                return changed
        except LoaderError as exc:
            if getattr(exc, "transient", False):  # the machine's fault, not the file's: retried next time
                return "error", exc.reason
            if streamed and st is not None and not _unchanged_now(path, st):
                return changed  # the failure may be another version's: nothing remembered
            self.manifest.store_parsed(content, self.settings_key, [], "skipped", exc.reason)
            return "skipped", exc.reason
        except Exception as exc:  # a loader bug or a transient error (MemoryError ...): skip now, retry next time
            log.debug("loader failed on %s", path, exc_info=True)
            return "error", f"{type(exc).__name__}: {exc}"
        # The path is not part of a file version's chunks: the index adds it per path.
        return self._store(content, pieces, drop=("source", "chunk_id"))

    def parse_document(self, key: str, content: str, document: Document) -> ParseStatus:
        """Chunk one in-memory document (id ``key``) and store its chunks under ``content``."""
        pieces = self.split([Document(document.text, dict(document.metadata), id=key)])
        return self._store(content, pieces, drop=("chunk_id",))

    def _store(self, content: str, pieces: Sequence[Chunk], drop: tuple[str, ...]) -> ParseStatus:
        stored: list[StoredChunk] = []
        for piece in pieces:
            if not piece.text.strip():
                continue
            meta = dict(piece.metadata)
            for key in drop:
                drop_own(meta, key)
            # the text's hash is the cache key, whatever the metadata says (a document's own
            # content_hash stays under its name: akasha.metadata)
            text_hash = digest(piece.text)
            put_own(meta, "content_hash", text_hash)
            stored.append((len(stored), text_hash, piece.text, meta))
        if not stored:
            self.manifest.store_parsed(content, self.settings_key, [], "skipped", "no text")
            return "skipped", "no text"
        self.manifest.store_parsed(content, self.settings_key, stored)
        return "ok", None


__all__ = ["LONG_FILES", "RACY_SECONDS", "SourceReader", "digest"]
