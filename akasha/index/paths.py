"""Where the index lives: the default cache folder, and the error a cache folder that cannot be used raises."""

from __future__ import annotations

import os
import sys
from pathlib import Path

MEMORY = ":memory:"


def default_cache_dir() -> Path:
    """``$AKASHA_CACHE_DIR`` (read at call time), else the platform's user cache folder + ``akasha``: Linux
    ``$XDG_CACHE_HOME/akasha``, macOS ``~/Library/Caches/akasha``, Windows ``%LOCALAPPDATA%\\akasha\\Cache``."""
    configured = os.environ.get("AKASHA_CACHE_DIR")
    if configured:
        return Path(configured).expanduser()
    if sys.platform == "win32":
        base = os.environ.get("LOCALAPPDATA") or str(Path.home() / "AppData" / "Local")
        return Path(base) / "akasha" / "Cache"
    if sys.platform == "darwin":
        return Path.home() / "Library" / "Caches" / "akasha"
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "akasha"


def storage_error(folder: object, exc: BaseException) -> Exception:
    """An :class:`~akasha.errors.IndexWriteError` naming the cache ``folder`` and what to do about ``exc``,
    the OSError or ``sqlite3`` error of a write to the cache (read-only, disk full) or a damaged database."""
    import errno

    from akasha.errors import IndexWriteError

    text = getattr(exc, "strerror", None) or str(exc) or type(exc).__name__
    code = getattr(exc, "errno", None)
    lowered = text.lower()
    verb, after = "cannot write", " The index already stored there was not changed."
    if code == errno.ENOSPC or "full" in lowered:
        hint = "free some disk space"
    elif code in (errno.EROFS, errno.EACCES, errno.EPERM) or "readonly" in lowered or "read-only" in lowered:
        hint = "make the folder writable"
    elif "not a database" in lowered or "malformed" in lowered or "corrupt" in lowered:
        verb, after = "cannot read", ""
        hint = "delete its index.sqlite3 (or the folder) to rebuild the index from the files"
    else:
        verb, after = "cannot use", ""
        hint = "check the folder (delete it to rebuild the index from the files)"
    error = IndexWriteError(
        f"{verb} the index cache folder {folder} ({text}); {hint}, or pass cache_dir= another writable "
        f"folder (or ':memory:' to keep the index in memory).{after}"
    )
    error.cache_dir = str(folder)
    return error
