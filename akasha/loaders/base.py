"""What every loader shares: reading a file's bytes safely and refusing empty text.

Every way a file can fail to be read (deleted since listed, permission denied, a FIFO or device that
would block forever, a broken or looping symlink) becomes a :class:`~akasha.errors.LoaderError` naming it.
"""

from __future__ import annotations

import errno
import os
import stat
from pathlib import Path
from typing import BinaryIO

from akasha.errors import LoaderError


def unreadable(path: Path, exc: OSError) -> LoaderError:
    """The LoaderError naming ``path`` and why reading it failed with ``exc``."""
    if isinstance(exc, FileNotFoundError):
        if os.path.islink(path):
            return LoaderError(path, "broken symlink: its target does not exist")
        return LoaderError(path, "file not found (deleted or moved since it was listed)")
    if isinstance(exc, PermissionError):
        return LoaderError(path, f"permission denied: {exc.strerror}")
    if exc.errno == errno.ELOOP:
        return LoaderError(path, "symlink loop: the link points back to itself")
    return LoaderError(path, f"cannot read file: {exc.strerror or exc}")


def file_size(path: Path) -> int:
    """The size in bytes of the regular file at ``path``; LoaderError (naming why) for anything else."""
    try:
        info = os.stat(path)
    except OSError as exc:
        raise unreadable(path, exc) from None
    if not stat.S_ISREG(info.st_mode):
        kind = "directory" if stat.S_ISDIR(info.st_mode) else "FIFO, socket or device"
        raise LoaderError(path, f"not a regular file ({kind}); skipped")
    return info.st_size


def open_bytes(path: Path) -> BinaryIO:
    """The regular file at ``path`` opened for reading in binary (a loader that streams reads it a block at a time)."""
    file_size(path)
    try:
        return open(path, "rb")
    except OSError as exc:
        raise unreadable(path, exc) from None


def read_bytes(path: Path, data: bytes | None = None) -> bytes:
    """Return ``data`` if given, else the bytes of the regular file at ``path``."""
    if data is not None:
        return bytes(data)
    with open_bytes(path) as handle:
        try:
            return handle.read()
        except OSError as exc:
            raise unreadable(path, exc) from None


def require_text(path: Path, text: str, what: str = "file") -> str:
    """Return ``text`` unless it is empty or whitespace only (then ``LoaderError("empty ...")``)."""
    if not text or text.isspace():
        raise LoaderError(path, f"empty {what}: no text to index")
    return text
