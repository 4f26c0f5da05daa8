"""How a file's path is written where it must be text: stored keys and log lines.

Python decodes a POSIX file name that is not UTF-8 with surrogate escapes, which no UTF-8 store can
hold and a log handler may fail to write. :func:`storable` keeps such bytes as backslash escapes
(``\\xff``) wherever akasha stores a path; :func:`shown` also escapes control characters, so a
newline in a file name cannot forge a log line.
"""

from __future__ import annotations


def storable(path: str) -> str:
    """``path`` as valid UTF-8: a file name that is not (surrogate escapes) keeps its bytes as ``\\xff``."""
    try:
        path.encode("utf-8")
        return path
    except UnicodeEncodeError:
        return path.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")


def shown(path: object) -> str:
    """A path safe to log: undecodable bytes (see :func:`storable`) and control characters escaped."""
    text = storable(str(path))
    return text if text.isprintable() else repr(text)[1:-1]


__all__ = ["shown", "storable"]
